"""The soak, 3 minutes of it: turns, typing, accept and reject of edits and deletions, renames and
moves, kernel and server restarts and a page closed mid-turn on one notebook, without and with
jupyter-collaboration, with no violation of what must never be lost.

The soak (bench/soak) runs a Jupyter server of its own (a server restart takes its kernels with it,
which a shared server must not do) and its pages in the worker's shared Chromium. First, its checks
are shown to catch each kind of loss on files made by hand, so a clean soak means something.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import nbformat
import pytest

from agentik_jupyter.persistence import SessionDB
from agentik_jupyter.testing.chromium import CHROMIUM
from agentik_jupyter.types import UserMessage
from bench.soak import run
from bench.soak.checks import USER_CELL, Ledger, violations
from tests.shared_servers import POOL

SOAK_S = 90.0
"""The drawn steps start for this long (the step under way then finishes); with the plan, about 3 minutes in all."""
PLAN = ("page_delete", "restart_server_mid_turn", "page_delete", "page_edit_two_pages")
"""Collaboration off at first, on after the server's restart."""
SEED = int(os.environ.get("AGENTIK_SOAK_SEED", "37"))

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(420),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (scripts/ensure-chromium.sh)"),
]


def _notebook(root: Path, typed: str, *extra: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_raw_cell(typed), *(nbformat.v4.new_code_cell(s) for s in extra)]
    nb.cells[0]["id"] = USER_CELL
    path = root / "n.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_checks_catch_each_kind_of_loss(tmp_path: Path) -> None:
    ledger = Ledger(typed="héllo", questions=["soakq1"], accepted=["# ok"], rejected=["# no"])
    notebook = _notebook(tmp_path, "héllo", "# ok\nx = 1")
    with SessionDB(tmp_path / "n.agentik.db") as db:
        db.begin_turn(db.create_conversation("soak").id, UserMessage(content="hi (soakq1)"))
    assert violations(notebook, tmp_path, ledger) == []

    assert "typing" in " ".join(violations(_notebook(tmp_path, "hélo", "# ok"), tmp_path, ledger))
    assert "2 times" in " ".join(violations(_notebook(tmp_path, "héllo", "# ok", "# ok"), tmp_path, ledger))
    assert "rejected" in " ".join(violations(_notebook(tmp_path, "héllo", "# ok", "# no"), tmp_path, ledger))
    kept = Ledger(typed="héllo", kept=["mine = 1", "# agent's"], deleted=["# gone"])
    assert violations(_notebook(tmp_path, "héllo", "mine = 1", "# agent's"), tmp_path, kept) == []
    assert "kept cell 'mine = 1' is in the file 0 times" in violations(
        _notebook(tmp_path, "héllo", "# agent's"), tmp_path, kept
    )
    assert "2 times" in " ".join(violations(_notebook(tmp_path, "héllo", "mine = 1", "# agent's" * 2), tmp_path, kept))
    assert "deleted cell # gone" in " ".join(
        violations(_notebook(tmp_path, "héllo", "mine = 1", "# agent's", "# gone"), tmp_path, kept)
    )
    notebook = _notebook(tmp_path, "héllo", "# ok")
    notebook.write_text(notebook.read_text()[:-40])
    assert "not valid nbformat" in " ".join(violations(notebook, tmp_path, ledger))
    _notebook(tmp_path, "héllo", "# ok")
    assert "missing" in " ".join(
        violations(notebook, tmp_path, Ledger(typed="héllo", questions=["soakq2"], accepted=["# ok"]))
    )
    (tmp_path / "old.agentik.db").write_bytes((tmp_path / "n.agentik.db").read_bytes())
    assert "other names" in " ".join(violations(notebook, tmp_path, ledger))
    (tmp_path / "old.agentik.db").unlink()
    with sqlite3.connect(tmp_path / "n.agentik.db") as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray((tmp_path / "n.agentik.db").read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # every page after the first overwritten
    (tmp_path / "n.agentik.db").write_bytes(bytes(data))
    found = " ".join(violations(notebook, tmp_path, ledger))
    assert "integrity_check" in found or "cannot be read" in found, found


def test_three_minutes_of_the_soak_lose_nothing(tmp_path: Path) -> None:
    """Drawn steps (collaboration off, switched on at a server restart), then a plan of the steps
    a short draw may miss: a deletion without and with collaboration, two pages sharing a document."""
    chromium = POOL.chromium().endpoint
    drawn = run(SOAK_S, SEED, base=tmp_path / "drawn", cdp=chromium, log=lambda line: None)
    print(drawn.report())
    assert drawn.ok, drawn.report()
    assert drawn.steps >= 3, drawn.report()  # (a step under load can take a minute: a server restart)
    planned = run(0, SEED, base=tmp_path / "planned", plan=PLAN, cdp=chromium, log=lambda line: None)
    print(planned.report())
    assert planned.ok, planned.report()
    done = planned.done
    assert done["with_collaboration"] == 2 and done["page_delete"] == 2, planned.report()
    assert done.get("deletion_accepted", 0) + done.get("deletion_rejected", 0) == 2, planned.report()
