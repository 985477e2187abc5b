"""The session store against real SQLite files: round-trips, turn semantics, paging, lifecycle."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentik_jupyter.persistence import (
    INTERRUPTED_CODE,
    ConversationNotFoundError,
    SessionDB,
    TemporaryConversationError,
    TurnNotFoundError,
    TurnStateError,
    WorkingMemoryError,
)
from agentik_jupyter.types import (
    AgentContext,
    AssistantMessage,
    ChatMessage,
    ErrorRecord,
    ToolCall,
    ToolCallRecord,
    ToolResult,
    ToolResultRecord,
    Usage,
    UserMessage,
    VariableSummary,
)


@pytest.fixture
def db(tmp_path: Path) -> SessionDB:
    store = SessionDB(tmp_path / "nb.agentik.db")
    yield store
    store.close()


def tool_turn(question: str, n_calls: int = 1, answer: str = "done") -> list[ChatMessage]:
    """A complete turn: user, assistant with calls, one result per call, final answer."""
    calls = [ToolCall(id=f"call_{question}_{i}", name="head", args={"n": i}) for i in range(n_calls)]
    messages = [ChatMessage(role="user", content=question)]
    if calls:
        messages.append(ChatMessage(role="assistant", tool_calls=calls))
        messages += [
            ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=c.id, name=c.name, result=f"r{i}"))
            for i, c in enumerate(calls)
        ]
    messages.append(ChatMessage(role="assistant", content=answer))
    return messages


def run_turn(db: SessionDB, conversation_id: str, question: str, n_calls: int = 1) -> str:
    """A turn as session.py drives it: each step to the audit log, then the commit."""
    working = tool_turn(question, n_calls)
    turn = db.begin_turn(conversation_id, UserMessage(id=working[0].id, content=question))
    for message in working[1:]:
        if message.role == "assistant":
            record = AssistantMessage(id=message.id, content=message.content, tool_calls=message.tool_calls)
            db.append(conversation_id, turn, record)
            for call in message.tool_calls or []:
                db.append(conversation_id, turn, ToolCallRecord(call=call))
        else:
            db.append(conversation_id, turn, ToolResultRecord(id=message.id, result=message.tool_result))
    db.commit_turn(conversation_id, turn, working)
    return turn


def all_records(db: SessionDB, conversation_id: str) -> list:
    return [e.record for e in db.audit_log(conversation_id, limit=10_000).entries]


# ---- round-trips ----

CALL = ToolCall(id="call_1", name="describe", args={"df": "sales", "cols": ["a", "b"], "deep": {"x": [1, 2.5, None]}})
RECORDS = [
    UserMessage(content="plot sales"),
    UserMessage(
        content="ünïcödé ✓ \n\t 'quotes' \"double\"",
        context=AgentContext(
            notebook_path="/home/me/a.ipynb",
            cell_id="c-7",
            variables=[VariableSummary(name="df", type="DataFrame", shape="(3, 2)")],
            execution_count=12,
        ),
    ),
    AssistantMessage(),
    AssistantMessage(
        content="Here it is",
        reasoning="thinking…",
        tool_calls=[CALL, ToolCall(id="call_2", name="noargs")],
        provider_blocks=[{"type": "thinking", "thinking": "t", "signature": "sig"}],
        usage=Usage(input_tokens=10, output_tokens=3),
    ),
    AssistantMessage(content="partial usage", usage=Usage(input_tokens=5)),
    ToolCallRecord(call=CALL),
    ToolCallRecord(call=ToolCall(id="c", name="n")),
    ToolResultRecord(result=ToolResult(tool_call_id="call_1", name="describe")),
    ToolResultRecord(
        result=ToolResult(
            tool_call_id="call_1",
            name="describe",
            result={"rows": [[1, "x"], [2, None]]},
            error="boom",
            display={"text/html": "<table/>", "image/png": "iVBOR"},
            duration_ms=12.5,
        )
    ),
    ErrorRecord(message="provider said 500"),
    ErrorRecord(message="stopped", code="interrupted"),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: f"{r.kind}")
def test_every_audit_record_round_trips(db: SessionDB, record) -> None:
    conv = db.create_conversation()
    turn = (
        db.begin_turn(conv.id, record)
        if isinstance(record, UserMessage)
        else db.begin_turn(conv.id, UserMessage(content="q"))
    )
    if not isinstance(record, UserMessage):
        ref = db.append(conv.id, turn, record)
        assert ref.turn_id == turn and ref.message_id == record.id
    [entry] = [e for e in db.audit_log(conv.id).entries if e.record.id == record.id]
    assert entry.record == record
    assert type(entry.record) is type(record)
    assert entry.turn_id == turn


WORKING = [
    ChatMessage(role="user", content="q"),
    ChatMessage(role="user", content="q", reasoning="r", timestamp=1.5),
    ChatMessage(role="assistant", content="a"),
    ChatMessage(role="assistant", content="", reasoning="why", provider_blocks=[{"type": "text", "text": "a"}]),
]


@pytest.mark.parametrize("message", WORKING[2:])
def test_working_memory_round_trips(db: SessionDB, message: ChatMessage) -> None:
    conv = db.create_conversation()
    user = WORKING[1]
    turn = db.begin_turn(conv.id, UserMessage(id=user.id, content=user.content))
    db.commit_turn(conv.id, turn, [user, message])
    assert db.working_memory(conv.id) == [user, message]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
tool_calls = st.builds(
    ToolCall, id=st.text(min_size=1), name=st.text(min_size=1), args=st.dictionaries(st.text(), json_values, max_size=4)
)
records = st.one_of(
    st.builds(
        AssistantMessage,
        content=st.text(),
        reasoning=st.none() | st.text(),
        tool_calls=st.none() | st.lists(tool_calls, max_size=3),
    ),
    st.builds(ToolCallRecord, call=tool_calls),
    st.builds(
        ToolResultRecord,
        result=st.builds(
            ToolResult,
            tool_call_id=st.text(min_size=1),
            name=st.text(),
            result=json_values,
            error=st.none() | st.text(),
        ),
    ),
    st.builds(ErrorRecord, message=st.text(), code=st.none() | st.text()),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.text(), record=records)
def test_round_trip_property(db: SessionDB, content: str, record) -> None:
    conv = db.create_conversation()
    user = UserMessage(content=content)
    turn = db.begin_turn(conv.id, user)
    db.append(conv.id, turn, record)
    assert all_records(db, conv.id) == [user, record]


# ---- conversations ----


def test_create_get_latest_list(db: SessionDB) -> None:
    assert db.latest_conversation() is None
    first = db.create_conversation(title="first")
    second = db.create_conversation()
    temp = db.create_conversation(is_temporal=True)
    assert db.get_conversation(temp.id).is_temporal
    assert db.latest_conversation().id == second.id
    run_turn(db, first.id, "again")
    assert db.latest_conversation().id == first.id
    listed = db.list_conversations()
    assert [c.id for c in listed] == [first.id, second.id]
    assert listed[0].message_count == 3  # user, assistant with calls, final answer
    assert listed[0].title == "first"
    assert [c.id for c in db.list_conversations(include_temporal=True)][-1] in {temp.id, second.id}
    assert len(db.list_conversations(include_temporal=True)) == 3
    with pytest.raises(ConversationNotFoundError, match="nope"):
        db.get_conversation("nope")


def test_list_pages(db: SessionDB) -> None:
    ids = [db.create_conversation(title=str(i)).id for i in range(7)]
    pages = [db.list_conversations(limit=3, offset=o) for o in (0, 3, 6)]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [c.id for p in pages for c in p] == ids[::-1]


def test_title_defaults_to_first_user_message(db: SessionDB) -> None:
    conv = db.create_conversation()
    assert conv.title is None
    db.begin_turn(conv.id, UserMessage(content="\n  Why   is revenue\tdown in Q3?\nmore lines"))
    db.begin_turn(conv.id, UserMessage(content="second question"))
    assert db.get_conversation(conv.id).title == "Why is revenue down in Q3?"
    long = db.create_conversation()
    db.begin_turn(long.id, UserMessage(content="x" * 500))
    title = db.get_conversation(long.id).title
    assert len(title) == 60 and title.endswith("…")


def test_rename_bumps_updated_at(db: SessionDB) -> None:
    conv = db.create_conversation()
    run_turn(db, conv.id, "q")
    before = db.get_conversation(conv.id)
    renamed = db.rename_conversation(conv.id, "  Sales   analysis ")
    assert renamed.title == "Sales analysis"
    assert renamed.updated_at > before.updated_at
    assert db.rename_conversation(conv.id, "   ").title is None
    with pytest.raises(ConversationNotFoundError):
        db.rename_conversation("missing", "x")


def test_delete_cascades_and_leaves_others(db: SessionDB) -> None:
    doomed, kept = db.create_conversation(), db.create_conversation()
    for conv in (doomed, kept):
        run_turn(db, conv.id, "a", n_calls=2)
        turn = db.begin_turn(conv.id, UserMessage(content="b"))
        db.fail_turn(conv.id, turn, "oops")
    assert db.delete_conversation(doomed.id) is True
    assert db.delete_conversation(doomed.id) is False
    raw = sqlite3.connect(db.path)
    owners = {"message": "conversation_id", "working_memory": "conversation_id", "conversation": "id"}
    for table, column in owners.items():
        assert {r[0] for r in raw.execute(f"SELECT {column} FROM {table}")} == {kept.id}, table
    raw.close()
    assert len(all_records(db, kept.id)) == 9
    assert len(db.working_memory(kept.id)) == 6  # the answered turn and the failed turn's question


def test_audit_log_is_append_only_in_the_database(db: SessionDB) -> None:
    conv = db.create_conversation()
    run_turn(db, conv.id, "q")
    raw = sqlite3.connect(db.path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("UPDATE message SET payload_json = '{}'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("DELETE FROM message")
    raw.close()


# ---- turns ----


def test_turn_writes_audit_and_working_memory(db: SessionDB) -> None:
    conv = db.create_conversation()
    working = tool_turn("what is in df?", n_calls=2)
    user, assistant, r0, r1, answer = working
    turn = db.begin_turn(conv.id, UserMessage(id=user.id, content=user.content))
    calls = assistant.tool_calls
    db.append(conv.id, turn, AssistantMessage(id=assistant.id, tool_calls=calls))
    for call, result in zip(calls, (r0, r1)):
        db.append(conv.id, turn, ToolCallRecord(call=call))
        db.append(conv.id, turn, ToolResultRecord(id=result.id, result=result.tool_result))
    db.append(conv.id, turn, AssistantMessage(id=answer.id, content=answer.content))
    db.commit_turn(conv.id, turn, working)

    page = db.audit_log(conv.id)
    assert [e.seq for e in page.entries] == list(range(1, 8))
    assert [e.record.kind for e in page.entries] == [
        "user",
        "assistant",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "assistant",
    ]
    assert {e.turn_id for e in page.entries} == {turn}
    assert db.working_memory(conv.id) == working
    raw = sqlite3.connect(db.path)
    sources = [r[0] for r in raw.execute("SELECT source_message_id FROM working_memory ORDER BY order_idx")]
    raw.close()
    assert sources == [m.id for m in working]


def test_append_is_idempotent_per_record_id(db: SessionDB) -> None:
    conv = db.create_conversation()
    turn = db.begin_turn(conv.id, UserMessage(content="q"))
    record = ErrorRecord(message="x")
    assert db.append(conv.id, turn, record) == db.append(conv.id, turn, record)
    assert len(all_records(db, conv.id)) == 2
    with pytest.raises(TurnStateError):
        db.append(conv.id, turn, ErrorRecord(id=record.id, message="different"))


@pytest.mark.parametrize(
    "working, reason",
    [
        ([], "empty"),
        (tool_turn("q")[1:], "starts with"),
        (tool_turn("q", 2)[:3] + tool_turn("q", 2)[4:], "without a tool result"),
        (tool_turn("q")[:2], "without a tool result"),
        (tool_turn("q")[:1] + tool_turn("q")[2:], "answers no pending"),
        (tool_turn("q") + tool_turn("again"), "exactly one user"),
        ([ChatMessage(role="user"), ChatMessage(role="tool")], "no tool_result"),
    ],
)
def test_commit_rejects_unpaired_working_memory(db: SessionDB, working: list[ChatMessage], reason: str) -> None:
    conv = db.create_conversation()
    turn = db.begin_turn(conv.id, UserMessage(content="q"))
    with pytest.raises(WorkingMemoryError, match=reason):
        db.commit_turn(conv.id, turn, working)
    assert [(m.role, m.content) for m in db.working_memory(conv.id)] == [("user", "q")]  # written by begin_turn


def test_commit_twice_and_unknown_turns_are_refused(db: SessionDB) -> None:
    conv = db.create_conversation()
    turn = run_turn(db, conv.id, "q")
    with pytest.raises(TurnStateError, match="already committed"):
        db.commit_turn(conv.id, turn, tool_turn("q"))
    with pytest.raises(TurnNotFoundError):
        db.append(conv.id, "turn_nope", ErrorRecord(message="x"))
    with pytest.raises(TurnNotFoundError):
        db.commit_turn(conv.id, "turn_nope", tool_turn("q"))
    other = db.create_conversation()
    with pytest.raises(TurnNotFoundError):
        db.fail_turn(other.id, turn, "wrong conversation")
    with pytest.raises(TurnStateError, match="begin_turn"):
        db.append(conv.id, turn, UserMessage(content="second user"))
    with pytest.raises(ConversationNotFoundError):
        db.begin_turn("conv_missing", UserMessage(content="q"))


def question(text: str) -> tuple[str, str]:
    return ("user", text)


def roles_and_texts(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def test_failed_turn_keeps_only_its_question_in_working_memory(db: SessionDB) -> None:
    conv = db.create_conversation()
    first = tool_turn("first")
    turn1 = db.begin_turn(conv.id, UserMessage(content="first"))
    db.commit_turn(conv.id, turn1, first)

    turn2 = db.begin_turn(conv.id, UserMessage(content="second"))
    db.append(conv.id, turn2, AssistantMessage(content="partial stre"))
    ref = db.fail_turn(conv.id, turn2, "connection reset mid-stream", code="provider_error")
    no_code = db.fail_turn(conv.id, None, "empty input")
    assert no_code.turn_id not in {turn1, turn2}

    # the spec: the question enters working memory when the turn starts, so "try again" has it
    assert roles_and_texts(db.working_memory(conv.id)) == [*roles_and_texts(first), question("second")]
    errors = [r for r in all_records(db, conv.id) if r.kind == "error"]
    assert [(e.message, e.code) for e in errors] == [
        ("connection reset mid-stream", "provider_error"),
        ("empty input", None),
    ]
    assert ref.turn_id == turn2

    third = tool_turn("third", n_calls=0)
    turn3 = db.begin_turn(conv.id, UserMessage(content="third"))
    db.commit_turn(conv.id, turn3, third)
    working = db.working_memory(conv.id)
    assert working[: len(first)] == first and working[len(first) + 1 :] == third
    assert roles_and_texts(working[len(first) : len(first) + 1]) == [question("second")]


def test_interrupted_turn_keeps_completed_pairs_only(db: SessionDB) -> None:
    conv = db.create_conversation()
    calls = [ToolCall(id="a", name="ok"), ToolCall(id="b", name="slow")]
    blocks = [{"type": "text", "text": "t"}, {"type": "tool_use", "id": "a"}, {"type": "tool_use", "id": "b"}]
    user = ChatMessage(role="user", content="q")
    done = ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="a", name="ok", result=1))
    asking = ChatMessage(role="assistant", content="let me look", tool_calls=calls, provider_blocks=blocks)
    working = [user, asking, done]
    turn = db.begin_turn(conv.id, UserMessage(id=user.id, content="q"))
    ref = db.interrupt_turn(conv.id, turn, working)

    kept = db.working_memory(conv.id)
    assert [m.role for m in kept] == ["user", "assistant", "tool"]
    assert [c.id for c in kept[1].tool_calls] == ["a"]
    assert kept[1].provider_blocks == blocks[:2]
    assert kept[2] == done
    [error] = [e.record for e in db.audit_log(conv.id).entries if e.record.kind == "error"]
    assert error.code == INTERRUPTED_CODE and ref.message_id == error.id


def test_interrupt_before_any_answer_keeps_only_the_question(db: SessionDB) -> None:
    conv = db.create_conversation()
    run_turn(db, conv.id, "earlier")
    before = db.working_memory(conv.id)
    user = ChatMessage(role="user", content="q")
    working = [user, ChatMessage(role="assistant", tool_calls=[ToolCall(id="x", name="slow")])]
    turn = db.begin_turn(conv.id, UserMessage(id=user.id, content="q"))
    db.interrupt_turn(conv.id, turn, working, message="Stopped")
    assert db.working_memory(conv.id)[: len(before)] == before
    assert roles_and_texts(db.working_memory(conv.id)[len(before) :]) == [question("q")]  # the question only
    assert all_records(db, conv.id)[-1].message == "Stopped"


def test_interrupt_after_commit_only_adds_the_marker(db: SessionDB) -> None:
    conv = db.create_conversation()
    turn = run_turn(db, conv.id, "q")
    before = db.working_memory(conv.id)
    db.interrupt_turn(conv.id, turn, tool_turn("q"))
    assert db.working_memory(conv.id) == before
    assert all_records(db, conv.id)[-1].code == INTERRUPTED_CODE


def test_updated_at_moves_with_every_write(db: SessionDB) -> None:
    conv = db.create_conversation()
    stamps = [db.get_conversation(conv.id).updated_at]
    turn = db.begin_turn(conv.id, UserMessage(content="q"))
    stamps.append(db.get_conversation(conv.id).updated_at)
    db.append(conv.id, turn, AssistantMessage(content="a"))
    stamps.append(db.get_conversation(conv.id).updated_at)
    db.commit_turn(conv.id, turn, [ChatMessage(role="user", content="q"), ChatMessage(role="assistant", content="a")])
    stamps.append(db.get_conversation(conv.id).updated_at)
    assert stamps == sorted(stamps) and stamps[0] < stamps[-1]


def test_temporary_conversations_are_never_written(db: SessionDB) -> None:
    temp = db.create_conversation(is_temporal=True)
    with pytest.raises(TemporaryConversationError):
        db.begin_turn(temp.id, UserMessage(content="q"))
    with pytest.raises(TemporaryConversationError):
        db.fail_turn(temp.id, None, "x")
    assert db.latest_conversation() is None
    assert db.get_conversation(temp.id).message_count == 0


# ---- reads ----


def test_audit_log_pages_newest_first_oldest_within(db: SessionDB) -> None:
    conv = db.create_conversation()
    turn = db.begin_turn(conv.id, UserMessage(content="q"))
    for i in range(11):
        db.append(conv.id, turn, ErrorRecord(message=str(i)))
    seen: list[int] = []
    before = None
    pages = 0
    while True:
        page = db.audit_log(conv.id, limit=5, before_seq=before)
        pages += 1
        seqs = [e.seq for e in page.entries]
        assert seqs == sorted(seqs)
        seen = seqs + seen
        before = page.next_before_seq
        if before is None:
            break
    assert pages == 3 and seen == list(range(1, 13))
    assert db.audit_log(conv.id, limit=12).next_before_seq is None
    assert db.audit_log(conv.id, limit=5, before_seq=1).entries == []
    with pytest.raises(ValueError):
        db.audit_log(conv.id, limit=0)
    with pytest.raises(ConversationNotFoundError):
        db.audit_log("missing")


def test_working_memory_trims_whole_oldest_turns(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "b.agentik.db", estimator=lambda payload: 10)
    conv = db.create_conversation()
    turns = []
    for i, n_calls in enumerate([0, 2, 0, 1]):
        working = tool_turn(f"t{i}", n_calls)
        turn = db.begin_turn(conv.id, UserMessage(content=f"t{i}"))
        db.commit_turn(conv.id, turn, working)
        turns.append(working)
    assert [len(t) for t in turns] == [2, 5, 2, 4]  # 10 tokens a row: 20, 50, 20, 40
    everything = [m for t in turns for m in t]
    assert db.working_memory(conv.id) == everything
    assert db.working_memory(conv.id, budget_tokens=1000) == everything
    assert db.working_memory(conv.id, budget_tokens=130) == everything
    assert db.working_memory(conv.id, budget_tokens=129) == turns[1] + turns[2] + turns[3]
    assert db.working_memory(conv.id, budget_tokens=60) == turns[2] + turns[3]
    # the latest turn always stays, even over budget; a big turn ends the run of kept turns
    assert db.working_memory(conv.id, budget_tokens=1) == turns[3]
    assert db.working_memory(conv.id, budget_tokens=100) == turns[2] + turns[3]
    assert db.audit_log(conv.id, limit=100).entries[0].record.content == "t0"
    db.close()


def test_default_estimator_is_chars_over_four(db: SessionDB) -> None:
    conv = db.create_conversation()
    run_turn(db, conv.id, "a" * 4000, n_calls=0)
    run_turn(db, conv.id, "b", n_calls=0)
    assert len(db.working_memory(conv.id, budget_tokens=400)) == 2
    assert len(db.working_memory(conv.id, budget_tokens=1400)) == 4


def test_closed_store_says_so(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "c.agentik.db")
    db.close()
    db.close()
    with pytest.raises(Exception, match="closed"):
        db.list_conversations()
