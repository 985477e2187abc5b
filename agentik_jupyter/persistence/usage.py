"""Tokens spent per turn, in the sessions file: written when a turn ends, summed for `%agent usage`."""

from __future__ import annotations

import sqlite3

from agentik_jupyter.persistence.models import TurnUsage
from agentik_jupyter.types import Usage, now


def record_usage(
    conn: sqlite3.Connection, conversation_id: str, turn_id: str, usage: Usage, model: str | None, requests: int
) -> None:
    """Save (or replace: a turn is recorded once, when it ends) the turn's tokens."""
    conn.execute(
        "INSERT OR REPLACE INTO turn_usage (conversation_id, turn_id, model, requests, input_tokens, cached_tokens,"
        " cache_write_tokens, output_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            conversation_id,
            turn_id,
            model,
            requests,
            usage.input_tokens or 0,
            usage.cached_tokens or 0,
            usage.cache_write_tokens or 0,
            usage.output_tokens or 0,
            now(),
        ),
    )


def turn_usages(conn: sqlite3.Connection, conversation_id: str) -> list[TurnUsage]:
    """Every recorded turn of the conversation, oldest first."""
    rows = conn.execute(
        "SELECT turn_id, model, requests, input_tokens, cached_tokens, cache_write_tokens, output_tokens"
        " FROM turn_usage WHERE conversation_id = ? ORDER BY created_at, rowid",
        (conversation_id,),
    ).fetchall()
    keys = ("turn_id", "model", "requests", "input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens")
    return [TurnUsage.model_validate(dict(zip(keys, row))) for row in rows]
