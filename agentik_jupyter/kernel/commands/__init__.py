"""The `%agent` subcommands. None of them ever prints the API key."""

from __future__ import annotations

import datetime as dt
import os
import shlex
from typing import Any

from agentik_jupyter.ids import InvalidSessionIdError, is_session_id
from agentik_jupyter.kernel.commands.mcp import mcp_command

USAGE = """\
Usage: %agent <command>
  status            provider, model, session and sessions file
  sessions          the notebook's sessions (title, updated, messages)
  resume [ID]       continue a session (the latest when no ID)
  new               start a new session
  rename TITLE      rename the current session
  delete ID         delete a session and its messages (an unambiguous id prefix will do)
  tools             the tools the model can call, with their approval policy
  policy            the tools allowed "always" in this conversation
  policy TOOL auto|ask|deny
                    change a tool's approval policy for this kernel (ask also revokes "always")
  policy --reset    revoke every "always" of this conversation
  mcp [trust|untrust [PATH]]
                    the MCP config, whether it is trusted; trust or untrust it
  config            the LLM_* and AGENTIK_* settings (the key only as set / not set)
  panel             show the chat panel
  stop [--all]      stop the running turn (--all: and the queued ones)
  instructions [trust|untrust]
                    the project's AGENTS.md, and whether it is added to the prompt
  fix [CELL_ID]     ask the agent to fix the last failed cell (or that cell)
  export [PATH]     the code the agent ran in this session, as a new notebook"""

SETTINGS = [
    "LLM_PROVIDER", "LLM_MODEL", "LLM_BASE_URL", "LLM_STREAM_USAGE", "AGENTIK_SYSTEM_PROMPT",
    "AGENTIK_WAIT", "AGENTIK_APPROVE", "AGENTIK_APPROVAL_TIMEOUT", "AGENTIK_DB_PATH",
    "AGENTIK_CONTEXT_TOKENS", "AGENTIK_MCP_CONFIG", "AGENTIK_TRANSPORT",
]


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


async def run_command(shell: Any, line: str) -> None:
    from agentik_jupyter.kernel.agent import get_agent

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


async def _status(agent: Any, args: list[str]) -> None:
    from agentik_jupyter.providers.config import load_config
    from agentik_jupyter.errors import ConfigurationError
    from agentik_jupyter.security.scrub import scrub

    try:
        config = load_config()
        print(f"provider: {config.provider}\nmodel:    {config.model}\nendpoint: {scrub(config.shown_url)}")
    except ConfigurationError as exc:
        print(f"provider: not configured ({exc.message})")
    session = agent.session
    if session is not None and session.conversation_id:
        print(f"session:  {session.conversation_id} {session.title or ''}".rstrip())
    elif session is not None and session.temporary:
        print("session:  temporary (not saved)")
    else:
        print("session:  none yet (the next %%agent cell starts one)")
    print(agent.location.describe())
    found = agent.instructions.current()
    if found is not None:
        print(found.describe())
    if session is not None and session.busy:
        print(f"status:   {session.agent_store.status} (a turn is running; %agent stop stops it)")


async def _sessions(agent: Any, args: list[str]) -> None:
    db = await agent.open_db()
    rows = await db.list_conversations()
    if not rows:
        print(f"No sessions yet in {db.path}.")
        return
    current = agent.session.conversation_id if agent.session else None
    print(f"{'':2}{'id':<22} {'updated':<16} {'msgs':>4}  title")
    for info in rows:
        mark = "* " if info.id == current else "  "
        print(f"{mark}{info.id:<22} {_when(info.updated_at):<16} {info.message_count:>4}  {info.title or ''}")


async def _resume(agent: Any, args: list[str]) -> None:
    if args and not is_session_id(args[0]):
        print(f"Not resumed: {InvalidSessionIdError(args[0])}.")
        return
    session = agent.session_for()
    await agent.prepare(session)
    wanted = await _full_id(session.db, args[0]) if args else None
    if args and wanted is None:
        print(f"No session {args[0]!r}; see %agent sessions.")
        return
    info = await session.resume(wanted)
    if info is None:
        print("No session to resume; the next %%agent cell starts one.")
        return
    print(f"Resumed {info.id} {info.title or ''} ({info.message_count} messages).")


async def _full_id(db: Any, prefix: str) -> str | None:
    """An exact id, or the one session whose id starts with `prefix`."""
    matches = [c.id for c in await db.list_conversations(limit=1000) if c.id.startswith(prefix)]
    if prefix in matches:
        return prefix
    return matches[0] if len(matches) == 1 else None


async def _new(agent: Any, args: list[str]) -> None:
    session = agent.session_for()
    await agent.prepare(session, new=True)
    print("New session: the next %%agent cell starts it.")


async def _rename(agent: Any, args: list[str]) -> None:
    session = agent.session
    if session is None or not session.conversation_id or session.db is None:
        print("No current session to rename.")
        return
    title = " ".join(args).strip() or None
    info = await session.db.rename_conversation(session.conversation_id, title)
    session.title = info.title
    print(f"Renamed {info.id} to {info.title!r}.")


async def _delete(agent: Any, args: list[str]) -> None:
    if not args:
        print("Usage: %agent delete ID")
        return
    db = await agent.open_db()
    wanted = await _full_id(db, args[0])
    if wanted is not None and await db.delete_conversation(wanted):
        if agent.session is not None and agent.session.conversation_id == wanted:
            agent.session.new_conversation()
        print(f"Deleted session {wanted}.")
    else:
        print(f"No session {args[0]!r} (or the prefix matches several); see %agent sessions.")


async def _tools(agent: Any, args: list[str]) -> None:
    from agentik_jupyter.kernel.tools_table import show_tools

    await agent.ensure_mcp()
    show_tools(agent.registry, agent.gate)  # a table that wraps between words, with the aligned text beside it
    if agent.mcp is not None:
        for status in agent.mcp.statuses():
            print(f"MCP {status.describe()}")


async def _policy(agent: Any, args: list[str]) -> None:
    if not args:
        allowed = sorted(agent.gate.always)
        print("Allowed always in this conversation: " + (", ".join(allowed) if allowed else "none"))
        return
    if args == ["--reset"]:
        agent.gate.forget()
        print("Every tool whose policy is ask asks again.")
        return
    if len(args) != 2 or args[1] not in {"auto", "ask", "deny"}:
        print("Usage: %agent policy [TOOL auto|ask|deny | --reset]")
        return
    try:
        agent.registry.set_policy(args[0], args[1])
    except KeyError as exc:
        print(f"agentik: {exc.args[0]}")
        return
    if args[1] == "ask":
        agent.gate.forget(args[0])
    print(f"{args[0]}: {args[1]}")


async def _config(agent: Any, args: list[str]) -> None:
    from agentik_jupyter.security.scrub import scrub
    from agentik_jupyter.security.urls import redact_urls

    key = "set" if os.environ.get("LLM_API_KEY") else "not set"
    print(f"{'LLM_API_KEY':<26} {key}")
    for name in SETTINGS:
        value = os.environ.get(name)
        print(f"{name:<26} {scrub(redact_urls(value)) if value is not None else '-'}")


async def _panel(agent: Any, args: list[str]) -> None:
    from IPython.display import display

    from agentik_jupyter.widgets import ChatPanel

    session = agent.session_for()
    await agent.prepare(session)
    panel = ChatPanel(session)
    session.approval_presenter = panel.present_approval
    display(panel)


async def _stop(agent: Any, args: list[str]) -> None:
    session = agent.session
    if session is None:
        print("Nothing is running.")
    elif args == ["--all"]:
        count = session.stop_all()
        print(f"Stopped {count} turn(s)." if count else "Nothing is running.")
    else:
        stopped = session.stop()
        queued = f" {session.queued} queued turn(s) follow; %agent stop --all stops them." if session.queued else ""
        print(("Stopped." if stopped else "Nothing is running.") + queued)


async def _instructions(agent: Any, args: list[str]) -> None:
    from agentik_jupyter.notebook.instructions import instructions_command

    await instructions_command(agent, args)


async def _fix(agent: Any, args: list[str]) -> None:
    from agentik_jupyter.notebook.fix import fix_command

    await fix_command(agent, args)


async def _export(agent: Any, args: list[str]) -> None:
    from agentik_jupyter.notebook.export import export_command

    await export_command(agent, args)


_COMMANDS = {
    "status": _status,
    "sessions": _sessions,
    "resume": _resume,
    "new": _new,
    "rename": _rename,
    "delete": _delete,
    "tools": _tools,
    "policy": _policy,
    "config": _config,
    "panel": _panel,
    "stop": _stop,
    "mcp": mcp_command,
    "export": _export,
    "fix": _fix,
    "instructions": _instructions,
}
