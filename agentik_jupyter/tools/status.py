"""What a running tool is waiting for, so the status line can say where to act.

A tool such as `edit_cell` shows its proposal elsewhere (a diff on another cell) and then waits
for the user. "Running edit_cell… 18 s" would not tell them that the turn waits for *them*, nor
where. The orchestrator puts a setter in place for each tool call (`noting`); the tool calls
`waiting_on("the diff on cell 3")` once its proposal is on screen and `waiting_on(None)` when the
user has answered. A leaf module: tools import it without importing the orchestrator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

WAITING_ON = " (waiting for you: "
"""Joins a tool's name and where the user must act in `AgentStore.active_tool`; ends with ')'."""

_setter: ContextVar[Callable[[str | None], None] | None] = ContextVar("agentik_tool_status", default=None)


@contextmanager
def noting(set_where: Callable[[str | None], None]) -> Iterator[None]:
    """While a tool call runs, `waiting_on` reaches `set_where` (the call's own task only)."""
    token = _setter.set(set_where)
    try:
        yield
    finally:
        _setter.reset(token)


def waiting_on(where: str | None) -> None:
    """Say where the user must act (None: they answered); nothing when no turn listens."""
    setter = _setter.get()
    if setter is not None:
        setter(where)


def label(tool: str, where: str | None) -> str:
    """The `active_tool` value for `tool`, waiting on `where` or not."""
    return tool if where is None else f"{tool}{WAITING_ON}{where})"


def split(active_tool: str) -> tuple[str, str | None]:
    """`label`'s inverse: the tool's name and where it waits (None when it does not)."""
    if WAITING_ON not in active_tool or not active_tool.endswith(")"):
        return active_tool, None
    tool, where = active_tool.split(WAITING_ON, 1)
    return tool, where[:-1]
