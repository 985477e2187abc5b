"""A Session over a real SQLite file, driven by the scripted model."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agentik_jupyter.core.session import Session
from agentik_jupyter.errors import RateLimitError
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry, tool
from agentik_jupyter.types import (
    AgentContext,
    AssistantMessage,
    ErrorRecord,
    ToolCallRecord,
    ToolResultRecord,
    UserMessage,
)


def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value-of-{key}"

    @tool(registry=reg, policy="auto")
    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    return reg


async def open_session(path: Path, steps: list[Step]) -> tuple[Session, ScriptedTransport, AsyncSessionDB]:
    db = await AsyncSessionDB.open(path)
    transport = ScriptedTransport(steps)
    return Session(transport, registry(), db=db), transport, db


def kinds(db_path: Path) -> list[str]:
    with sqlite3.connect(db_path) as conn:
        return [r[0] for r in conn.execute("SELECT role FROM message ORDER BY seq")]


async def test_turns_are_written_and_resumed(tmp_path: Path) -> None:
    path = tmp_path / "nb.agentik.db"
    session, transport, db = await open_session(path, [Step.call("lookup", {"key": "a"}), Step.say("It is A.")])
    outcome = await session.send("what is a?", AgentContext(notebook_path="/x/nb.ipynb"))
    assert outcome.reason == "complete"
    assert kinds(path) == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    await db.aclose()

    resumed, transport2, db2 = await open_session(path, [Step.say("Still A.")])
    info = await resumed.resume()
    assert info is not None and info.title == "what is a?"
    assert [m.role for m in resumed.chat_store.messages] == ["user", "assistant", "tool", "assistant"]
    await resumed.send("and again?")
    sent = transport2.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[2].tool_result is not None and sent[2].tool_result.result == "value-of-a"
    await db2.aclose()


async def test_a_failed_turns_question_reaches_the_model_on_the_next_turn(tmp_path: Path) -> None:
    path = tmp_path / "f.agentik.db"
    session, transport, db = await open_session(
        path,
        [Step.say("first"), Step.fail(RateLimitError("Rate limited (429): slow down", status=429)), Step.say("ok")],
    )
    await session.send("one")
    failed = await session.send("two")
    assert failed.reason == "error" and session.chat_store.error == "Rate limited (429): slow down"
    assert session.agent_store.status == "error"
    await session.send("three")
    assert session.chat_store.error is None and session.agent_store.status == "idle"
    # the question entered working memory when its turn started (the spec), so a retry has it
    assert [m.content for m in transport.requests[2].messages] == ["one", "first", "two", "three"]
    page = await db.audit_log(session.conversation_id)
    records = [e.record for e in page.entries]
    assert [r.kind for r in records] == ["user", "assistant", "user", "error", "user", "assistant"]
    assert isinstance(records[3], ErrorRecord) and records[3].code == "rate_limit"
    await db.aclose()
    resumed, _, db2 = await open_session(path, [])
    await resumed.resume()
    errors = [m.error for m in resumed.chat_store.messages if m.error]
    assert errors == ["Rate limited (429): slow down"]
    await db2.aclose()


async def test_stop_mid_tool_records_interrupt_and_pairs(tmp_path: Path) -> None:
    path = tmp_path / "s.agentik.db"
    session, transport, db = await open_session(path, [Step.call("slow", text="Looking. "), Step.say("after")])
    task = session.start_turn("go")
    for _ in range(300):
        if session.agent_store.active_tool == "slow":
            break
        await asyncio.sleep(0.01)
    assert session.stop() is True
    outcome = await task
    assert outcome.reason == "interrupted" and not session.busy
    assert session.agent_store.status == "idle" and session.chat_store.loading is False
    records = [e.record for e in (await db.audit_log(session.conversation_id)).entries]
    assert isinstance(records[-1], ErrorRecord) and records[-1].code == "interrupted"
    assert any(isinstance(r, ToolResultRecord) and r.result.error == "Interrupted by the user." for r in records)
    await session.send("next")
    sent = transport.requests[-1].messages
    roles = [m.role for m in sent]
    assert roles == ["user", "assistant", "tool", "user"]  # the interrupted pair is kept, paired
    await db.aclose()


async def test_empty_input_fails_cleanly(tmp_path: Path) -> None:
    session, transport, db = await open_session(tmp_path / "e.agentik.db", [Step.say("hi")])
    events: list[str] = []
    session.on_event(lambda e: events.append(e.type))
    outcome = await session.send("   \n")
    assert outcome.reason == "error" and "Empty message" in (session.chat_store.error or "")
    assert events == ["error", "end"] and transport.requests == []
    await session.send("hello")
    assert session.chat_store.messages[-1].content == "hi"
    await db.aclose()


async def test_temporary_session_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.agentik.db"
    db = await AsyncSessionDB.open(path)
    transport = ScriptedTransport([Step.say("a"), Step.say("b")])
    session = Session(transport, registry(), db=db, temporary=True)
    await session.send("q1")
    await session.send("q2")
    assert [m.content for m in transport.requests[1].messages] == ["q1", "a", "q2"]
    assert kinds(path) == []
    await db.aclose()


async def test_turns_started_while_busy_queue_in_order(tmp_path: Path) -> None:
    steps = [Step.say("x" * 100, chunk_size=1, delay=0.005), Step.say("b"), Step.say("c")]
    session, transport, db = await open_session(tmp_path / "b.agentik.db", steps)
    first = session.start_turn("one")
    second = session.start_turn("two")
    third = session.start_turn("three")
    await asyncio.sleep(0.05)
    assert session.busy and session.queued == 2
    assert session.ahead_of(second) == 1 and session.ahead_of(third) == 2
    outcomes = await asyncio.gather(first, second, third)
    assert [o.reason for o in outcomes] == ["complete"] * 3
    assert [m.content for m in transport.requests[2].messages] == ["one", "x" * 100, "two", "b", "three"]
    await db.aclose()


async def test_a_queued_turn_can_be_removed_and_stop_all_empties_the_queue(tmp_path: Path) -> None:
    steps = [Step.say("x" * 400, chunk_size=1, delay=0.005), Step.say("c"), Step.say("d")]
    session, transport, db = await open_session(tmp_path / "q.agentik.db", steps)
    first = session.start_turn("one")
    second = session.start_turn("two")
    third = session.start_turn("three")
    await asyncio.sleep(0.05)
    assert session.cancel(second)
    assert session.ahead_of(third) == 1
    removed = await second
    assert removed.reason == "interrupted" and removed.error_code == "dequeued"
    assert session.stop_all() == 2
    outcomes = await asyncio.gather(first, third)
    assert [o.reason for o in outcomes] == ["interrupted", "interrupted"]
    assert len(transport.requests) == 1 and not session.busy and session.queued == 0
    await db.aclose()


async def test_new_conversation_and_switching(tmp_path: Path) -> None:
    session, _, db = await open_session(tmp_path / "n.agentik.db", [Step.say("a"), Step.say("b")])
    await session.send("first")
    first = session.conversation_id
    session.new_conversation()
    assert session.chat_store.messages == ()
    await session.send("second")
    assert session.conversation_id != first
    listed = await db.list_conversations()
    assert {c.id for c in listed} == {first, session.conversation_id}
    await session.resume(first)
    assert [m.content for m in session.chat_store.messages] == ["first", "a"]
    await db.aclose()


def test_user_message_record_has_context() -> None:
    rec = UserMessage(content="q", context=AgentContext(cell_id="c1"))
    assert rec.context is not None and rec.context.cell_id == "c1"
    assert (
        AssistantMessage(content="x").kind == "assistant" and ToolCallRecord.model_fields["kind"].default == "tool_call"
    )


async def test_resume_marks_turns_a_dead_kernel_left_unfinished(tmp_path: Path) -> None:
    from agentik_jupyter.core.history import UNFINISHED

    path = tmp_path / "u.agentik.db"
    db = await AsyncSessionDB.open(path)
    conv = await db.create_conversation()
    done = await db.begin_turn(conv.id, UserMessage(content="finished question"))
    await db.append(conv.id, done, AssistantMessage(content="finished answer"))
    dead = await db.begin_turn(conv.id, UserMessage(content="question whose kernel died"))
    await db.append(conv.id, dead, ToolCallRecord(call={"id": "c1", "name": "lookup", "args": {"key": "a"}}))
    await db.aclose()
    session, _, db2 = await open_session(path, [])
    await session.resume()
    shown = [(m.role, m.content or m.error) for m in session.chat_store.messages]
    assert shown == [
        ("user", "finished question"),
        ("assistant", "finished answer"),
        ("user", "question whose kernel died"),
        ("assistant", UNFINISHED),
    ]
    await db2.aclose()


async def test_a_temporary_session_is_kept_to_the_same_budget_as_a_saved_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Temporary sessions sent their whole history with no budget; both now compact alike."""
    monkeypatch.setenv("AGENTIK_CONTEXT_TOKENS", "3000")
    answer = "y" * 2000  # ~500 tokens per turn: a 2,000-token history budget holds a few turns

    async def requests(temporary: bool) -> list[list[str]]:
        db = await AsyncSessionDB.open(tmp_path / f"{temporary}.agentik.db")
        transport = ScriptedTransport([Step.say(answer) for _ in range(16)])  # answers and summaries
        session = Session(transport, registry(), db=db, temporary=temporary)
        for i in range(8):
            await session.send(f"question {i}")
        await db.aclose()
        return [[m.content for m in r.messages] for r in transport.requests]

    temporary, saved = await requests(True), await requests(False)
    assert temporary == saved
    last = temporary[-1]
    assert last[-1] == "question 7" and "question 0" not in last and len(last) < 2 * 8 - 1
    assert any(text.startswith("[Summary of earlier turns") for text in last)


async def test_the_asking_cell_is_named_in_the_turns_context(tmp_path: Path) -> None:
    """AgentContext.cell_id is filled from the asking cell."""
    session, transport, db = await open_session(tmp_path / "cell.agentik.db", [Step.say("ok")])
    session.context_provider = lambda: AgentContext(notebook_path="nb.ipynb")
    await session.start_turn("which cell?", cell_id="cell-42")
    assert transport.requests[0].context is not None and transport.requests[0].context.cell_id == "cell-42"
    await db.aclose()


async def test_a_turns_commit_and_its_usage_go_to_the_file_in_one_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn's end waits on the sessions file once: its commit and its tokens share a trip."""
    from agentik_jupyter.persistence import async_session

    batches: list[list[str]] = []
    real = async_session._run_all

    def recorded(calls: list[async_session.Call]) -> list[tuple[bool, object]]:
        batches.append([getattr(fn, "__name__", "?") for fn, _, _ in calls])
        return real(calls)

    monkeypatch.setattr(async_session, "_run_all", recorded)
    path = tmp_path / "nb.agentik.db"
    session, _, db = await open_session(path, [Step.say("One."), Step.say("Two.")])
    for question in ("first?", "second?"):
        assert (await session.send(question, AgentContext(notebook_path="/x/nb.ipynb"))).reason == "complete"
    ends = [batch for batch in batches if "commit_turn" in batch]
    assert len(ends) == 2 and all("record_usage" in batch for batch in ends), batches
    assert [u.output_tokens for u in await db.turn_usages(session.conversation_id)] == [1, 1]
    await db.aclose()
