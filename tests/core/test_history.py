"""A long session resumed a page at a time: the latest whole turns first, then `load_older`
puts the page before them in front, never splitting a turn and never showing a row twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentik_jupyter.core.history import HISTORY_PAGE, UNFINISHED
from agentik_jupyter.core.session import Session
from agentik_jupyter.persistence import AsyncSessionDB, SessionDB
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import AssistantMessage, ToolCall, ToolCallRecord, ToolResult, ToolResultRecord, UserMessage

ROWS_PER_TURN = 5  # question, asking assistant, tool call, tool result, answer


def write_long_session(path: Path, turns: int) -> str:
    """`turns` tool-using turns (5 audit rows each) and a last short turn (2 rows), so the
    row-count page boundaries fall inside turns."""
    with SessionDB(path) as db:
        conv = db.create_conversation("Long").id
        for i in range(turns):
            turn = db.begin_turn(conv, UserMessage(content=f"Question {i}"))
            call = ToolCall(id=f"call_{i}", name="lookup", args={"n": i})
            db.append(conv, turn, AssistantMessage(tool_calls=[call]))
            db.append(conv, turn, ToolCallRecord(call=call))
            db.append(conv, turn, ToolResultRecord(result=ToolResult(tool_call_id=call.id, name="lookup", result=i)))
            db.append(conv, turn, AssistantMessage(content=f"Answer {i}"))
        turn = db.begin_turn(conv, UserMessage(content="Last question"))
        db.append(conv, turn, AssistantMessage(content="Last answer"))
        return conv


async def resumed(path: Path, steps: list[Step] | None = None) -> tuple[Session, AsyncSessionDB]:
    db = await AsyncSessionDB.open(path)
    session = Session(ScriptedTransport(steps or []), ToolRegistry(), db=db)
    await session.resume()
    return session, db


def questions(session: Session) -> list[str]:
    return [m.content for m in session.chat_store.messages if m.role == "user"]


def test_whole_turn_pages_start_at_a_turns_question(tmp_path: Path) -> None:
    path = tmp_path / "pages.agentik.db"
    conv = write_long_session(path, 50)  # 252 rows
    with SessionDB(path) as db:
        cut = db.audit_log(conv, limit=HISTORY_PAGE)
        assert cut.entries[0].record.kind != "user"  # a plain page starts mid-turn
        page = db.audit_log(conv, limit=HISTORY_PAGE, whole_turns=True)
        assert page.entries[0].record.kind == "user" and len(page.entries) == 202
        assert [e.seq for e in page.entries] == list(range(51, 253))
        older = db.audit_log(conv, limit=HISTORY_PAGE, before_seq=page.next_before_seq, whole_turns=True)
        assert [e.seq for e in older.entries] == list(range(1, 51)) and older.next_before_seq is None


async def test_load_older_prepends_whole_turns_once(tmp_path: Path) -> None:
    path = tmp_path / "long.agentik.db"
    write_long_session(path, 50)
    session, db = await resumed(path)
    assert session.has_older
    first = questions(session)
    assert first[0] == "Question 10" and first[-1] == "Last question"
    added = await session.load_older()
    assert added == 10 * 4  # user, asking assistant, tool, answer per turn
    assert questions(session) == [f"Question {i}" for i in range(50)] + ["Last question"]
    assert not session.has_older and await session.load_older() == 0
    ids = [m.id for m in session.chat_store.messages]
    assert len(ids) == len(set(ids))
    assert not [m for m in session.chat_store.messages if m.error == UNFINISHED]  # no turn cut in two
    results = [m.tool_result.tool_call_id for m in session.chat_store.messages if m.tool_result]
    assert results == [f"call_{i}" for i in range(50)]
    await db.aclose()


async def test_two_clicks_load_one_page(tmp_path: Path) -> None:
    path = tmp_path / "twice.agentik.db"
    write_long_session(path, 100)  # 502 rows: three pages
    session, db = await resumed(path)
    shown = len(session.chat_store.messages)
    counts = await asyncio.gather(session.load_older(), session.load_older())
    assert sorted(counts)[0] == 0 and sorted(counts)[1] > 0
    assert len(session.chat_store.messages) == shown + max(counts)
    assert session.has_older
    await db.aclose()


async def test_a_new_turn_stays_last_and_older_pages_go_in_front(tmp_path: Path) -> None:
    path = tmp_path / "grow.agentik.db"
    write_long_session(path, 50)
    session, db = await resumed(path, [Step.say("Fresh answer")])
    await session.send("Fresh question")
    await session.load_older()
    assert questions(session)[0] == "Question 0" and questions(session)[-2:] == ["Last question", "Fresh question"]
    await db.aclose()


async def test_switching_conversation_while_loading_drops_the_page(tmp_path: Path) -> None:
    path = tmp_path / "switch.agentik.db"
    write_long_session(path, 50)
    session, db = await resumed(path)
    loading = asyncio.ensure_future(session.load_older())
    await asyncio.sleep(0)
    session.new_conversation()
    assert await loading == 0
    assert session.chat_store.messages == () and not session.has_older
    await db.aclose()


@pytest.mark.parametrize("turns", [0, 3])
async def test_a_short_session_has_nothing_older(tmp_path: Path, turns: int) -> None:
    path = tmp_path / "short.agentik.db"
    write_long_session(path, turns)
    session, db = await resumed(path)
    assert not session.has_older and await session.load_older() == 0
    await db.aclose()
