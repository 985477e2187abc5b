"""Which notebook a sessions file belongs to: an id in the notebook's metadata, recorded in the file.

A file name is not an owner: a notebook that later takes an old name must not be handed the old
notebook's sessions. So the notebook carries `metadata.agentik.notebook_id` (the Jupyter server
stamps it when the notebook is saved) and the sessions file records the same id in its
`notebook_binding` row. A file opened for a notebook whose id differs from the one the file
records is a stranger's: it is set aside (kept under another name, never deleted) and the
notebook starts a new file. A notebook with no id yet (never saved through a server that runs
our extension) cannot be told apart, and keeps the file its name finds.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentik_jupyter.persistence.readonly import exists_with_data, read_only
from agentik_jupyter.persistence.relocate import set_aside
from agentik_jupyter.types import now

METADATA_KEY = "agentik"
ID_KEY = "notebook_id"
BINDING_VERSION = 5
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def new_notebook_id() -> str:
    return uuid.uuid4().hex


def notebook_id_in(metadata: Any) -> str | None:
    """`metadata.agentik.notebook_id` when it is an id; None otherwise (a crafted value is no id)."""
    section = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    value = section.get(ID_KEY) if isinstance(section, dict) else None
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def read_notebook_id(notebook: Path | None) -> str | None:
    """The id saved in the notebook file; None when it has none or cannot be read."""
    if notebook is None:
        return None
    try:
        with open(notebook, encoding="utf-8") as f:
            content = json.load(f)
    except (OSError, ValueError):
        return None
    return notebook_id_in(content.get("metadata") if isinstance(content, dict) else None)


@dataclass(frozen=True)
class Binding:
    notebook_id: str
    origin: str | None  # "copied from a.ipynb", or None for a file made here


def binding_row(conn: sqlite3.Connection) -> Binding | None:
    if int(conn.execute("PRAGMA user_version").fetchone()[0]) < BINDING_VERSION:
        return None
    row = conn.execute("SELECT notebook_id, origin FROM notebook_binding WHERE only_row = 1").fetchone()
    return Binding(row[0], row[1]) if row else None


def write_binding(conn: sqlite3.Connection, notebook_id: str, origin: str | None) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO notebook_binding (only_row, notebook_id, origin, bound_at) VALUES (1, ?, ?, ?)",
        (notebook_id, origin, now()),
    )


def file_binding(path: Path) -> Binding | None:
    """The binding `path` records, read without writing; None for a missing, empty or unbound file."""
    if not exists_with_data(path):
        return None
    try:
        return read_only(path, binding_row)
    except Exception:
        return None  # not a sessions file we can read: opening it says why


def stranger_file(path: Path, notebook_id: str | None) -> bool:
    """True when `path` records a notebook other than `notebook_id` (both known)."""
    if notebook_id is None:
        return False
    recorded = file_binding(path)
    return recorded is not None and recorded.notebook_id != notebook_id


def set_aside_if_stranger(path: Path, notebook_id: str | None) -> Path | None:
    """Keep a stranger's file under another name; where it went, or None when it is this notebook's."""
    if not stranger_file(path, notebook_id):
        return None
    return set_aside(path)


def aside_note(path: Path, aside: Path) -> str:
    return (
        f"{path.name} belonged to another notebook that had this name; it is kept as {aside.name}, "
        "and this notebook's sessions start in a new file."
    )
