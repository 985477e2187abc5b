"""The `%agent` subcommands. None of them ever prints the API key."""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from agentik_jupyter.kernel.agent import KernelAgent, get_agent
from agentik_jupyter.kernel.commands.compact import compact_command
from agentik_jupyter.kernel.commands.fix import fix_command
from agentik_jupyter.kernel.commands.mcp import mcp_command
from agentik_jupyter.kernel.commands.mode import mode_command
from agentik_jupyter.kernel.commands.panel import panel_command
from agentik_jupyter.kernel.commands.rewind import rewind_command
from agentik_jupyter.kernel.commands.sessions import (
    delete_command,
    new_command,
    rename_command,
    resume_command,
    sessions_command,
    status_command,
    stop_command,
)
from agentik_jupyter.kernel.commands.settings import config_command
from agentik_jupyter.kernel.commands.tools import policy_command, tools_command
from agentik_jupyter.kernel.commands.usage import usage_command
from agentik_jupyter.notebook.export import export_command
from agentik_jupyter.notebook.instructions import instructions_command

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

USAGE = """\
Usage: %agent <command>
  status            provider, model, session and sessions file
  sessions          the notebook's sessions (title, updated, messages)
  resume [ID]       continue a session (the latest when no ID)
  new               start a new session
  rename TITLE      rename the current session
  delete ID         delete a session and its messages (an unambiguous id prefix will do)
  mode [ask|agent|auto|plan]
                    the session's mode (saved with it): Ask reads only, Agent asks on cards,
                    Auto runs what Rewind can undo, Plan proposes steps to run
  tools             the tools the model can call, with their approval policy
  policy            the tools allowed "always" in this session
  policy TOOL auto|ask|deny
                    change a tool's approval policy for this kernel (ask also revokes "always")
  policy --reset    revoke every "always" of this session
  mcp [trust|untrust [PATH]]
                    the MCP config, whether it is trusted; trust or untrust it
  config            the LLM_* and AGENTIK_* settings (the key only as set / not set)
  panel             show the chat panel
  stop [--all]      stop the running turn (--all: and the queued ones)
  compact           summarise the session's earlier turns into one message (the newest stays verbatim)
  usage             the session's tokens: in, from the provider's cache, out, and the cost
  rewind [N] [--preview]
                    take back the latest turn (N: turns N and later): variables and conversation
  instructions [trust|untrust]
                    the project's AGENTS.md, and whether it is added to the prompt
  fix [CELL_ID]     ask the agent to fix the last failed cell (or that cell)
  export [PATH]     the code the agent ran in this session, as a new notebook"""


async def run_command(shell: InteractiveShell, line: str) -> None:
    """Run one `%agent` line; an unknown command prints the usage."""
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    command, args = (words[0].lower(), words[1:]) if words else ("help", [])
    handler = _COMMANDS.get(command)
    if handler is None:
        if command not in {"help", "-h", "--help"}:
            print(f"agentik: unknown command {command!r}.")
        print(USAGE)
        return
    await handler(get_agent(shell), args)


_COMMANDS: dict[str, Callable[[KernelAgent, list[str]], Awaitable[str | None]]] = {
    "status": status_command,
    "sessions": sessions_command,
    "resume": resume_command,
    "new": new_command,
    "rename": rename_command,
    "delete": delete_command,
    "mode": mode_command,
    "tools": tools_command,
    "policy": policy_command,
    "config": config_command,
    "panel": panel_command,
    "stop": stop_command,
    "usage": usage_command,
    "compact": compact_command,
    "rewind": rewind_command,
    "mcp": mcp_command,
    "export": export_command,
    "fix": fix_command,
    "instructions": instructions_command,
}
