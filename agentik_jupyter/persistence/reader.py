"""The sessions file as the server reads it: read-only, never migrated, paged.

Every call opens the file read-only (``readonly.read_only``), reads one snapshot and closes
it, so GET routes never write, never take the write lock kernels need, and work on a file
the server may not write. A file from before the change log (schema < 3) is still listed
and paged; it simply has no events until a kernel opens (and migrates) it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import TypeAdapter

from agentik_jupyter.errors import ConversationNotFoundError, NotASessionDBError, SchemaVersionError
from agentik_jupyter.ids import is_session_id, valid_id_sql
from agentik_jupyter.persistence.models import AuditEntry, AuditPage, ConversationInfo
from agentik_jupyter.persistence.pages import read_page
from agentik_jupyter.persistence.readonly import exists_with_data, read_only
from agentik_jupyter.persistence.schema import (
    CURRENT_VERSION,
    LISTED,
    LISTED_AND_HIDDEN,
    conversation_info,
    conversation_select,
)
from agentik_jupyter.types import PersistedMessage

PAGE_SIZE = 100
MAX_PAGE_SIZE = 500
EVENTS_PER_READ = 200
CHANGE_LOG_VERSION = 3

_RECORD = TypeAdapter(PersistedMessage)


class SessionList(NamedTuple):
    """One page of sessions and the counts the list route reports, all from one snapshot."""

    sessions: list[ConversationInfo]
    total: int  # sessions listed, on every page
    hidden: int  # saved sessions not listed because their id is not a session id (a crafted file)
    position: int  # the change position they reflect


def _entry(row: tuple[Any, ...]) -> AuditEntry:
    seq, turn, created, payload = row
    return AuditEntry(seq=seq, turn_id=turn, created_at=created, record=_RECORD.validate_json(payload))


def _version(conn: sqlite3.Connection, path: Path) -> int:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > CURRENT_VERSION:
        raise SchemaVersionError(path, version, CURRENT_VERSION)
    if version == 0:
        if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise NotASessionDBError(path, "it has tables but no agentik schema version")
    return version


def _position(conn: sqlite3.Connection, version: int) -> int:
    if version < CHANGE_LOG_VERSION:
        return 0
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'change_log'").fetchone()
    return int(row[0]) if row else 0


class SessionReader:
    """Read-only queries on one sessions file; a missing or empty file reads as no sessions."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def _read(self, body: Any, empty: Any) -> Any:
        if not exists_with_data(self.path):
            return empty

        def run(conn: sqlite3.Connection) -> Any:
            version = _version(conn, self.path)
            return empty if version == 0 else body(conn, version)

        return read_only(self.path, run)

    def list_page(self, limit: int = PAGE_SIZE, offset: int = 0) -> SessionList:
        """One page of sessions, most recently updated first, with the listed and hidden counts.

        The id rule is applied in SQL (``LISTED``; ids.py's test keeps it equal to Python's)."""

        def body(conn: sqlite3.Connection, version: int) -> SessionList:
            rows = conn.execute(
                conversation_select(version)
                + " WHERE "
                + LISTED
                + " ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
            total, hidden = conn.execute(LISTED_AND_HIDDEN).fetchone()
            return SessionList([conversation_info(r) for r in rows], total, hidden, _position(conn, version))

        return self._read(body, SessionList([], 0, 0, 0))

    def list_conversations(self, limit: int = PAGE_SIZE, offset: int = 0) -> tuple[list[ConversationInfo], int]:
        """One page of sessions, most recently updated first, and the change position they reflect."""
        listing = self.list_page(limit, offset)
        return listing.sessions, listing.position

    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        """One session; an id that is not a session id is never served (ConversationNotFoundError)."""
        if not is_session_id(conversation_id):
            raise ConversationNotFoundError(conversation_id, self.path)

        def body(conn: sqlite3.Connection, version: int) -> ConversationInfo | None:
            row = conn.execute(conversation_select(version) + " WHERE c.id = ?", (conversation_id,)).fetchone()
            return conversation_info(row) if row else None

        info = self._read(body, None)
        if info is None:
            raise ConversationNotFoundError(conversation_id, self.path)
        return info

    def audit_log(
        self,
        conversation_id: str,
        limit: int = PAGE_SIZE,
        *,
        before_seq: int | None = None,
        after_seq: int | None = None,
    ) -> AuditPage:
        """A page of one session's audit log, oldest first.

        ``after_seq`` reads forward (the rows after it; ``next_after_seq`` continues);
        otherwise the newest ``limit`` rows before ``before_seq`` (``next_before_seq`` pages back).
        """
        if limit <= 0:
            raise ValueError("limit must be positive")
        if not is_session_id(conversation_id):
            raise ConversationNotFoundError(conversation_id, self.path)

        def body(conn: sqlite3.Connection, _version: int) -> AuditPage | None:
            if conn.execute("SELECT 1 FROM conversation WHERE id = ?", (conversation_id,)).fetchone() is None:
                return None
            select = "SELECT seq, turn_id, created_at, payload_json FROM message WHERE conversation_id = ?"
            if after_seq is not None:
                rows = conn.execute(
                    select + " AND seq > ? ORDER BY seq LIMIT ?", (conversation_id, after_seq, limit + 1)
                ).fetchall()
                more = len(rows) > limit
                entries = [_entry(r) for r in rows[:limit]]
                return AuditPage(
                    entries=entries, next_before_seq=None, next_after_seq=entries[-1].seq if more else None
                )
            return read_page(conn, conversation_id, limit, before_seq)

        page = self._read(body, None)
        if page is None:
            raise ConversationNotFoundError(conversation_id, self.path)
        return page

    def position(self) -> int:
        """The newest change position: start an events stream here to miss nothing after it."""
        return self._read(lambda conn, version: _position(conn, version), 0)

    def changes_after(self, position: int, limit: int = EVENTS_PER_READ) -> list[dict[str, Any]]:
        """Events after ``position``, oldest first: created, renamed, deleted, message, mode.

        Each is one JSON-ready dict with its ``position``; a message event carries the audit
        row as the history route returns it (messages of sessions deleted since are gone);
        created/renamed/mode carry the title then and, if it still exists, the session now.
        Events of rows whose id is not a session id are left out (in SQL), as those rows are.
        """

        def body(conn: sqlite3.Connection, version: int) -> list[dict[str, Any]]:
            if version < CHANGE_LOG_VERSION:
                return []
            rows = conn.execute(
                "SELECT l.position, l.kind, l.conversation_id, l.title, l.created_at,"
                "       m.seq, m.turn_id, m.created_at, m.payload_json"
                " FROM change_log l LEFT JOIN message m ON m.id = l.message_id"
                " WHERE l.position > ? AND " + valid_id_sql("l.conversation_id") + " ORDER BY l.position LIMIT ?",
                (position, limit),
            ).fetchall()
            events: list[dict[str, Any]] = []
            for pos, kind, conv, title, at, seq, turn, created, payload in rows:
                event: dict[str, Any] = {"type": kind, "position": pos, "session_id": conv, "at": at}
                if kind == "message":
                    if payload is None:
                        continue
                    event["entry"] = _entry((seq, turn, created, payload)).model_dump(mode="json")
                else:
                    event["title"] = title
                    if kind != "deleted":  # the session as it is now (absent if deleted since)
                        row = conn.execute(conversation_select(version) + " WHERE c.id = ?", (conv,)).fetchone()
                        if row is not None:
                            event["session"] = conversation_info(row).model_dump()
                events.append(event)
            return events

        return self._read(body, [])
