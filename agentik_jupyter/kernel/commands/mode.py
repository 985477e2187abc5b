"""`%agent mode [ask|agent|auto|plan]`: the session's mode, shown or set (and saved with the session)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentik_jupyter.errors import OptionsError
from agentik_jupyter.tools.modes import label, parse_mode

if TYPE_CHECKING:
    from agentik_jupyter.kernel.agent import KernelAgent

MEANINGS = {
    "ask": "the agent reads and answers; nothing runs and nothing is edited",
    "agent": "code and MCP calls ask on their cards; edits are diffs to accept",
    "auto": "code runs without a card when Rewind can take back all it changes; the rest asks, saying why",
    "plan": "the agent proposes a plan with the reading tools; nothing runs until you run the plan",
}


async def mode_command(agent: KernelAgent, args: list[str]) -> None:
    if len(args) > 1:
        print("Usage: %agent mode [ask|agent|auto|plan]")
        return
    if not args:
        mode = (await agent.next_session()).effective_mode
        print(f"Mode: {label(mode)} ({MEANINGS[mode]}). Change it with %agent mode ask|agent|auto|plan.")
        return
    try:
        mode = parse_mode(args[0])
    except OptionsError as exc:
        print(f"agentik: {exc}")
        return
    await agent.set_mode(mode)
    print(f"Mode: {label(mode)} ({MEANINGS[mode]}).")
