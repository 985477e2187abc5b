"""The sessions file's schema, versioned with ``PRAGMA user_version``.

Migrations are an ordered list; a file at version N gets every migration after N, all in
one ``BEGIN IMMEDIATE`` transaction, so two kernels opening a new notebook at once cannot
both migrate it and a crash mid-migration leaves the old version intact.

- v1: the three tables of the design (conversation, message, working_memory) and the
  (conversation_id, seq) index the audit log is paged by.
- v2: the audit log becomes append-only in the database itself (triggers), and the indexes
  the turn and working-memory reads need.
- v3: a change log (``change_log``) filled by triggers, so every writer (any kernel, the
  server's rename/delete) leaves a numbered event: created, renamed, deleted, message. The
  server's events stream reads it read-only from a position the client gives.
- v4: ``turn_usage``, one row per turn with the tokens it spent (in, from cache, written to cache,
  out) and the model, so a resumed session keeps its totals and ``%agent usage`` can price them.
  Files from v1-v3 get the empty table: their earlier turns count as unknown, not as zero.
- v5: ``notebook_binding``, one row naming the notebook the file belongs to (the id in that
  notebook's ``metadata.agentik.notebook_id``) and where the file came from (``copied from …``), so
  a notebook that later takes the old name is never handed a stranger's sessions (``binding.py``).
- v6: ``conversation.mode``, the session's mode (ask, agent, auto, plan) as the user set it; NULL
  (every earlier session) means the default (``AGENTIK_MODE``, else agent).
- v7: the change log also numbers a ``mode`` event when a session's mode changes (``%agent mode``, the
  panel's picker), so a sessions sidebar that follows the log shows the new mode without a reload.

A file whose version is newer than ours, or an SQLite file of someone else's (tables but no
version), is refused before anything is written: both are read over a read-only connection
(``readonly.py``), so the file stays byte-identical and no -wal/-shm appear.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentik_jupyter.errors import NotASessionDBError, SchemaVersionError
from agentik_jupyter.ids import valid_id_sql
from agentik_jupyter.persistence.models import ConversationInfo
from agentik_jupyter.persistence.readonly import exists_with_data, read_only


@dataclass(frozen=True)
class Migration:
    version: int
    why: str
    statements: tuple[str, ...]


CHANGE_LOG_TRIGGERS = (
    """CREATE TRIGGER change_log_created AFTER INSERT ON conversation
            BEGIN INSERT INTO change_log (kind, conversation_id, title, created_at)
                  VALUES ('created', NEW.id, NEW.title, NEW.created_at); END""",
    """CREATE TRIGGER change_log_renamed AFTER UPDATE OF title ON conversation
            WHEN OLD.title IS NOT NEW.title
            BEGIN INSERT INTO change_log (kind, conversation_id, title, created_at)
                  VALUES ('renamed', NEW.id, NEW.title, (julianday('now') - 2440587.5) * 86400.0); END""",
    # A deleted conversation's message events lead nowhere: drop them with it.
    """CREATE TRIGGER change_log_deleted AFTER DELETE ON conversation
            BEGIN
                DELETE FROM change_log WHERE conversation_id = OLD.id AND kind = 'message';
                INSERT INTO change_log (kind, conversation_id, title, created_at)
                VALUES ('deleted', OLD.id, OLD.title, (julianday('now') - 2440587.5) * 86400.0);
            END""",
    """CREATE TRIGGER change_log_message AFTER INSERT ON message
            BEGIN INSERT INTO change_log (kind, conversation_id, message_id, created_at)
                  VALUES ('message', NEW.conversation_id, NEW.id, NEW.created_at); END""",
)
"""The change log's triggers (v3); v7 makes them again around the table it rebuilds."""

CHANGE_LOG_KINDS = "'created', 'renamed', 'deleted', 'message'"


def change_log_table(name: str, kinds: str) -> str:
    # AUTOINCREMENT: a position is never reused, even after the newest rows are deleted.
    return f"""CREATE TABLE {name} (
                position INTEGER PRIMARY KEY AUTOINCREMENT,
                kind TEXT NOT NULL CHECK (kind IN ({kinds})),
                conversation_id TEXT NOT NULL,
                message_id TEXT,
                title TEXT,
                created_at REAL NOT NULL
            )"""


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "conversation, message (audit log) and working_memory tables",
        (
            """CREATE TABLE conversation (
                id TEXT PRIMARY KEY,
                title TEXT,
                is_temporal INTEGER NOT NULL DEFAULT 0 CHECK (is_temporal IN (0, 1)),
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL
            )""",
            """CREATE TABLE message (
                id TEXT PRIMARY KEY,
                conversation_id TEXT NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
                turn_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                role TEXT NOT NULL
                    CHECK (role IN ('user', 'assistant', 'tool_call', 'tool_result', 'error')),
                payload_json TEXT NOT NULL,
                created_at REAL NOT NULL
            )""",
            "CREATE UNIQUE INDEX message_conversation_seq ON message(conversation_id, seq)",
            """CREATE TABLE working_memory (
                id INTEGER PRIMARY KEY,
                conversation_id TEXT NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
                turn_id TEXT NOT NULL,
                order_idx INTEGER NOT NULL,
                source_message_id TEXT REFERENCES message(id) ON DELETE CASCADE,
                payload_json TEXT NOT NULL,
                created_at REAL NOT NULL
            )""",
        ),
    ),
    Migration(
        2,
        "append-only audit log enforced by triggers; indexes for turns, working memory, listing",
        (
            """CREATE TRIGGER message_no_update BEFORE UPDATE ON message
            BEGIN SELECT RAISE(ABORT, 'message is append-only: rows cannot be updated'); END""",
            # Deleting the conversation cascades (the parent row is gone by then); nothing else may delete.
            """CREATE TRIGGER message_no_delete BEFORE DELETE ON message
            WHEN EXISTS (SELECT 1 FROM conversation WHERE id = OLD.conversation_id)
            BEGIN SELECT RAISE(ABORT, 'message is append-only: delete the conversation instead'); END""",
            "CREATE INDEX message_conversation_turn ON message(conversation_id, turn_id)",
            "CREATE UNIQUE INDEX working_memory_conversation_order ON working_memory(conversation_id, order_idx)",
            "CREATE INDEX working_memory_source ON working_memory(source_message_id)",
            "CREATE INDEX conversation_updated ON conversation(is_temporal, updated_at)",
        ),
    ),
    Migration(
        3,
        "change_log: numbered created/renamed/deleted/message events, written by triggers",
        (
            change_log_table("change_log", CHANGE_LOG_KINDS),
            *CHANGE_LOG_TRIGGERS,
        ),
    ),
    Migration(
        4,
        "turn_usage: the tokens each turn spent, cached and cache-written ones apart, and its model",
        (
            """CREATE TABLE turn_usage (
                conversation_id TEXT NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
                turn_id TEXT NOT NULL,
                model TEXT,
                requests INTEGER NOT NULL DEFAULT 0,
                input_tokens INTEGER NOT NULL DEFAULT 0,
                cached_tokens INTEGER NOT NULL DEFAULT 0,
                cache_write_tokens INTEGER NOT NULL DEFAULT 0,
                output_tokens INTEGER NOT NULL DEFAULT 0,
                created_at REAL NOT NULL,
                PRIMARY KEY (conversation_id, turn_id)
            )""",
        ),
    ),
    Migration(
        5,
        "notebook_binding: the id of the notebook this file belongs to, and where the file came from",
        (
            """CREATE TABLE notebook_binding (
                only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
                notebook_id TEXT NOT NULL,
                origin TEXT,
                bound_at REAL NOT NULL
            )""",
        ),
    ),
    Migration(
        6,
        "conversation.mode: the session's mode as the user set it (NULL: the default)",
        (
            """ALTER TABLE conversation ADD COLUMN mode TEXT
                CHECK (mode IS NULL OR mode IN ('ask', 'agent', 'auto', 'plan'))""",
        ),
    ),
    Migration(
        7,
        "change_log: a 'mode' event when a session's mode changes (the table rebuilt for its new kind)",
        (
            # SQLite can't change a CHECK in place: the table is copied into one that allows 'mode', with
            # its positions and its AUTOINCREMENT counter, and the triggers that write to it are made
            # again around it (a trigger naming a table that is gone for a moment stops the rename).
            *(f"DROP TRIGGER change_log_{name}" for name in ("created", "renamed", "deleted", "message")),
            change_log_table("change_log_v7", CHANGE_LOG_KINDS + ", 'mode'"),
            "INSERT INTO change_log_v7 SELECT position, kind, conversation_id, message_id, title, created_at"
            " FROM change_log",
            "DELETE FROM sqlite_sequence WHERE name = 'change_log_v7'",
            "INSERT INTO sqlite_sequence (name, seq) SELECT 'change_log_v7', seq FROM sqlite_sequence"
            " WHERE name = 'change_log'",
            "DROP TABLE change_log",
            "ALTER TABLE change_log_v7 RENAME TO change_log",
            *CHANGE_LOG_TRIGGERS,
            """CREATE TRIGGER change_log_mode AFTER UPDATE OF mode ON conversation
            WHEN OLD.mode IS NOT NEW.mode
            BEGIN INSERT INTO change_log (kind, conversation_id, title, created_at)
                  VALUES ('mode', NEW.id, NEW.title, (julianday('now') - 2440587.5) * 86400.0); END""",
        ),
    ),
)

CURRENT_VERSION = MIGRATIONS[-1].version


def _version_and_tables(conn: sqlite3.Connection) -> tuple[int, int]:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    tables = int(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
    return version, tables


def inspect_file(path: Path) -> tuple[int, int]:
    """(user_version, number of schema objects), read without writing a byte; (0, 0) if empty."""
    if not exists_with_data(path):
        return 0, 0
    return read_only(path, _version_and_tables)


def read_version(path: Path) -> int:
    """The file's user_version read without writing a byte; 0 for a missing or empty file."""
    return inspect_file(path)[0]


def check_version(path: Path) -> int:
    """Refuse a newer or foreign file before any connection can write to it (WAL switch, migrations)."""
    version, objects = inspect_file(path)
    if version > CURRENT_VERSION:
        raise SchemaVersionError(path, version, CURRENT_VERSION)
    if version == 0 and objects:
        raise NotASessionDBError(path, "it has tables but no agentik schema version")
    return version


def migrate(conn: sqlite3.Connection, path: Path, target: int = CURRENT_VERSION) -> int:
    """Bring the file up to ``target`` in one write transaction; returns the version reached.

    ``conn`` must be in autocommit mode (``isolation_level=None``). ``target`` below
    CURRENT_VERSION is for tests that build files as older releases left them.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > CURRENT_VERSION:
            raise SchemaVersionError(path, version, CURRENT_VERSION)
        if version == 0 and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise NotASessionDBError(path, "it has tables but no agentik schema version")
        for migration in MIGRATIONS:
            if version < migration.version <= target:
                for statement in migration.statements:
                    conn.execute(statement)
                version = migration.version
        conn.execute(f"PRAGMA user_version = {int(version)}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return version


MODE_VERSION = 6
"""The first version with `conversation.mode`: the server's reader reads older files as they are."""


def conversation_select(version: int = CURRENT_VERSION) -> str:
    """A conversation row as ConversationInfo reads it: id, title, is_temporal, created, updated, the
    message_count (user and assistant rows), then the mode (NULL in a file older than MODE_VERSION).
    The kernels' SessionDB and the server's read-only SessionReader append their WHERE clauses."""
    mode = "c.mode" if version >= MODE_VERSION else "NULL"
    return f"""
    SELECT c.id, c.title, c.is_temporal, c.created_at, c.updated_at,
           (SELECT count(*) FROM message m
             WHERE m.conversation_id = c.id AND m.role IN ('user', 'assistant')),
           {mode}
    FROM conversation c
"""


CONVERSATION_SELECT = conversation_select()
"""The row in a file at the current version (a kernel's SessionDB migrates before it reads)."""


def conversation_info(row: tuple[Any, ...]) -> ConversationInfo:
    """A row of `conversation_select()` as the kernel and the server list it."""
    return ConversationInfo(
        id=row[0],
        title=row[1],
        is_temporal=bool(row[2]),
        created_at=row[3],
        updated_at=row[4],
        message_count=row[5],
        mode=row[6],
    )


LISTED = "c.is_temporal = 0 AND " + valid_id_sql("c.id")
"""Sessions listed and resumed, by the kernel and the server alike: saved ones whose id is a
session id (ids.py); a crafted file's other rows are never offered."""
LISTED_AND_HIDDEN = (
    "SELECT coalesce(sum(" + valid_id_sql("c.id") + "), 0), coalesce(sum(NOT " + valid_id_sql("c.id") + "), 0)"
    " FROM conversation c WHERE c.is_temporal = 0"
)
"""Saved sessions listed, and those hidden because their id is not a session id: one pass, one query."""
