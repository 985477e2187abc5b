"""A failed turn as the spec has it: the question is in working memory from the turn's start,
so "try again" reaches the model with it, and the error row is in the sessions file before
the Error event reaches anyone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agentik_jupyter.core.session import Session
from agentik_jupyter.errors import ServerError
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import ErrorEvent, Event

OUTAGE = "The provider had an internal error (500)."


def error_rows(path: Path) -> list[tuple[str, str]]:
    """The error rows of the audit log, read with the standard library (a reader of the file)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT turn_id, payload_json FROM message WHERE role = 'error' ORDER BY seq").fetchall()
    finally:
        conn.close()


async def test_try_again_after_a_provider_error_reaches_the_model_with_the_question(tmp_path: Path) -> None:
    path = tmp_path / "retry.agentik.db"
    db = await AsyncSessionDB.open(path)
    transport = ScriptedTransport([Step.fail(ServerError(OUTAGE, status=500)), Step.say("The answer is 42.")])
    session = Session(transport, ToolRegistry(), db=db)
    failed = await session.send("What is the answer to everything?")
    assert failed.reason == "error"
    again = await session.send("try again")
    assert again.reason == "complete"
    sent = [(m.role, m.content) for m in transport.requests[1].messages]
    assert sent == [("user", "What is the answer to everything?"), ("user", "try again")]
    working = await db.working_memory(session.conversation_id)
    assert [(m.role, m.content) for m in working] == [*sent, ("assistant", "The answer is 42.")]
    await db.aclose()


async def test_a_temporary_session_keeps_the_failed_question_too() -> None:
    transport = ScriptedTransport([Step.fail(ServerError(OUTAGE, status=500)), Step.say("ok")])
    session = Session(transport, ToolRegistry(), temporary=True)
    await session.send("first question")
    await session.send("try again")
    assert [m.content for m in transport.requests[1].messages] == ["first question", "try again"]


async def test_the_error_row_is_written_before_the_error_event(tmp_path: Path) -> None:
    path = tmp_path / "order.agentik.db"
    db = await AsyncSessionDB.open(path)
    session = Session(
        ScriptedTransport([Step.say("fine"), Step.fail(ServerError(OUTAGE, status=500))]), ToolRegistry(), db=db
    )
    seen: list[tuple[str, int]] = []

    def on_event(event: Event) -> None:
        if event.type in ("error", "end"):
            seen.append((event.type, len(error_rows(path))))

    session.on_event(on_event)
    await session.send("one")
    assert seen == [("end", 0)]
    await session.send("two")
    assert seen[1:] == [("error", 1), ("end", 1)]  # the row was there when the event arrived
    [(turn, payload)] = error_rows(path)
    assert OUTAGE in payload and turn == session._turn_id
    await db.aclose()


async def test_a_turn_that_cannot_start_writes_its_error_before_the_event(tmp_path: Path) -> None:
    path = tmp_path / "setup.agentik.db"
    db = await AsyncSessionDB.open(path)
    session = Session(ScriptedTransport([Step.say("fine")]), ToolRegistry(), db=db)
    await session.send("one")
    rows_at_error: list[int] = []
    session.on_event(lambda e: rows_at_error.append(len(error_rows(path))) if isinstance(e, ErrorEvent) else None)

    async def broken() -> None:
        raise OSError("the notebook folder is gone")

    outcome = await session.send("two", prepare=broken)
    assert outcome.error_code == "setup" and rows_at_error == [1]
    await db.aclose()
