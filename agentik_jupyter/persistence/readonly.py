"""Reading a sessions file without writing a byte of it, or beside it.

A plain ``?mode=ro`` connection is not enough: on a WAL-mode file SQLite creates ``-wal``
and ``-shm`` beside it, and leaves them there. When no ``-wal`` exists, no connection is
writing (a writer keeps it until the last one closes), so the whole database is in the main
file and is opened ``immutable`` (no locks, no side files). The read is accepted only if
the file is unchanged and still has no ``-wal`` afterwards; otherwise a kernel started
meanwhile and the read is done again, normally (its side files exist by then).

Used by the server's GET routes and to recognise a foreign or newer file before
``connect`` switches it to WAL.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from agentik_jupyter.errors import NotASessionDBError
from agentik_jupyter.persistence.connection import DEFAULT_BUSY_TIMEOUT_S, read_snapshot, with_retry
from agentik_jupyter.persistence.errors import open_error
from agentik_jupyter.persistence.paths import refuse_symlinks

T = TypeVar("T")

SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_FORMAT = 2  # header bytes 18/19 (write/read version): 1 legacy journal, 2 WAL
READ_ATTEMPTS = 3


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def side_file(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def is_wal_file(path: Path) -> bool:
    """True if the header says WAL mode; raises NotASessionDBError for a non-SQLite file."""
    try:
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError as exc:
        raise open_error(path, exc) from exc
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise NotASessionDBError(path, "it is not an SQLite database")
    return header[18] == WAL_FORMAT or header[19] == WAL_FORMAT


def _uri(path: Path, immutable: bool) -> str:
    target = quote(str(path.resolve()))
    return f"file:{target}?mode=ro" + ("&immutable=1" if immutable else "")


def connect_readonly(path: Path, *, immutable: bool) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(
            _uri(path, immutable),
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            timeout=DEFAULT_BUSY_TIMEOUT_S,
        )
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.DatabaseError as exc:
        raise open_error(path, exc) from exc
    return conn


def read_only(path: Path, body: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``body`` on one consistent, read-only snapshot of ``path``; nothing is written.

    ``path`` must exist and be non-empty (callers treat a missing file as "no sessions").
    A sessions file reached through a symbolic link is refused here too: a shipped project
    must not make the routes read one of the user's other files.
    """
    refuse_symlinks(path)
    for _ in range(READ_ATTEMPTS):
        before = _stamp(path)
        immutable = is_wal_file(path) and not side_file(path, "-wal").exists()
        conn = connect_readonly(path, immutable=immutable)
        try:
            result = with_retry(lambda: read_snapshot(conn, body), what=str(path))  # noqa: B023 (called here)
        except sqlite3.DatabaseError as exc:
            if not immutable or _stamp(path) == before:
                raise open_error(path, exc) from exc
            continue  # changed under an immutable read: read again
        finally:
            conn.close()
        if not immutable or (_stamp(path) == before and not side_file(path, "-wal").exists()):
            return result
    return _read_shared(path, body)


def _read_shared(path: Path, body: Callable[[sqlite3.Connection], T]) -> T:
    """Last resort while a kernel keeps opening and closing the file: a normal read-only read."""
    conn = connect_readonly(path, immutable=False)
    try:
        return with_retry(lambda: read_snapshot(conn, body), what=str(path))
    except sqlite3.DatabaseError as exc:
        raise open_error(path, exc) from exc
    finally:
        conn.close()


def exists_with_data(path: Path) -> bool:
    """A file we could read sessions from (missing or empty files hold none)."""
    try:
        return path.is_file() and os.path.getsize(path) > 0
    except OSError:
        return False
