"""The sessions list in one read: the page, the listed total and the hidden count come from one
snapshot of a crafted file (saved, temporary and invalid-id rows), counted by SQL alone."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from agentik_jupyter.persistence import SessionDB, SessionReader

CRAFTED = ["conv_evil\nimport os", "conv_nul\x00x", "x" * 65, "conv_é", "a b"]


def crafted_file(path: Path) -> list[str]:
    """Three saved sessions, one temporary, and the crafted ids (newest); the saved ids, newest first."""
    with SessionDB(path) as db:
        saved = [db.create_conversation(f"saved {i}").id for i in range(3)]
    conn = sqlite3.connect(path)
    with conn:
        later = time.time() + 60
        conn.execute(
            "INSERT INTO conversation (id, title, is_temporal, created_at, updated_at)"
            " VALUES ('conv_temp', 't', 1, ?, ?)",
            (later, later),
        )
        for i, bad in enumerate(CRAFTED):
            conn.execute(
                "INSERT INTO conversation (id, title, is_temporal, created_at, updated_at) VALUES (?, 'x', 0, ?, ?)",
                (bad, later, later + i),
            )
    conn.close()
    return list(reversed(saved))


def test_one_read_gives_the_page_the_total_and_the_hidden_count(tmp_path: Path) -> None:
    path = tmp_path / "nb.agentik.db"
    saved = crafted_file(path)
    listing = SessionReader(path).list_page(limit=2)
    assert [s.id for s in listing.sessions] == saved[:2]  # crafted rows are newer, yet not on the page
    assert (listing.total, listing.hidden) == (3, len(CRAFTED)) and listing.position > 0
    rest = SessionReader(path).list_page(limit=2, offset=2)
    assert [s.id for s in rest.sessions] == saved[2:] and (rest.total, rest.hidden) == (3, len(CRAFTED))


def test_a_missing_file_lists_nothing(tmp_path: Path) -> None:
    listing = SessionReader(tmp_path / "none.agentik.db").list_page()
    assert (listing.sessions, listing.total, listing.hidden, listing.position) == ([], 0, 0, 0)
