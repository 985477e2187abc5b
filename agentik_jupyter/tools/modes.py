"""The four modes (Ask, Agent, Auto, Plan): their names, the default, the tools each offers, and Auto's rule.

A mode is the user's setting of a session (saved in the sessions file, never read from the
notebook or project files): a shared notebook cannot switch its reader into Auto. The approval
gate asks the mode first, then the tool's policy. Auto's one rule, `rewind_blockers`: a call runs
without a card when Rewind can take back everything it can change; otherwise the card says what
it can't.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import cast

from agentik_jupyter.errors import OptionsError
from agentik_jupyter.types import AgentMode, ToolCall, ToolDefinition

MODE_ENV = "AGENTIK_MODE"
MODES: tuple[AgentMode, ...] = ("ask", "agent", "auto", "plan")
DEFAULT_MODE: AgentMode = "agent"
CODE_TOOL = "run_code"
PLAN_TOOL = "propose_plan"
STEP_TOOL = "plan_step"
READING_TOOLS = frozenset(
    {"list_variables", "inspect_variable", "describe_dataframe", "get_cell_history", "read_notebook"}
)
"""The built-in tools that only read: all Ask offers (with MCP tools that declare readOnlyHint)."""
LABELS: dict[str, str] = {"ask": "Ask", "agent": "Agent", "auto": "Auto", "plan": "Plan"}


def parse_mode(name: str, where: str = "mode") -> AgentMode:
    """`name` as a mode (any case); anything else is a one-line error listing the four."""
    value = name.strip().lower()
    if value not in MODES:
        raise OptionsError(f"unknown {where} {name!r}: use ask, agent, auto or plan")
    return cast(AgentMode, value)


def default_mode() -> AgentMode:
    """`AGENTIK_MODE`, else Agent; an unknown value is an error (a turn says so and does not start)."""
    raw = os.environ.get(MODE_ENV, "").strip()
    return parse_mode(raw, MODE_ENV) if raw else DEFAULT_MODE


def label(mode: str | None) -> str:
    """The one word the user reads: Ask, Agent, Auto or Plan."""
    return LABELS.get(mode or DEFAULT_MODE, str(mode))


def reads_only(definition: ToolDefinition) -> bool:
    """A tool Ask and Plan offer: a built-in reader, or an MCP tool whose server says it only reads."""
    if definition.source == "builtin":
        return definition.name in READING_TOOLS
    return definition.source == "mcp" and definition.read_only


def offered(definitions: Iterable[ToolDefinition], mode: AgentMode, plan_running: bool = False) -> list[ToolDefinition]:
    """The tools a request offers in `mode`: Ask the readers; Plan the readers and propose_plan; Agent
    and Auto everything else (plan_step only while a plan runs)."""
    found = []
    for definition in definitions:
        name = definition.name
        if definition.source == "builtin" and name == PLAN_TOOL:
            keep = mode == "plan"
        elif definition.source == "builtin" and name == STEP_TOOL:
            keep = plan_running and mode in ("agent", "auto")
        elif mode in ("ask", "plan"):
            keep = reads_only(definition)
        else:
            keep = True
        if keep:
            found.append(definition)
    return found


def not_offered(name: str, mode: AgentMode, caller: str | None = None) -> str:
    """What the model is told when it calls a tool the mode did not offer; `caller`: an outside
    client, which has no plan of ours to propose and acts only once the user switches the mode."""
    if caller is not None and mode in ("ask", "plan"):
        return (
            f"'{name}' is not available: the notebook's session is in {label(mode)} mode, where nothing runs "
            "and nothing is edited. Reading tools still work; ask the user to switch the session to Agent or "
            "Auto (the picker beside Send, or `%agent mode agent`) to let you act."
        )
    if mode == "ask":
        return (
            f"'{name}' is not available in Ask mode: nothing runs and nothing is edited. "
            "Show the code in your answer for the user to run themselves."
        )
    if mode == "plan":
        return f"'{name}' is not available until the user runs the plan: call {PLAN_TOOL} with the steps first."
    return f"'{name}' is not available in {label(mode)} mode."


def rewind_blockers(
    call: ToolCall, definition: ToolDefinition, notes_for: Callable[[ToolCall], list[str]] | None
) -> list[str]:
    """Auto's rule, "can Rewind take back everything this call can change?": what it can't (empty: yes).

    Only run_code is read before it runs (`notes_for`: tools/code_effects.py and the rewind budget);
    any other tool that asks (MCP, the user's own, run_cells) acts where no checkpoint reaches."""
    if call.name == CODE_TOOL and definition.source == "builtin":
        if notes_for is None or not isinstance(call.args.get("code"), str):
            return ["its code could not be read before it runs"]
        return notes_for(call)
    if definition.source == "mcp":
        return [f"calls the MCP tool {call.name}, which acts outside the kernel"]
    return [f"calls {call.name}, which acts where no checkpoint reaches"]


PROMPTS: dict[str, str] = {
    "ask": (
        "Mode: Ask. You can only read (variables, frames, cell history, the notebook): you cannot run code "
        "or edit cells. When the answer needs code, show it in a ```python block for the user to run."
    ),
    "auto": (
        "Mode: Auto. run_code runs without asking when everything the code changes is inside the kernel "
        "(Rewind takes it back); code that writes files, uses the network, runs shell commands or changes a "
        "large object in place still asks the user first."
    ),
    "plan": (
        f"Mode: Plan. First look at what you need with the reading tools, then call {PLAN_TOOL} with the "
        "steps you will take, short and in order. Nothing runs until the user runs the plan; when they do, "
        f"carry out the steps in order and report each one with {STEP_TOOL}."
    ),
}
"""What the system prompt adds in each mode (none in Agent: its prompt stays what it was)."""
