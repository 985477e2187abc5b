"""Real OS processes on real files: two kernels writing at once, and a kernel killed mid-write."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from itertools import groupby
from pathlib import Path

import pytest

from agentik_jupyter.persistence import SessionDB, check_turn
from agentik_jupyter.types import ChatMessage, UserMessage

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes and signals")

WRITER = textwrap.dedent(
    """
    import sys, time
    from agentik_jupyter.persistence import SessionDB
    from agentik_jupyter.types import (
        AssistantMessage, ChatMessage, ToolCall, ToolCallRecord, ToolResult, ToolResultRecord, UserMessage,
    )

    path, conversation, tag, turns, calls, size, busy, start_at, pause = sys.argv[1:10]
    turns, calls, size = int(turns), int(calls), int(size)
    time.sleep(max(0.0, float(start_at) - time.time()))
    db = SessionDB(path, busy_timeout_s=float(busy))
    n = 0
    current = {"turn": None, "rows": 0}

    def inside_commit(statement):
        # "commit": stop for the kill inside commit_turn's open transaction, after some rows.
        if pause == "commit" and n >= 3 and statement.startswith("INSERT INTO working_memory"):
            current["rows"] += 1
            if current["rows"] == 10:
                print("in-commit", current["turn"], flush=True)
                time.sleep(5)

    db._conn.set_trace_callback(inside_commit)
    if conversation == "new":
        conversation = db.create_conversation(title=tag).id
    print("conv", conversation, flush=True)
    while turns < 0 or n < turns:
        question = f"{tag} {n}"
        user = ChatMessage(role="user", content=question)
        turn = db.begin_turn(conversation, UserMessage(id=user.id, content=question))
        current["turn"] = turn
        tool_calls = [ToolCall(id=f"{tag}-{n}-{i}", name="head", args={"i": i}) for i in range(calls)]
        asking = ChatMessage(role="assistant", tool_calls=tool_calls or None)
        db.append(conversation, turn, AssistantMessage(id=asking.id, tool_calls=tool_calls or None))
        working = [user, asking]
        for i, call in enumerate(tool_calls):
            if i == calls // 2 and n >= 3 and pause == "tool":
                print("mid", turn, flush=True)
                time.sleep(5)  # a slow tool: the kill lands between this turn's audit writes
            result = ToolResult(tool_call_id=call.id, name=call.name, result="x" * size)
            db.append(conversation, turn, ToolCallRecord(call=call))
            message = ChatMessage(role="tool", tool_result=result)
            db.append(conversation, turn, ToolResultRecord(id=message.id, result=result))
            working.append(message)
        answer = ChatMessage(role="assistant", content=f"answer {question}")
        db.append(conversation, turn, AssistantMessage(id=answer.id, content=answer.content))
        db.commit_turn(conversation, turn, working + [answer])
        print("ok", turn, question, flush=True)
        n += 1
    db.close()
    """
)


def start_writer(
    tmp_path: Path,
    db_path: Path,
    tag: str,
    *,
    conversation: str = "new",
    turns: int = 30,
    calls: int = 2,
    size: int = 100,
    busy_timeout_s: float = 10.0,
    start_at: float = 0.0,
    pause: str = "",
) -> subprocess.Popen[str]:
    script = tmp_path / "writer.py"
    if not script.exists():
        script.write_text(WRITER)
    args = [str(db_path), conversation, tag, *map(str, (turns, calls, size, busy_timeout_s, start_at)), pause or "-"]
    return subprocess.Popen(
        [sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(proc: subprocess.Popen[str]) -> list[str]:
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert "locked" not in err.lower() and "busy" not in err.lower()
    return out.splitlines()


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def turns_in_working_memory(db: SessionDB, conversation_id: str) -> list[list[ChatMessage]]:
    """Working memory split at user messages (each turn starts with one), each turn checked."""
    messages = db.working_memory(conversation_id)
    turns: list[list[ChatMessage]] = []
    for message in messages:
        if message.role == "user":
            turns.append([])
        turns[-1].append(message)
    for turn in turns:
        check_turn(turn)
    return turns


def assert_consistent(db: SessionDB, conversation_id: str) -> None:
    """Seqs contiguous, every committed turn complete, every audit turn's rows together by turn id."""
    entries = db.audit_log(conversation_id, limit=1_000_000).entries
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    by_turn = sorted(entries, key=lambda e: (e.turn_id, e.seq))
    for _, group in groupby(by_turn, key=lambda e: e.turn_id):
        assert next(group).record.kind == "user"
    turns_in_working_memory(db, conversation_id)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("shared", [True, False], ids=["one conversation", "two conversations"])
def test_two_processes_one_file(tmp_path: Path, shared: bool) -> None:
    path = tmp_path / "nb.agentik.db"
    conversation = "new"
    if shared:
        with SessionDB(path) as db:
            conversation = db.create_conversation().id
    start_at = time.time() + 1.0
    procs = [start_writer(tmp_path, path, tag, conversation=conversation, turns=40, start_at=start_at) for tag in "AB"]
    outputs = [finish(p) for p in procs]
    assert integrity(path) == "ok"
    with SessionDB(path) as db:
        conversations = {line.split()[1] for out in outputs for line in out if line.startswith("conv")}
        assert len(conversations) == (1 if shared else 2)
        total = 0
        for conv in conversations:
            assert_consistent(db, conv)
            turns = turns_in_working_memory(db, conv)
            total += len(turns)
            # user, assistant, 2 tool calls, 2 tool results, answer per turn
            assert len(db.audit_log(conv, limit=1_000_000).entries) == 7 * len(turns)
        assert total == 80
        questions = {t[0].content for conv in conversations for t in turns_in_working_memory(db, conv)}
        assert questions == {f"{tag} {n}" for tag in "AB" for n in range(40)}


@pytest.mark.timeout(300)
def test_two_notebooks_in_one_folder(tmp_path: Path) -> None:
    paths = [tmp_path / "a.agentik.db", tmp_path / "b.agentik.db"]
    start_at = time.time() + 1.0
    procs = [start_writer(tmp_path, p, p.stem[0], turns=40, start_at=start_at) for p in paths]
    for proc in procs:
        finish(proc)
    for path in paths:
        assert integrity(path) == "ok"
        with SessionDB(path) as db:
            [conv] = db.list_conversations()
            assert conv.message_count == 120 and len(turns_in_working_memory(db, conv.id)) == 40


@pytest.mark.timeout(300)
def test_impatient_busy_timeout_is_retried_not_surfaced(tmp_path: Path) -> None:
    """With SQLite's own wait cut to 1 ms, the retry loop alone must keep 'database is locked' away."""
    path = tmp_path / "fresh.agentik.db"  # not created yet: both processes race to create and migrate it
    start_at = time.time() + 1.0
    procs = [
        start_writer(tmp_path, path, tag, turns=25, calls=3, busy_timeout_s=0.001, start_at=start_at) for tag in "ABC"
    ]
    for proc in procs:
        finish(proc)
    assert integrity(path) == "ok"
    with SessionDB(path) as db:
        convs = db.list_conversations()
        assert len(convs) == 3
        for conv in convs:
            assert_consistent(db, conv.id)
            assert len(turns_in_working_memory(db, conv.id)) == 25


@pytest.mark.timeout(300)
@pytest.mark.parametrize("when", ["anywhere", "anywhere again", "mid-turn", "mid-commit"])
def test_sigkill_mid_write_leaves_a_sound_file(tmp_path: Path, when: str) -> None:
    """Kill -9 a writer: at a random moment (often inside a transaction, as the turns are big),
    between a turn's audit writes, or inside commit_turn's open transaction."""
    path = tmp_path / "crash.agentik.db"
    with SessionDB(path) as db:
        conversation = db.create_conversation(title="survivor").id
    pause = {"mid-turn": "tool", "mid-commit": "commit"}.get(when, "")
    # Big turns (40 tool pairs × 20 kB, one commit of ~1 MB) so random kills land inside writes.
    proc = start_writer(tmp_path, path, "K", conversation=conversation, turns=-1, calls=40, size=20_000, pause=pause)
    assert proc.stdout is not None
    reported: list[str] = []
    killed_turn: str | None = None
    while killed_turn is None:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "writer died"
        kind, *rest = line.split()
        if kind == "ok":
            reported.append(rest[0])
            if len(reported) == 3 and not pause:
                time.sleep(random.uniform(0.0, 0.3))
                killed_turn = ""
        elif kind in ("mid", "in-commit"):
            killed_turn = rest[0]
    os.kill(proc.pid, signal.SIGKILL)
    tail, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    reported += [line.split()[1] for line in tail.splitlines() if line.startswith("ok")]

    assert integrity(path) == "ok"
    with SessionDB(path) as db:
        assert_consistent(db, conversation)
        turns = turns_in_working_memory(db, conversation)
        # user, asking, 40 results, answer: whole, or only the question begin_turn wrote
        assert all(len(turn) in (1, 43) for turn in turns), [len(turn) for turn in turns]
        entries = db.audit_log(conversation, limit=1_000_000).entries
        turn_of_user = {e.record.id: e.turn_id for e in entries if e.record.kind == "user"}
        committed = {turn_of_user[t[0].id] for t in turns if len(t) == 43}
        assert committed >= set(reported)
        if killed_turn:
            assert killed_turn not in committed
            killed_kinds = [e.record.kind for e in entries if e.turn_id == killed_turn]
            assert killed_kinds[:2] == ["user", "assistant"] and "tool_result" in killed_kinds
            if when == "mid-commit":
                assert len(killed_kinds) == 83  # every audit row landed; only working memory rolled back

        user = ChatMessage(role="user", content="after the crash")
        turn = db.begin_turn(conversation, UserMessage(id=user.id, content=user.content))
        db.commit_turn(conversation, turn, [user, ChatMessage(role="assistant", content="still here")])
        assert db.working_memory(conversation)[-1].content == "still here"
        assert db.latest_conversation().id == conversation
