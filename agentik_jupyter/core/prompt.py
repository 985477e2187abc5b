"""What the model reads besides the history: a system prompt fixed for a session, and a context note per question.

Providers cache the longest identical prefix of a request, in the order tools -> system ->
messages. So the system prompt holds only what stays put for a session (the built-in prompt,
the user's and the project's standing instructions, the notebook's name), and what changes from
turn to turn (the asking cell, the execution count, the variables, what changed since the last
question) travels as a note with the new question, after the history.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import PurePath

from agentik_jupyter.tools.modes import PROMPTS
from agentik_jupyter.types import AgentContext, VariableSummary

BASE_SYSTEM_PROMPT = """\
You are agentik, an assistant that lives inside the user's Jupyter kernel.
You help a data scientist understand and work with the data in their notebook.
Use the tools to look at real variables and DataFrames instead of guessing; summarise
what you find. Code you want to run goes through the run_code tool, which asks the user
first; if the user declines, do not insist. Keep answers short and use Markdown.
Each question of the user may start with a note in [brackets] on where in the notebook it was
asked and what changed in the kernel since the question before; it is context, not the question."""

MAX_CONTEXT_VARIABLES = 40
NOTE_HEADING = "[Notebook context for this question]"


def build_system_prompt(context: AgentContext | None, environ: Mapping[str, str] | None = None) -> str:
    """The built-in prompt, the user's and the project's standing instructions, the notebook's
    name and the mode: nothing that changes from one question to the next (that is `context_note`)."""
    env = os.environ if environ is None else environ
    parts = [BASE_SYSTEM_PROMPT]
    extra = (env.get("AGENTIK_SYSTEM_PROMPT") or "").strip()
    if extra:
        parts.append("The user's standing instructions:\n" + extra)
    if context is not None and context.instructions:
        parts.append("The project's instructions (its AGENTS.md, trusted by the user):\n" + context.instructions)
    if context is not None:
        name = PurePath(context.notebook_path).name if context.notebook_path else "unknown (plain IPython)"
        parts.append(f"Notebook: {name}")  # the name, not the user's folders
    if context is not None and context.mode in PROMPTS:  # (Agent adds nothing: its prompt stays as it was)
        parts.append(PROMPTS[context.mode])
    return "\n\n".join(parts)


def _line(v: VariableSummary) -> str:
    return f"- {v.name}: {v.type}" + (f" {v.shape}" if v.shape else "")


def _variable_lines(variables: list[VariableSummary], limit: int = MAX_CONTEXT_VARIABLES) -> list[str]:
    lines = [_line(v) for v in variables[:limit]]
    more = len(variables) - limit
    if more > 0:
        lines.append(f"- … and {more} more (use list_variables)")
    return lines


def context_note(context: AgentContext | None, previous: AgentContext | None = None) -> str | None:
    """Where this question was asked and what is in the kernel: all variables the first time,
    then only those made, changed or deleted since ``previous`` (the last question's context)."""
    if context is None:
        return None
    where: list[str] = [NOTE_HEADING]
    if context.cell_id:
        where.append(f"Asking cell: {context.cell_id}")
    if context.execution_count is not None:
        where.append(f"Execution count: {context.execution_count}")
    if previous is None:
        if context.variables:
            where.append("Variables in the kernel:\n" + "\n".join(_variable_lines(context.variables)))
        else:
            where.append("Variables in the kernel: none yet")
        return "\n".join(where)
    before = {v.name: v for v in previous.variables}
    now = {v.name: v for v in context.variables}
    made = [v for name, v in now.items() if name not in before]
    changed = [v for name, v in now.items() if name in before and before[name] != v]
    gone = [name for name in before if name not in now]
    if made:
        where.append("New variables since the last question:\n" + "\n".join(_variable_lines(made)))
    if changed:
        where.append("Changed since the last question:\n" + "\n".join(_variable_lines(changed)))
    if gone:
        shown = ", ".join(gone[:MAX_CONTEXT_VARIABLES]) + (" …" if len(gone) > MAX_CONTEXT_VARIABLES else "")
        where.append(f"Deleted since the last question: {shown}")
    if not (made or changed or gone):
        where.append("Variables: unchanged since the last question")
    return "\n".join(where)
