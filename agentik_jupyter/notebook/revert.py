"""Rewind on the page: revert the agent's cell edits and remove the cells it inserted.

The kernel asks the notebook extension (`revert_cells`, through notebook/requests.py) with the
changes newest first; the extension puts an edited cell's old source back, or deletes an inserted
cell, only when the cell still holds what the agent left in it. A cell the user changed since is
left as it is and reported, so nothing the user typed is lost.
"""

from __future__ import annotations

from typing import Any

from agentik_jupyter.core.rewind import RewindPlan, apply_rewind, plan_rewind
from agentik_jupyter.errors import NoFrontend
from agentik_jupyter.notebook.requests import frontend


def preview_lines(changes: list[dict[str, str]]) -> list[str]:
    """What a rewind would do to the cells (the page is not asked)."""
    edits = [c["cell_id"] for c in changes if c.get("kind") == "edit"]
    inserts = [c["cell_id"] for c in changes if c.get("kind") == "insert"]
    return [
        "cells to revert: " + (", ".join(dict.fromkeys(edits)) or "none"),
        "inserted cells to remove: " + (", ".join(inserts) or "none"),
    ]


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
    reverted = [c["cell_id"] for c in changes if c["kind"] == "edit" and outcome.get(c["cell_id"]) == "reverted"]
    removed = [c["cell_id"] for c in changes if c["kind"] == "insert" and outcome.get(c["cell_id"]) == "removed"]
    lines = [
        "cells reverted: " + (", ".join(dict.fromkeys(reverted)) or "none"),
        "inserted cells removed: " + (", ".join(removed) or "none"),
    ]
    left = [
        f"cell {c['cell_id']} ({'changed since' if outcome.get(c['cell_id']) == 'changed' else 'not found'})"
        for c in changes
        if outcome.get(c["cell_id"]) not in ("reverted", "removed")
    ]
    if left:
        lines.append("cells left as they are: " + ", ".join(dict.fromkeys(left)) + " — revert them by hand")
    return lines


def _by_hand(change: dict[str, str]) -> str:
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
