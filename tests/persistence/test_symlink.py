"""A sessions file (or its -wal/-shm/-journal) that is a symbolic link is refused, and nothing is written through it.

A shipped project can hold `nb.agentik.db -> ~/.bashrc.db` or a dangling link to where it wants a file
created; SQLite follows links, so opening it wrote the schema (and every turn) wherever the link pointed.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from agentik_jupyter.persistence import SessionDB, SessionDBError
from agentik_jupyter.types import AssistantMessage, UserMessage

COMPANIONS = ["-wal", "-shm", "-journal"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def refused(path: Path, why: str) -> str:
    with pytest.raises(SessionDBError) as info:
        SessionDB(path)
    message = str(info.value)
    assert why in message and "symbolic link" in message, message
    return message


def test_a_link_to_an_empty_file_is_refused_and_the_file_stays_empty(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "victim.db"
    target.write_bytes(b"")
    link = tmp_path / "nb.agentik.db"
    link.symlink_to(target)
    message = refused(link, str(link))
    assert str(target) in message and "nothing was" in message
    assert target.read_bytes() == b""
    assert listing(elsewhere) == ["victim.db"]
    assert listing(tmp_path) == ["elsewhere", "nb.agentik.db"] and link.is_symlink()


def test_a_dangling_link_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    target = tmp_path / "planted" / "created.db"
    target.parent.mkdir()
    link = tmp_path / "nb.agentik.db"
    link.symlink_to(target)
    refused(link, str(link))
    assert not target.exists() and listing(target.parent) == []


def test_a_link_to_a_real_sessions_file_is_refused_too(tmp_path: Path) -> None:
    real = tmp_path / "real.agentik.db"
    with SessionDB(real) as db:
        conv = db.create_conversation("kept")
        turn = db.begin_turn(conv.id, UserMessage(content="q"))
        db.append(conv.id, turn, AssistantMessage(content="a"))
    before = digest(real)
    link = tmp_path / "nb.agentik.db"
    link.symlink_to(real)
    refused(link, str(link))
    assert digest(real) == before
    assert listing(tmp_path) == ["nb.agentik.db", "real.agentik.db"]  # no -wal or -shm beside either


@pytest.mark.parametrize("suffix", COMPANIONS)
def test_a_linked_companion_file_is_refused(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / "nb.agentik.db"
    with SessionDB(path) as db:
        db.create_conversation("before")
    before = digest(path)
    target = tmp_path / "elsewhere" / f"target{suffix}"
    target.parent.mkdir()
    companion = tmp_path / f"nb.agentik.db{suffix}"
    companion.symlink_to(target)
    message = refused(path, str(companion))
    assert str(path) in message
    assert not target.exists()
    assert digest(path) == before


def test_a_link_swapped_in_while_opening_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check after SQLite opened the file: a link put in place between our look and SQLite's open
    (here: just before sqlite3.connect) is found before anything is written through it."""
    path = tmp_path / "nb.agentik.db"
    target = tmp_path / "elsewhere" / "victim.db"
    target.parent.mkdir()
    real_connect = sqlite3.connect

    def swap_then_connect(database: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        if Path(str(database)) == path and not path.is_symlink():
            path.unlink()
            path.symlink_to(target)
        return real_connect(database, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite3, "connect", swap_then_connect)
    refused(path, str(path))
    assert not target.exists() or target.read_bytes() == b""  # SQLite may have created it; nothing went in
    assert listing(target.parent) in ([], ["victim.db"])


def test_a_plain_file_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "nb.agentik.db"
    with SessionDB(path) as db:
        conv = db.create_conversation("fine")
    with SessionDB(path) as db:
        assert db.get_conversation(conv.id).title == "fine"


def test_reading_through_a_link_is_refused(tmp_path: Path) -> None:
    """The server's read-only routes (SessionReader) refuse a linked file too: none of its rows are served."""
    from agentik_jupyter.persistence import SessionReader

    real = tmp_path / "real.agentik.db"
    db = SessionDB(real)
    db.create_conversation("From the linked file")
    db.close()
    link = tmp_path / "nb.agentik.db"
    link.symlink_to(real)
    with pytest.raises(SessionDBError, match="symbolic link"):
        SessionReader(link).list_conversations()
