"""Where the sessions file lives: beside the notebook the kernel is running.

The kernel is never told its notebook directly; each front end leaves a hint:

- Jupyter Server sets the env var ``JPY_SESSION_NAME`` and the ``__session__`` global to
  the notebook's absolute path. For consoles the name is not a notebook (``console-1``),
  so only values ending in ``.ipynb`` are accepted.
- VS Code sets the ``__vsc_ipynb_file__`` global.

When none is present (plain IPython, nbclient/papermill runs) the sessions file goes to
the working directory as ``agentik.agentik.db``, and the returned source says so, for
``%agent status`` to show.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentik_jupyter.errors import SymlinkedFileError

DB_SUFFIX = ".agentik.db"
FALLBACK_STEM = "agentik"
DB_PATH_ENV = "AGENTIK_DB_PATH"
NOT_FOUND = "not found: using the working directory"
# The files SQLite keeps beside a database; any of them linked elsewhere would be written through.
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")


def _as_notebook(value: Any, cwd: Path) -> Path | None:
    """The value as a notebook path, or None if it does not name one.

    A relative value is taken as a file in the kernel's cwd, because kernels started by a
    notebook server run in the notebook's folder.
    """
    if not isinstance(value, (str, os.PathLike)):
        return None
    text = os.fspath(value).strip()
    if not text.lower().endswith(".ipynb"):
        return None
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = cwd / path.name
    return path


def find_notebook_path(
    user_ns: Mapping[str, Any], environ: Mapping[str, str], cwd: Path | None = None
) -> tuple[Path | None, str]:
    """The notebook this kernel runs, and a short phrase saying how we know."""
    here = Path.cwd() if cwd is None else cwd
    candidates: list[tuple[Any, str]] = [
        (environ.get("JPY_SESSION_NAME"), "JPY_SESSION_NAME (Jupyter Server)"),
        (user_ns.get("__session__"), "__session__ (Jupyter Server)"),
        (user_ns.get("__vsc_ipynb_file__"), "__vsc_ipynb_file__ (VS Code)"),
    ]
    for value, source in candidates:
        path = _as_notebook(value, here)
        if path is not None:
            return path, source
    return None, NOT_FOUND


def db_path_for(notebook_path: Path | None, environ: Mapping[str, str], cwd: Path) -> Path:
    """``<notebook dir>/<stem>.agentik.db``; ``AGENTIK_DB_PATH`` wins; else ``<cwd>/agentik.agentik.db``.

    A relative ``AGENTIK_DB_PATH`` is taken relative to ``cwd``.
    """
    override = environ.get(DB_PATH_ENV, "").strip()
    if override:
        path = Path(override).expanduser()
        return path if path.is_absolute() else cwd / path
    if notebook_path is not None:
        return notebook_path.parent / f"{notebook_path.stem}{DB_SUFFIX}"
    return cwd / f"{FALLBACK_STEM}{DB_SUFFIX}"


@dataclass(frozen=True)
class DBLocation:
    """The resolved sessions file and the story of how it was chosen (for ``%agent status``)."""

    db_path: Path
    notebook_path: Path | None
    source: str

    def describe(self) -> str:
        return f"sessions file: {self.db_path} (notebook: {self.source})"


def locate_db(user_ns: Mapping[str, Any], environ: Mapping[str, str], cwd: Path | None = None) -> DBLocation:
    """find_notebook_path + db_path_for in one call, noting when AGENTIK_DB_PATH decided."""
    here = Path.cwd() if cwd is None else cwd
    notebook, source = find_notebook_path(user_ns, environ, here)
    if environ.get(DB_PATH_ENV, "").strip():
        source = f"{source}; file set by {DB_PATH_ENV}"
    return DBLocation(db_path_for(notebook, environ, here), notebook, source)


def refuse_symlinks(path: Path) -> None:
    """Raise SymlinkedFileError if ``path`` or one of its companion files is a symbolic link.

    Only the files themselves: a linked *folder* on the way is the user's layout, as in the file
    browser. Missing files are fine (SQLite creates them, as regular files, here).
    """
    for link in (path, *(path.with_name(path.name + suffix) for suffix in COMPANION_SUFFIXES)):
        try:
            is_link = stat.S_ISLNK(os.lstat(link).st_mode)
        except OSError:
            continue
        if is_link:
            raise SymlinkedFileError(path, link, _link_target(link))


def _link_target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError:
        return "an unreadable target"
