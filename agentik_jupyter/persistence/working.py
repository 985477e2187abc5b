"""Working memory rows: what the model is sent, written a turn at a time.

A turn's question is written when the turn begins; its answer (assistant messages and whole
tool-call pairs) when it completes, once. These run inside the caller's write transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from agentik_jupyter.errors import TurnStateError
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.types import ChatMessage, now

# A working-memory row of the turn other than its user message: the turn was committed.
_COMMITTED = (
    "SELECT 1 FROM working_memory w WHERE w.conversation_id = ? AND w.turn_id = ?"
    " AND w.source_message_id IS NOT (SELECT m.id FROM message m WHERE m.conversation_id = w.conversation_id"
    " AND m.turn_id = w.turn_id AND m.role = 'user') LIMIT 1"
)


def _payload(message: ChatMessage) -> str:
    """The message as stored; a notice is never stored, so rows stay as earlier versions read them."""
    return scrub(message.model_dump_json(exclude={"notice"}))


def is_committed(conn: sqlite3.Connection, conversation_id: str, turn_id: str) -> bool:
    """The turn's answer is in working memory (its question alone does not count)."""
    return conn.execute(_COMMITTED, (conversation_id, turn_id)).fetchone() is not None


def insert_working(
    conn: sqlite3.Connection, conversation_id: str, turn_id: str, messages: Sequence[ChatMessage]
) -> None:
    """Append the turn's messages; a user message replaces the question already there."""
    if is_committed(conn, conversation_id, turn_id):
        raise TurnStateError(f"turn {turn_id!r} is already committed to working memory")
    asked = conn.execute(
        "SELECT 1 FROM working_memory WHERE conversation_id = ? AND turn_id = ? LIMIT 1", (conversation_id, turn_id)
    ).fetchone()
    if asked is not None:  # the question is there since begin_turn: the caller's copy replaces it
        for question in (m for m in messages if m.role == "user"):
            conn.execute(
                "UPDATE working_memory SET payload_json = ? WHERE conversation_id = ? AND turn_id = ?",
                (_payload(question), conversation_id, turn_id),
            )
        messages = [m for m in messages if m.role != "user"]
    order = conn.execute(
        "SELECT coalesce(max(order_idx), 0) FROM working_memory WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()[0]
    created = now()
    for message in messages:
        order += 1
        source = conn.execute(
            "SELECT id FROM message WHERE id = ? AND conversation_id = ?", (message.id, conversation_id)
        ).fetchone()
        conn.execute(
            "INSERT INTO working_memory"
            " (conversation_id, turn_id, order_idx, source_message_id, payload_json, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (conversation_id, turn_id, order, source[0] if source else None, _payload(message), created),
        )


def replace_working(conn: sqlite3.Connection, conversation_id: str, messages: Sequence[ChatMessage]) -> None:
    """Store new versions of messages already in working memory (found by their ids), where they are."""
    for message in messages:
        conn.execute(
            "UPDATE working_memory SET payload_json = ? WHERE conversation_id = ? AND json_extract(payload_json, '$.id') = ?",
            (_payload(message), conversation_id, message.id),
        )
