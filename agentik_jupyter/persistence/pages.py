"""Pages of a session's audit log, newest first, as the panel and the history reads ask for them.

A page cut by row count can start in the middle of a turn: its tool result without the call
that asked for it, or its answer without the question. ``whole_turns`` widens the page back to
the start of its first turn, so a transcript built page by page shows every turn once, whole.
"""

from __future__ import annotations

import sqlite3

from pydantic import TypeAdapter

from agentik_jupyter.persistence.models import AuditEntry, AuditPage
from agentik_jupyter.types import PersistedMessage

_RECORD = TypeAdapter(PersistedMessage)
_SELECT = "SELECT seq, turn_id, created_at, payload_json FROM message WHERE conversation_id = ?"
_NEWEST = 2**62


def read_page(
    conn: sqlite3.Connection,
    conversation_id: str,
    limit: int,
    before_seq: int | None = None,
    *,
    whole_turns: bool = False,
) -> AuditPage:
    """The newest ``limit`` rows before ``before_seq`` (all if None), oldest first; with
    ``whole_turns`` also the earlier rows of the page's first turn."""
    if limit <= 0:
        raise ValueError("limit must be positive")
    bound = before_seq if before_seq is not None else _NEWEST
    rows = conn.execute(
        _SELECT + " AND seq < ? ORDER BY seq DESC LIMIT ?", (conversation_id, bound, limit + 1)
    ).fetchall()
    more = len(rows) > limit
    rows = list(reversed(rows[:limit]))
    if whole_turns and more and rows:
        first_seq, first_turn = rows[0][0], rows[0][1]
        rows = (
            conn.execute(
                _SELECT
                + " AND seq < ? AND seq >= (SELECT min(seq) FROM message WHERE conversation_id = ? AND turn_id = ?)"
                " ORDER BY seq",
                (conversation_id, first_seq, conversation_id, first_turn),
            ).fetchall()
            + rows
        )
        more = (
            conn.execute(
                "SELECT 1 FROM message WHERE conversation_id = ? AND seq < ? LIMIT 1", (conversation_id, rows[0][0])
            ).fetchone()
            is not None
        )
    entries = [
        AuditEntry(seq=seq, turn_id=turn, created_at=created, record=_RECORD.validate_json(payload))
        for seq, turn, created, payload in rows
    ]
    return AuditPage(entries=entries, next_before_seq=entries[0].seq if more else None)
