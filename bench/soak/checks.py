"""The soak's invariants, checked after every step against what the steps did (the `Ledger`).

- every character the user typed is still in the file (the user's cell holds exactly what was typed);
- each accepted change is in the file exactly once, each rejected one is not;
- each cell the user accepted the agent's deletion of is gone, and every other cell the user wrote or
  kept (a deletion they rejected) is in the file exactly once;
- the file is valid nbformat;
- the sessions file beside the notebook passes `PRAGMA integrity_check` and holds every question
  asked (a turn's question is saved before its model is called, so a turn cut off by a restart
  keeps it), and no other notebook name has a sessions file (it followed every rename and move).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

SETTLE_S = 30.0
"""How long the invariants may take to hold after a step: the server moves a sessions file after a
rename has answered, and a kernel writes the question of a turn it has just begun."""


@dataclass
class Ledger:
    """What the steps did, which the files must show."""

    typed: str = ""
    """Everything the user typed into their cell, in order."""
    questions: list[str] = field(default_factory=list)
    """A marker of each question asked, each unique."""
    accepted: list[str] = field(default_factory=list)
    """A marker of each change the user accepted."""
    rejected: list[str] = field(default_factory=list)
    """A marker of each change the user rejected."""
    kept: list[str] = field(default_factory=list)
    """Text of each cell that must stay: the user's own, and the agent's whose deletion was rejected."""
    deleted: list[str] = field(default_factory=list)
    """A marker of each cell whose deletion the user accepted."""


USER_CELL = "soak-user"
"""The id of the cell the user types into."""


def violations(notebook: Path, root: Path, ledger: Ledger) -> list[str]:
    """What does not hold now (empty when all does)."""
    found = _notebook_violations(notebook, ledger)
    found += _sessions_violations(notebook, ledger)
    strays = sorted(
        str(p.relative_to(root)) for p in root.rglob("*.agentik.db") if p != notebook.with_name(_db_name(notebook))
    )
    if strays:
        found.append(f"sessions files left under other names: {strays}")
    return found


def settled(notebook: Path, root: Path, ledger: Ledger, timeout: float = SETTLE_S) -> list[str]:
    """The violations still there after `timeout` seconds of polling (none: at the first clean look)."""
    deadline = time.monotonic() + timeout
    while True:
        found = violations(notebook, root, ledger)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.25)


def _db_name(notebook: Path) -> str:
    return f"{notebook.stem}.agentik.db"


def user_source(notebook: Path) -> str | None:
    """What the user's cell holds in the file now (None: no such cell, or no readable file)."""
    try:
        nb = nbformat.reads(notebook.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
    except Exception:  # a file mid-write or gone: not there yet
        return None
    for cell in nb.cells:
        if cell.get("id") == USER_CELL:
            return "".join(cell["source"]) if isinstance(cell["source"], list) else str(cell["source"])
    return None


def _notebook_violations(notebook: Path, ledger: Ledger) -> list[str]:
    try:
        raw = notebook.read_text(encoding="utf-8")
        nb = nbformat.reads(raw, as_version=nbformat.NO_CONVERT)
        nbformat.validate(nb)
    except FileNotFoundError:
        return [f"the notebook {notebook.name} is not there"]
    except Exception as exc:  # a half-written file, bad JSON, a schema error: all are violations
        return [f"the notebook is not valid nbformat: {type(exc).__name__}: {str(exc)[:300]}"]
    found: list[str] = []
    cells = {c.get("id"): "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in nb.cells}
    typed = cells.get(USER_CELL)
    if typed is None:
        found.append("the user's cell is gone")
    elif typed != ledger.typed:
        found.append(f"the user's typing is not all there: expected {ledger.typed[-80:]!r}, file {typed[-80:]!r}")
    text = "\n".join(cells.values())
    for marker in ledger.accepted:
        if text.count(marker) != 1:
            found.append(f"accepted change {marker} is in the file {text.count(marker)} times")
    for marker in ledger.rejected:
        if marker in text:
            found.append(f"rejected change {marker} is in the file")
    for marker in ledger.kept:
        if text.count(marker) != 1:
            found.append(f"kept cell {marker!r} is in the file {text.count(marker)} times")
    for marker in ledger.deleted:
        if marker in text:
            found.append(f"deleted cell {marker} is in the file")
    return found


def _sessions_violations(notebook: Path, ledger: Ledger) -> list[str]:
    if not ledger.questions:
        return []
    db = notebook.with_name(_db_name(notebook))
    if not db.exists():
        return [f"no sessions file {db.name} beside the notebook"]
    try:  # read-only: never create the file, never write to it
        con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            integrity = [row[0] for row in con.execute("PRAGMA integrity_check")]
            payloads = [row[0] for row in con.execute("SELECT payload_json FROM message WHERE role = 'user'")]
        finally:
            con.close()
    except sqlite3.Error as exc:
        return [f"the sessions file cannot be read: {exc}"]
    found: list[str] = []
    if integrity != ["ok"]:
        found.append(f"PRAGMA integrity_check: {integrity[:5]}")
    asked = "\n".join(json.dumps(json.loads(p), ensure_ascii=False) for p in payloads)
    missing = [q for q in ledger.questions if q not in asked]
    if missing:
        found.append(f"questions missing from the sessions file: {missing}")
    return found
