"""`%agent rewind [N] [--preview]`: take back the latest turn (or turns N and later) of the session."""

from __future__ import annotations

from typing import Any

from agentik_jupyter.core.rewind import RewindError
from agentik_jupyter.notebook.revert import plan, rewind

USAGE = "Usage: %agent rewind [N] [--preview]  (N: back to before turn N; --preview only shows what it would do)"


async def rewind_command(agent: Any, args: list[str]) -> None:
    preview = "--preview" in args
    rest = [a for a in args if a != "--preview"]
    number: int | None = None
    if len(rest) > 1 or (rest and not rest[0].isdigit()) or (rest and int(rest[0]) < 1):
        print(f"agentik: not rewound: {' '.join(rest)!r} is not a turn number.\n{USAGE}")
        return
    if rest:
        number = int(rest[0])
    session = agent.session_for()
    await agent.prepare(session)
    try:
        found = await plan(session, number, shown=preview)
        if not preview:
            found = await rewind(session, found)
    except RewindError as exc:
        print(f"agentik: not rewound: {exc}")
        return
    print("\n".join(found.lines(done=not preview)))
    if preview:
        print("Nothing changed yet: %agent rewind" + (f" {number}" if number else "") + " does it.")
