"""Rewind on the page: revert the agent's cell edits, remove the cells it inserted, restore those it deleted.

The kernel asks the notebook extension (`revert_cells`, through notebook/requests.py) with the
changes newest first; the extension puts an edited cell's old source back, or deletes an inserted
cell, only when the cell still holds what the agent left in it, and puts a deleted cell back (its
source and type, below the cell that was above it; not its outputs). A cell the user changed since is
not touched: the revert is proposed on it as a diff (Accept / Reject, as the agent's edits are), so
nothing the user typed is lost unless they say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentik_jupyter.core.rewind import RewindPlan, apply_rewind, plan_rewind
from agentik_jupyter.errors import NoFrontend, NotebookReadError
from agentik_jupyter.notebook.cells import PROPOSAL_LINE
from agentik_jupyter.notebook.document import NotebookDoc
from agentik_jupyter.notebook.requests import frontend
from agentik_jupyter.notebook.tools import load_notebook
from agentik_jupyter.tools.approval import approval_timeout

FIRST_LINE_CHARS = 40


def cell_name(position: int | None, source: str) -> str:
    """A cell as the user finds it: its position in the notebook (from 1) and its first line."""
    lines = (text.strip() for text in source.splitlines() if text.strip() not in ("", PROPOSAL_LINE))
    line = next(lines, "")
    if len(line) > FIRST_LINE_CHARS:
        line = line[: FIRST_LINE_CHARS - 1] + "…"
    where = f"cell {position}" if position is not None else "cell"
    return f"{where} {line!r}" if line else f"{where} (empty)"


def cell_names(changes: list[dict[str, str]], doc: NotebookDoc | None) -> dict[str, str]:
    """Each changed cell's name: where it is now and its first line there (a deleted cell, or one the
    notebook no longer has: its first line as the agent left it, without a position)."""
    where = {cell.id: (i + 1, cell.source) for i, cell in enumerate(doc.cells)} if doc is not None else {}
    names: dict[str, str] = {}
    for change in changes:
        cell_id = change["cell_id"]
        if cell_id in names:
            continue
        if change.get("kind") != "delete" and cell_id in where:
            names[cell_id] = cell_name(*where[cell_id])
        else:
            left = change.get("old") if change.get("kind") == "delete" else change.get("new", change.get("source"))
            names[cell_id] = cell_name(None, left or "")
    return names


def preview_lines(changes: list[dict[str, str]], names: dict[str, str]) -> list[str]:
    """What a rewind would do to the cells, each named as `names` says (`cell_names`)."""
    edits = [names[c["cell_id"]] for c in changes if c.get("kind") == "edit"]
    inserts = [names[c["cell_id"]] for c in changes if c.get("kind") == "insert"]
    lines = [
        "cells to revert: " + (", ".join(dict.fromkeys(edits)) or "none"),
        "inserted cells to remove: " + (", ".join(inserts) or "none"),
    ]
    deletes = [names[c["cell_id"]] for c in changes if c.get("kind") == "delete"]
    if deletes:
        lines.append("deleted cells to restore: " + ", ".join(deletes) + " (their source, not their outputs)")
    return lines


async def _document(session: Any) -> NotebookDoc | None:
    """The notebook the preview names cells in: the live one when the page answers, else the saved file."""
    provider = getattr(session, "context_provider", None)

    def path() -> Path | None:
        context = provider() if provider is not None else None
        return Path(context.notebook_path) if context is not None and context.notebook_path else None

    try:
        return await load_notebook(path)
    except (NotebookReadError, TimeoutError):
        return None


async def revert_cells(changes: list[dict[str, str]], names: dict[str, str] | None = None) -> list[str]:
    """Undo the changes on the page (newest first); one line each for reverted, removed and left alone,
    each cell named as the preview named it (`names`; else by its first line)."""
    named = {**cell_names(changes, None), **(names or {})}
    if not changes:
        return ["cells reverted: none", "inserted cells removed: none"]
    try:
        reply = await frontend.ask("revert_cells", changes=changes)
    except NoFrontend:
        return [
            "cells reverted: none (no agentik notebook extension answered: "
            + "; ".join(_by_hand(c, named[c["cell_id"]]) for c in changes)
            + ")"
        ]
    except TimeoutError:
        return ["cells reverted: none (the notebook did not answer in time)"]
    results: list[dict[str, Any]] = [r for r in reply.get("results") or [] if isinstance(r, dict)]
    outcome = {str(r.get("cell_id")): str(r.get("outcome")) for r in results}
    await _ask_about_changed(changes, outcome)
    reverted = [named[c["cell_id"]] for c in changes if c["kind"] == "edit" and outcome.get(c["cell_id"]) == "reverted"]
    removed = [named[c["cell_id"]] for c in changes if c["kind"] == "insert" and outcome.get(c["cell_id"]) == "removed"]
    lines = [
        "cells reverted: " + (", ".join(dict.fromkeys(reverted)) or "none"),
        "inserted cells removed: " + (", ".join(removed) or "none"),
    ]
    if any(c["kind"] == "delete" for c in changes):
        restored = [
            named[c["cell_id"]] for c in changes if c["kind"] == "delete" and outcome.get(c["cell_id"]) == "restored"
        ]
        lines.append("deleted cells restored: " + (", ".join(restored) or "none") + " (without their outputs)")
    left = [
        f"{named[c['cell_id']]} ({LEFT.get(outcome.get(c['cell_id'], ''), 'not found')})"
        for c in changes
        if outcome.get(c["cell_id"]) not in ("reverted", "removed", "restored")
    ]
    if left:
        lines.append("cells left as they are: " + ", ".join(dict.fromkeys(left)))
    return lines


ASK_REVERT = "Rewind: put this cell back as it was before the agent's turn? You changed it since"
ASK_DELETE = "Rewind: delete this cell the agent inserted? You changed it since"
LEFT = {
    "changed": "changed since",
    "kept": "you kept your changes",
    "unanswered": "no answer in time",
    "present": "a cell with its id is in the notebook",
}


async def _ask_about_changed(changes: list[dict[str, str]], outcome: dict[str, str]) -> None:
    """A cell the user changed since the agent did is not reverted silently: the revert is proposed on
    the cell as a diff (Accept / Reject), going back to the cell before the turns; `outcome` is updated."""
    oldest: dict[str, dict[str, str]] = {}
    for change in changes:  # newest first: the last one seen for a cell is its state before the turns
        if outcome.get(change["cell_id"]) == "changed":
            oldest[change["cell_id"]] = change
    if not oldest:
        return
    try:
        read = await frontend.ask("read")
    except (NoFrontend, TimeoutError):
        return
    current = {str(c.get("id")): _source(c) for c in read.get("cells") or [] if isinstance(c, dict)}
    for cell_id, change in oldest.items():
        if cell_id not in current:
            outcome[cell_id] = "missing"
            continue
        deleting = change["kind"] == "insert"
        try:
            reply = await frontend.ask(
                "delete_cell" if deleting else "edit_cell",
                approval_timeout(),
                cell_id=cell_id,
                expected_source=current[cell_id],
                new_source="" if deleting else change.get("old", ""),
                in_request=False,
                title=ASK_DELETE if deleting else ASK_REVERT,
            )
        except (NoFrontend, TimeoutError):
            outcome[cell_id] = "unanswered"
            continue
        if reply.get("status") in ("accepted", "accepted_and_run"):
            outcome[cell_id] = "removed" if deleting else "reverted"
        else:
            outcome[cell_id] = "kept" if reply.get("status") == "rejected" else "changed"


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _by_hand(change: dict[str, str], name: str) -> str:
    if change.get("kind") == "delete":
        return f"restore deleted {name} by hand"
    if change.get("kind") == "insert":
        return f"delete inserted {name} by hand"
    return f"revert {name} by hand"


async def plan(session: Any, number: int | None = None, *, shown: bool = True) -> RewindPlan:
    """`core.rewind.plan_rewind` with what would happen to the cells; a plan `shown` as a preview asks
    the notebook where the cells are, one done at once (`%agent rewind`) does not."""
    found = await plan_rewind(session, number)
    changes = _changes(session, found)
    found.cell_names = cell_names(changes, await _document(session) if changes and shown else None)
    found.cell_lines = preview_lines(changes, found.cell_names)
    return found


async def rewind(session: Any, planned: RewindPlan) -> RewindPlan:
    """`core.rewind.apply_rewind`, then the cells reverted on the page."""
    changes = _changes(session, planned)
    done = await apply_rewind(session, planned)
    done.cell_lines = await revert_cells(changes, planned.cell_names)
    return done


def _changes(session: Any, planned: RewindPlan) -> list[dict[str, str]]:
    checkpoints = getattr(session, "checkpoints", None)
    return checkpoints.cell_changes([t.turn_id for t in planned.turns]) if checkpoints is not None else []
