"""Opening the sessions file and running transactions that survive lock contention.

Several processes may write one file (two kernels on one notebook). WAL lets readers run
beside the writer; ``BEGIN IMMEDIATE`` takes the write lock up front, so a transaction
never has to upgrade a read lock (the case where SQLite gives up at once with
SQLITE_BUSY instead of waiting); ``busy_timeout`` makes SQLite wait for the lock; and
whatever SQLITE_BUSY/LOCKED still escapes is retried here with backoff, so "database is
locked" never reaches the user.
"""

from __future__ import annotations

import errno
import os
import random
import sqlite3
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from agentik_jupyter.errors import DatabaseBusyError, NotASessionDBError, SymlinkedFileError
from agentik_jupyter.persistence.errors import open_error
from agentik_jupyter.persistence.paths import refuse_symlinks

T = TypeVar("T")

DEFAULT_BUSY_TIMEOUT_S = 10.0
DEFAULT_RETRY_DEADLINE_S = 120.0
_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}


def is_busy(exc: BaseException) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED (and their extended codes)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _BUSY_CODES
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def with_retry(fn: Callable[[], T], *, deadline_s: float = DEFAULT_RETRY_DEADLINE_S, what: str = "") -> T:
    """Run ``fn`` again (with jittered backoff) while SQLite reports the file busy."""
    give_up = time.monotonic() + deadline_s
    delay = 0.005
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            if time.monotonic() >= give_up:
                raise DatabaseBusyError(
                    f"{what or 'the sessions file'} stayed locked by another process for "
                    f"{deadline_s:.0f} s; is a kernel stuck? ({exc})"
                ) from exc
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.25)


def connect(path: Path, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """A connection in autocommit mode (we issue BEGIN ourselves) with WAL and foreign keys on.

    ``check_same_thread=False`` because the async facade calls from worker threads; the
    caller serialises use with a lock. The file and its companions must not be symbolic links
    (SymlinkedFileError): checked before SQLite opens the file and again before anything is
    written, so a link swapped in meanwhile is caught too.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        refuse_symlinks(path)
        identity = _create_no_follow(path)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s)
    except (OSError, sqlite3.DatabaseError) as exc:
        raise open_error(path, exc) from exc
    try:
        _check_opened(conn, path, identity)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        mode = with_retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0], what=str(path))
        if str(mode).lower() != "wal":
            raise NotASessionDBError(path, f"cannot switch it to WAL mode (got {mode!r})")
        # In WAL mode NORMAL is safe against process crashes (a killed kernel loses nothing
        # committed); only an OS crash or power cut can drop the last transactions.
        conn.execute("PRAGMA synchronous = NORMAL")
        refuse_symlinks(path)  # the -wal and -shm SQLite has just opened
    except sqlite3.DatabaseError as exc:
        conn.close()
        if is_busy(exc):
            raise
        raise open_error(path, exc) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _create_no_follow(path: Path) -> tuple[int, int]:
    """Open (creating if missing) ``path`` without following a link; its (device, inode).

    O_NOFOLLOW makes the kernel refuse a link that appeared since ``refuse_symlinks`` looked,
    instead of creating the file wherever the link points.
    """
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            refuse_symlinks(path)
        raise
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return st.st_dev, st.st_ino


def _check_opened(conn: sqlite3.Connection, path: Path, identity: tuple[int, int]) -> None:
    """The file SQLite opened is the regular file we created or found, not a link put there since.

    SQLite resolves links when it opens a database and reports the path it opened, so a name that
    is not ours means it went through one; the inode check catches a file replaced under that name.
    """
    refuse_symlinks(path)
    st = os.lstat(path)
    opened = conn.execute("PRAGMA database_list").fetchone()[2]
    ours = os.path.join(os.path.realpath(path.parent), path.name)
    if (st.st_dev, st.st_ino) != identity or not stat.S_ISREG(st.st_mode) or (opened and opened != ours):
        raise SymlinkedFileError(path, path, opened or "another file")


def write_transaction(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``body`` inside ``BEGIN IMMEDIATE … COMMIT``; roll back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = body(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def read_snapshot(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], T]) -> T:
    """Run several SELECTs against one consistent snapshot (a deferred read transaction)."""
    conn.execute("BEGIN")
    try:
        return body(conn)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")
