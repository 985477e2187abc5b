"""Moving, copying, removing and setting aside a sessions file together with SQLite's side files.

A sessions file in WAL mode is up to three files: `x.agentik.db`, `x.agentik.db-wal` (committed
rows not yet copied into the main file) and `x.agentik.db-shm` (the WAL's index). Moving only the
main file would lose the rows still in the WAL. So every move first settles the file (a
checkpoint copies the WAL into the main file; when ours is the last connection SQLite removes
the side files), then moves whatever side files remain with it, under the same new name.
A copy goes through SQLite's backup API, which reads one consistent snapshot, WAL included.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from agentik_jupyter.errors import SymlinkedFileError
from agentik_jupyter.persistence.connection import DEFAULT_BUSY_TIMEOUT_S, with_retry
from agentik_jupyter.persistence.paths import COMPANION_SUFFIXES, DB_SUFFIX, refuse_symlinks

ASIDE_MARK = ".agentik-aside-"


def companions(path: Path) -> list[Path]:
    """SQLite's side files of `path` (existing or not)."""
    return [path.with_name(path.name + suffix) for suffix in COMPANION_SUFFIXES]


def any_exists(path: Path) -> bool:
    return any(os.path.lexists(p) for p in (path, *companions(path)))


def settle(path: Path) -> None:
    """Copy the WAL into the main file, so the main file alone holds every committed row.

    Skipped for a file that is not ours to open (a link, or not an SQLite file): it is moved as it is.
    """
    try:
        refuse_symlinks(path)
        conn = sqlite3.connect(path, isolation_level=None, timeout=DEFAULT_BUSY_TIMEOUT_S)
    except (SymlinkedFileError, sqlite3.Error, OSError):
        return
    try:
        with_retry(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall(), what=str(path))
    except sqlite3.DatabaseError:
        pass  # not an SQLite file: nothing to settle
    finally:
        conn.close()


def _move(src: Path, dst: Path) -> None:
    try:
        os.rename(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(os.fspath(src), os.fspath(dst))  # another file system


def move_sessions_file(src: Path, dst: Path) -> bool:
    """Move `src` and its side files to `dst`; False when there was nothing to move.

    Raises FileExistsError when `dst` (or one of its side files) exists: the caller decides what
    happens to a file already there, never this function.
    """
    if not os.path.lexists(src):
        return False
    if any_exists(dst):
        raise FileExistsError(errno.EEXIST, "a sessions file is already there", os.fspath(dst))
    dst.parent.mkdir(parents=True, exist_ok=True)
    settle(src)
    _move(src, dst)
    for old, new in zip(companions(src), companions(dst), strict=True):
        if os.path.lexists(old):
            _move(old, new)
    return True


def copy_sessions_file(src: Path, dst: Path) -> bool:
    """A consistent copy of `src` (committed rows, the WAL's included) at `dst`; False if no `src`."""
    if not os.path.isfile(src):
        return False
    if any_exists(dst):
        raise FileExistsError(errno.EEXIST, "a sessions file is already there", os.fspath(dst))
    refuse_symlinks(src)
    source = sqlite3.connect(src, timeout=DEFAULT_BUSY_TIMEOUT_S)  # read only; its side files go when it closes
    try:
        target = sqlite3.connect(dst)
        try:
            with_retry(lambda: source.backup(target), what=str(src))
        finally:
            target.close()
    finally:
        source.close()
    return True


def aside_path(path: Path, when: float | None = None) -> Path:
    """Where a file that is not this notebook's is kept: `a.agentik.db` -> `a.agentik-aside-<UTC time>.db`.

    The new name does not end in `.agentik.db`, so no notebook ever takes it up by its name.
    """
    stem = path.name[: -len(DB_SUFFIX)] if path.name.endswith(DB_SUFFIX) else path.stem
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if when is None else when))
    candidate = path.with_name(f"{stem}{ASIDE_MARK}{stamp}.db")
    n = 1
    while any_exists(candidate):
        n += 1
        candidate = path.with_name(f"{stem}{ASIDE_MARK}{stamp}-{n}.db")
    return candidate


def set_aside(path: Path) -> Path | None:
    """Keep `path` under another name (see aside_path); None when there was no file."""
    target = aside_path(path)
    return target if move_sessions_file(path, target) else None


def remove_sessions_file(path: Path, remove: Callable[[Path], None]) -> bool:
    """Settle `path`, then `remove` it and any side file left (to the trash, or unlinked)."""
    if not os.path.lexists(path):
        return False
    settle(path)
    remove(path)
    for side in companions(path):
        if os.path.lexists(side):
            remove(side)
    return True
