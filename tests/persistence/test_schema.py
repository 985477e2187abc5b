"""Schema versions: migrations from every earlier version, refusal of newer and foreign files."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from agentik_jupyter.persistence import (
    CURRENT_VERSION,
    NotASessionDBError,
    SchemaVersionError,
    SessionDB,
    SessionDBError,
)
from agentik_jupyter.persistence.reader import SessionReader
from agentik_jupyter.persistence.schema import MIGRATIONS, migrate, read_version
from agentik_jupyter.types import ChatMessage, Usage, UserMessage


def schema_of(path: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    conn.close()
    return [(t, n, " ".join((s or "").split())) for t, n, s in rows]


def build_at(path: Path, version: int) -> None:
    """A file as the release with schema ``version`` left it, with one conversation in it."""
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, path, target=version) == version
    if version >= 1:
        conn.execute(
            "INSERT INTO conversation (id, title, is_temporal, created_at, updated_at)"
            " VALUES ('conv_old', 'old', 0, 1.0, 2.0)"
        )
        payload = UserMessage(id="msg_u", content="from the past", timestamp=1.0).model_dump_json()
        conn.execute("INSERT INTO message VALUES ('msg_u', 'conv_old', 'turn_old', 1, 'user', ?, 1.0)", (payload,))
        chat = ChatMessage(id="msg_u", role="user", content="from the past", timestamp=1.0).model_dump_json()
        conn.execute(
            "INSERT INTO working_memory"
            " (conversation_id, turn_id, order_idx, source_message_id, payload_json, created_at) VALUES"
            " ('conv_old', 'turn_old', 1, 'msg_u', ?, 1.0)",
            (chat,),
        )
    conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_versions_are_an_ordered_list() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, CURRENT_VERSION + 1))
    assert CURRENT_VERSION >= 2


def test_fresh_file(tmp_path: Path) -> None:
    path = tmp_path / "new.agentik.db"
    with SessionDB(path) as db:
        assert db.schema_version == CURRENT_VERSION
    assert read_version(path) == CURRENT_VERSION
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert {
        "conversation",
        "message",
        "working_memory",
        "message_conversation_seq",
        "working_memory_conversation_order",
        "message_no_update",
        "message_no_delete",
    } <= names


def test_empty_file_is_version_zero(tmp_path: Path) -> None:
    path = tmp_path / "empty.agentik.db"
    path.touch()
    assert read_version(path) == 0
    with SessionDB(path) as db:
        assert db.list_conversations() == []
    assert schema_of(path) == schema_of(fresh(tmp_path))


def fresh(tmp_path: Path) -> Path:
    path = tmp_path / "reference.agentik.db"
    SessionDB(path).close()
    return path


@pytest.mark.parametrize("version", range(0, CURRENT_VERSION))
def test_migrates_from_every_earlier_version(tmp_path: Path, version: int) -> None:
    path = tmp_path / f"v{version}.agentik.db"
    build_at(path, version)
    assert read_version(path) == version
    with SessionDB(path) as db:
        assert db.schema_version == CURRENT_VERSION
        if version >= 1:
            old = db.get_conversation("conv_old")
            assert (old.title, old.message_count, old.mode) == ("old", 1, None)  # an older session: the default
            assert db.audit_log("conv_old").entries[0].record.content == "from the past"
            assert db.working_memory("conv_old")[0].content == "from the past"
            turn = db.begin_turn("conv_old", UserMessage(content="and now"))
            db.commit_turn("conv_old", turn, [ChatMessage(role="user", content="and now")])
            assert [e.seq for e in db.audit_log("conv_old").entries] == [1, 2]
            assert db.turn_usages("conv_old") == []  # older turns' tokens are unknown, not zero
            db.record_usage("conv_old", turn, Usage(input_tokens=100, cached_tokens=80, output_tokens=5), "m", 2)
            (spent,) = db.turn_usages("conv_old")
            assert (spent.turn_id, spent.model, spent.requests, spent.input_tokens, spent.cached_tokens) == (
                turn,
                "m",
                2,
                100,
                80,
            )
    assert read_version(path) == CURRENT_VERSION
    assert schema_of(path) == schema_of(fresh(tmp_path))


def test_a_sessions_mode_is_saved_and_an_unknown_one_refused(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "m.agentik.db") as db:
        conv = db.create_conversation(mode="plan")
        assert db.get_conversation(conv.id).mode == "plan"
        before = db.get_conversation(conv.id).updated_at
        assert db.set_mode(conv.id, "auto").mode == "auto"
        assert db.get_conversation(conv.id).updated_at == before  # its place in the list stays
        with pytest.raises(sqlite3.IntegrityError):
            db.set_mode(conv.id, "yolo")
        assert db.set_mode(conv.id, None).mode is None


def test_the_servers_reader_reads_an_older_file_without_a_mode(tmp_path: Path) -> None:
    path = tmp_path / "v4.agentik.db"
    build_at(path, 4)
    (listed,), _ = SessionReader(path).list_conversations()
    assert (listed.id, listed.mode) == ("conv_old", None)
    assert read_version(path) == 4  # read, never migrated


def test_migration_is_all_or_nothing(tmp_path: Path) -> None:
    """A v1 file whose data breaks a v2 index stays at v1 with nothing half-applied."""
    path = tmp_path / "dup.agentik.db"
    build_at(path, 1)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "INSERT INTO working_memory (conversation_id, turn_id, order_idx, payload_json, created_at)"
        " VALUES ('conv_old', 'turn_old', 1, '{}', 1.0)"
    )
    conn.close()
    before = schema_of(path)
    with pytest.raises(sqlite3.IntegrityError):
        SessionDB(path)
    assert read_version(path) == 1
    assert schema_of(path) == before


def test_future_version_is_refused_and_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.agentik.db"
    build_at(path, CURRENT_VERSION)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {CURRENT_VERSION + 5}")
    conn.commit()
    conn.close()
    before = digest(path)
    siblings = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(SchemaVersionError) as info:
        SessionDB(path)
    message = str(info.value)
    assert str(path) in message and str(CURRENT_VERSION + 5) in message and str(CURRENT_VERSION) in message
    assert "upgrade agentik_jupyter" in message.lower()
    assert info.value.found == CURRENT_VERSION + 5
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings


def test_future_version_in_wal_mode_is_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future-wal.agentik.db"
    SessionDB(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {CURRENT_VERSION + 1}")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(SchemaVersionError):
        SessionDB(path)
    assert digest(path) == before


@pytest.mark.parametrize("content", [b"this is a CSV, not a database\n" * 50, b"\x00" * 4096])
def test_non_database_file_is_refused_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "junk.agentik.db"
    path.write_bytes(content)
    with pytest.raises(NotASessionDBError, match="untouched"):
        SessionDB(path)
    assert path.read_bytes() == content


def test_someone_elses_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(NotASessionDBError, match="no agentik schema version"):
        SessionDB(path)
    assert schema_of(path) == [("table", "t", "CREATE TABLE t (x)")]


def test_missing_folder_is_created(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "nb.agentik.db"
    SessionDB(path).close()
    assert path.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_read_only_folder_says_what_to_do(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(SessionDBError, match="AGENTIK_DB_PATH"):
            SessionDB(folder / "nb.agentik.db")
    finally:
        folder.chmod(0o700)


def test_a_folder_in_the_way_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "nb.agentik.db").mkdir()
    with pytest.raises(SessionDBError, match="cannot open the sessions file"):
        SessionDB(tmp_path / "nb.agentik.db")
