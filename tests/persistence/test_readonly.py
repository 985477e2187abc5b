"""Reading without writing: foreign files stay byte-identical, the server's reader never writes,
pages, and the change log numbers what kernels write."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from agentik_jupyter.persistence import (
    ConversationNotFoundError,
    NotASessionDBError,
    SessionDB,
    SessionReader,
)
from agentik_jupyter.persistence.schema import migrate
from agentik_jupyter.types import AssistantMessage, UserMessage


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


def foreign(path: Path, journal: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO orders (total) VALUES (9.5)")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_someone_elses_database_is_left_byte_identical(tmp_path: Path, journal: str) -> None:
    path = tmp_path / "nb.agentik.db"
    foreign(path, journal)
    before, files = digest(path), siblings(path)
    with pytest.raises(NotASessionDBError, match="left untouched"):
        SessionDB(path)
    assert digest(path) == before
    assert siblings(path) == files  # no -wal, no -shm
    with pytest.raises(NotASessionDBError):
        SessionReader(path).list_conversations()
    assert digest(path) == before and siblings(path) == files


def filled(path: Path, n: int = 3) -> list[str]:
    ids = []
    with SessionDB(path) as db:
        for i in range(n):
            conv = db.create_conversation(f"session {i}")
            turn = db.begin_turn(conv.id, UserMessage(content=f"question {i}"))
            db.append(conv.id, turn, AssistantMessage(content=f"answer {i}"))
            ids.append(conv.id)
    return ids


def test_reader_writes_nothing_even_on_a_read_only_wal_file(tmp_path: Path) -> None:
    path = tmp_path / "nb.agentik.db"
    ids = filled(path)
    assert siblings(path) == ["nb.agentik.db"]  # the last close checkpointed the WAL away
    path.chmod(0o444)
    before = digest(path)
    reader = SessionReader(path)
    sessions, position = reader.list_conversations()
    assert [s.id for s in sessions] == list(reversed(ids))
    assert position > 0
    page = reader.audit_log(ids[0])
    assert [e.record.kind for e in page.entries] == ["user", "assistant"]
    assert digest(path) == before and siblings(path) == ["nb.agentik.db"]


def test_reader_sees_what_an_open_writer_committed(tmp_path: Path) -> None:
    path = tmp_path / "nb.agentik.db"
    with SessionDB(path) as db:
        conv = db.create_conversation("live")
        db.begin_turn(conv.id, UserMessage(content="still open"))
        sessions, _ = SessionReader(path).list_conversations()
        assert [s.title for s in sessions] == ["live"]
        assert SessionReader(path).get_conversation(conv.id).message_count == 1


def test_paging_sessions_and_messages(tmp_path: Path) -> None:
    path = tmp_path / "nb.agentik.db"
    ids = filled(path, 5)
    reader = SessionReader(path)
    first, _ = reader.list_conversations(limit=2)
    second, _ = reader.list_conversations(limit=2, offset=2)
    last, _ = reader.list_conversations(limit=2, offset=4)
    assert [s.id for s in first + second + last] == list(reversed(ids))
    assert reader.list_page(limit=2).total == 5
    with SessionDB(path) as db:
        turn = db.begin_turn(ids[0], UserMessage(content="more"))
        for i in range(4):
            db.append(ids[0], turn, AssistantMessage(content=f"part {i}"))
    latest = reader.audit_log(ids[0], limit=3)
    assert [e.seq for e in latest.entries] == [5, 6, 7] and latest.next_before_seq == 5
    older = reader.audit_log(ids[0], limit=3, before_seq=latest.next_before_seq)
    assert [e.seq for e in older.entries] == [2, 3, 4] and older.next_before_seq == 2
    forward = reader.audit_log(ids[0], limit=4, after_seq=2)
    assert [e.seq for e in forward.entries] == [3, 4, 5, 6] and forward.next_after_seq == 6
    with pytest.raises(ConversationNotFoundError):
        reader.audit_log("conv_missing")


def test_missing_or_empty_file_reads_as_no_sessions(tmp_path: Path) -> None:
    assert SessionReader(tmp_path / "none.agentik.db").list_conversations() == ([], 0)
    (tmp_path / "empty.agentik.db").write_bytes(b"")
    assert SessionReader(tmp_path / "empty.agentik.db").changes_after(0) == []
    assert siblings(tmp_path / "empty.agentik.db") == ["empty.agentik.db"]


def test_change_log_numbers_created_renamed_message_deleted(tmp_path: Path) -> None:
    path = tmp_path / "nb.agentik.db"
    reader = SessionReader(path)
    with SessionDB(path) as db:
        start = reader.position()
        conv = db.create_conversation()
        turn = db.begin_turn(conv.id, UserMessage(content="First question here"))
        db.append(conv.id, turn, AssistantMessage(content="an answer"))
        before_rename = db.get_conversation(conv.id).updated_at
        renamed = db.rename_conversation(conv.id, "Sales")
        assert renamed.updated_at > before_rename
        other = db.create_conversation("gone soon")
        db.begin_turn(other.id, UserMessage(content="x"))
        db.delete_conversation(other.id)
        events = reader.changes_after(start)
    kinds = [(e["type"], e["session_id"]) for e in events]
    # the first question names the session (a rename); the deleted session's message is gone with it
    assert kinds == [
        ("created", conv.id),
        ("message", conv.id),
        ("renamed", conv.id),
        ("message", conv.id),
        ("renamed", conv.id),
        ("created", other.id),
        ("deleted", other.id),
    ], kinds
    positions = [e["position"] for e in events]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    messages = [e for e in events if e["type"] == "message"]
    assert [m["entry"]["record"]["kind"] for m in messages] == ["user", "assistant"]
    assert events[-1]["title"] == "gone soon"
    assert [e["session"]["title"] for e in events if e["type"] == "renamed" and e["session_id"] == conv.id][
        -1
    ] == "Sales"
    assert reader.changes_after(positions[-1]) == []
    assert reader.changes_after(positions[2])[0]["position"] == positions[3]  # resume from any position


def test_a_mode_change_is_an_event_and_older_files_keep_their_positions(tmp_path: Path) -> None:
    path = tmp_path / "v6.agentik.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, path, target=6)  # as the release before the mode event left it
    conn.execute("INSERT INTO conversation (id, title, is_temporal, created_at, updated_at) VALUES ('a', 't', 0, 1, 1)")
    conn.execute("INSERT INTO conversation (id, title, is_temporal, created_at, updated_at) VALUES ('b', 'u', 0, 1, 1)")
    conn.execute("DELETE FROM conversation WHERE id = 'b'")
    conn.execute("DELETE FROM change_log WHERE position = 3")  # the newest event gone: 3 is still never reused
    conn.close()
    reader = SessionReader(path)
    before = reader.changes_after(0)
    with SessionDB(path) as db:  # migrated
        db.set_mode("a", "auto")
        db.set_mode("a", "auto")  # no change, no event
        db.set_mode("a", "plan")
    events = reader.changes_after(0)

    def kept(found: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return [(e["type"], e["position"], e["session_id"], e.get("title")) for e in found]

    assert kept(events[: len(before)]) == kept(before)  # the log as it was, position for position
    modes = events[len(before) :]
    assert [(e["type"], e["session_id"], e["session"]["mode"]) for e in modes] == [
        ("mode", "a", "plan"),  # each carries the session as it is now
        ("mode", "a", "plan"),
    ]
    assert [e["position"] for e in before] == [1, 2] and [e["position"] for e in modes] == [4, 5]
