"""Rewind on the page: revert the agent's cell edits, remove the cells it inserted, restore those it deleted.

The kernel asks the notebook extension (`revert_cells`, through notebook/requests.py) with the
changes newest first; the extension puts an edited cell's old source back, or deletes an inserted
cell, only when the cell still holds what the agent left in it, and puts a deleted cell back (its
source and type, below the cell that was above it; not its outputs). A cell the user changed since is
not touched: the revert is proposed on it as a diff (Accept / Reject, as the agent's edits are), so
nothing the user typed is lost unless they say so.
"""

from __future__ import annotations

from typing import Any

from agentik_jupyter.core.rewind import RewindPlan, apply_rewind, plan_rewind
from agentik_jupyter.errors import NoFrontend
from agentik_jupyter.notebook.requests import frontend
from agentik_jupyter.tools.approval import approval_timeout


def preview_lines(changes: list[dict[str, str]]) -> list[str]:
    """What a rewind would do to the cells (the page is not asked)."""
    edits = [c["cell_id"] for c in changes if c.get("kind") == "edit"]
    inserts = [c["cell_id"] for c in changes if c.get("kind") == "insert"]
    lines = [
        "cells to revert: " + (", ".join(dict.fromkeys(edits)) or "none"),
        "inserted cells to remove: " + (", ".join(inserts) or "none"),
    ]
    deletes = [c["cell_id"] for c in changes if c.get("kind") == "delete"]
    if deletes:
        lines.append("deleted cells to restore: " + ", ".join(deletes) + " (their source, not their outputs)")
    return lines


async def revert_cells(changes: list[dict[str, str]]) -> list[str]:
    """Undo the changes on the page (newest first); one line each for reverted, removed and left alone."""
    if not changes:
        return ["cells reverted: none", "inserted cells removed: none"]
    try:
        reply = await frontend.ask("revert_cells", changes=changes)
    except NoFrontend:
        return [
            "cells reverted: none (no agentik notebook extension answered: "
            + "; ".join(_by_hand(c) for c in changes)
            + ")"
        ]
    except TimeoutError:
        return ["cells reverted: none (the notebook did not answer in time)"]
    results: list[dict[str, Any]] = [r for r in reply.get("results") or [] if isinstance(r, dict)]
    outcome = {str(r.get("cell_id")): str(r.get("outcome")) for r in results}
    await _ask_about_changed(changes, outcome)
    reverted = [c["cell_id"] for c in changes if c["kind"] == "edit" and outcome.get(c["cell_id"]) == "reverted"]
    removed = [c["cell_id"] for c in changes if c["kind"] == "insert" and outcome.get(c["cell_id"]) == "removed"]
    lines = [
        "cells reverted: " + (", ".join(dict.fromkeys(reverted)) or "none"),
        "inserted cells removed: " + (", ".join(removed) or "none"),
    ]
    if any(c["kind"] == "delete" for c in changes):
        restored = [c["cell_id"] for c in changes if c["kind"] == "delete" and outcome.get(c["cell_id"]) == "restored"]
        lines.append("deleted cells restored: " + (", ".join(restored) or "none") + " (without their outputs)")
    left = [
        f"cell {c['cell_id']} ({LEFT.get(outcome.get(c['cell_id'], ''), 'not found')})"
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


def _by_hand(change: dict[str, str]) -> str:
    if change.get("kind") == "delete":
        return f"restore deleted cell {change['cell_id']} by hand"
    if change.get("kind") == "insert":
        return f"delete inserted cell {change['cell_id']} by hand"
    return f"revert cell {change['cell_id']} by hand"


async def plan(session: Any, number: int | None = None) -> RewindPlan:
    """`core.rewind.plan_rewind` with what would happen to the cells."""
    found = await plan_rewind(session, number)
    found.cell_lines = preview_lines(_changes(session, found))
    return found


async def rewind(session: Any, planned: RewindPlan) -> RewindPlan:
    """`core.rewind.apply_rewind`, then the cells reverted on the page."""
    changes = _changes(session, planned)
    done = await apply_rewind(session, planned)
    done.cell_lines = await revert_cells(changes)
    return done


def _changes(session: Any, planned: RewindPlan) -> list[dict[str, str]]:
    checkpoints = getattr(session, "checkpoints", None)
    return checkpoints.cell_changes([t.turn_id for t in planned.turns]) if checkpoints is not None else []
