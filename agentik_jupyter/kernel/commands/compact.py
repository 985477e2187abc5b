"""`%agent compact`: summarise the session's earlier turns into one message now, keeping the newest verbatim."""

from __future__ import annotations

from typing import Any


async def compact_command(agent: Any, args: list[str]) -> None:
    session = agent.session
    if session is None:
        print("Nothing to compact: no session yet.")
        return
    print(await session.compact())
