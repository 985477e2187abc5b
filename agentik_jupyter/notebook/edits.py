"""Edits to existing cells as proposals the user accepts or rejects, never silent rewrites.

`edit_cell` / `delete_cell` send the change to the notebook extension, which shows it
on the cell as a diff with Accept, Reject and "Accept and run"; nothing changes until
Accept. Read before write: the model may only edit a cell it has read (with
read_notebook) and only while the cell still holds what it read; the extension checks
the live source and refuses a stale edit. The `.ipynb` on disk is never written.
Without the extension the diff is shown in the tool card and the user applies it.
Either way the diff says how many lines each side has, and shows invisible or
direction-changing characters as badges under a warning (security/invisible.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentik_jupyter.errors import NoFrontend
from agentik_jupyter.notebook.cells import ANCHOR
from agentik_jupyter.notebook.document import NotebookDoc, summarize_output
from agentik_jupyter.notebook.requests import frontend
from agentik_jupyter.security import invisible
from agentik_jupyter.tools.approval import CALLER
from agentik_jupyter.tools.status import waiting_on
from agentik_jupyter.types import ToolOutput

DIFF_CONTEXT_LINES = 3
DIFF_TEXT_CHARS = 6_000
ACCEPTED = "The user accepted the edit"  # how every accepted edit's result begins (export.py reads it)
APPLIED = "Applied (Auto mode)"  # how an edit Auto applied at once begins
REJECTED = "The user rejected the edit"  # how a rejected edit's result begins (its card says "rejected", not ✓)

OUTCOMES = {
    "accepted": ACCEPTED + ": cell {id} now holds the new source (not run).",
    "accepted_and_run": ACCEPTED
    + "; cell {id} runs once the kernel is free (read_notebook(cell_id={id!r}) shows its outputs then).",
    "rejected": REJECTED + ": cell {id} is unchanged. Ask what they want instead; do not retry the same edit.",
    "stale": "Refused: cell {id} changed since you read it. Read it again with read_notebook and propose the edit on its current source.",
    "missing": "Refused: there is no cell {id} in the notebook any more. Read the notebook again.",
    "applied": APPLIED + ": cell {id} now holds the new source (not run), marked as yours; Rewind takes it back.",
}


@dataclass
class ReadLedger:
    """The source of each cell as the model last read it: the version an edit must start from."""

    sources: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    above: dict[str, str | None] = field(default_factory=dict)  # the cell above each one when read

    def record(self, doc: NotebookDoc, only: str | None = None) -> None:
        previous: str | None = None
        for cell in doc.cells:
            if only is None or cell.id == only:
                self.sources[cell.id] = cell.source
                self.types[cell.id] = cell.cell_type
                self.above[cell.id] = previous
            previous = cell.id


def _lines(text: str) -> str:
    n = invisible.line_count(text)
    return f"{n:,} line{'' if n == 1 else 's'}"


def unified_diff(old: str, new: str, cell_id: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(),
        new.splitlines(),
        f"cell {cell_id} (now, {_lines(old)})",
        f"cell {cell_id} (proposed, {_lines(new)})",
        n=DIFF_CONTEXT_LINES,
        lineterm="",
    )
    text = "\n".join(lines)
    return text if len(text) <= DIFF_TEXT_CHARS else text[:DIFF_TEXT_CHARS] + "\n… [diff cut]"


def diff_html(diff: str) -> str:
    """The diff for the tool card: added lines green, removed red, escaped, hidden characters as badges.

    The inline colours (dark text on pale green / pink) are for GitHub and nbviewer; in JupyterLab
    the extension's CSS gives the lines the theme's colours (legible in the dark theme too).
    """
    rows = []
    for line in diff.splitlines():
        kind = "added" if line.startswith("+") else "removed" if line.startswith("-") else "same"
        rows.append(
            f'<div class="agentik-diff-line agentik-diff-{kind}" style="{DIFF_STYLES.get(f"agentik-diff-{kind}", "")}">'
            f"{invisible.escape_visible(line) or '&nbsp;'}</div>"
        )
    return (
        invisible.warning_html(diff, "This change")
        + f'<div class="agentik-diff" style="{DIFF_STYLES["agentik-diff"]}">'
        + "".join(rows)
        + "</div>"
    )


DIFF_STYLES = {
    "agentik-diff": "font-family:monospace;white-space:pre-wrap;font-size:12px",
    "agentik-diff-added": "background:#e6ffec;color:#1f2328",
    "agentik-diff-removed": "background:#ffebe9;color:#1f2328",
}
"""The diff's inline look, by class (a card's sanitised preview puts it back from the class)."""


def _display(diff: str) -> dict[str, str]:
    return {"text/plain": invisible.plain_visible(diff), "text/html": diff_html(diff)}


def in_request() -> bool:
    """Whether the asking cell still executes (`--wait`): a cell run it asks for waits for it."""
    anchor = ANCHOR.get()
    return anchor is not None and anchor.in_request


def _ran(cell_id: str, reply: dict[str, Any]) -> tuple[str, bool]:
    """What the accepted cell did when it ran (the evidence the model verifies its fix with), and whether it failed."""
    outputs = found if isinstance(found := reply.get("outputs"), list) else []
    lines = [summarize_output(o) for o in outputs if isinstance(o, dict)]
    failed = any(isinstance(o, dict) and o.get("output_type") == "error" for o in outputs)
    verdict = "it still fails" if failed else "it ran without an error"
    shown = "\n".join(f"  -> {line}" for line in lines) if lines else "  (no output)"
    return f"{ACCEPTED} and ran cell {cell_id}: {verdict}. Its outputs now:\n{shown}", failed


AfterRun = Callable[[str], Awaitable[str]]
Checkpoint = Callable[[str], Any]  # code -> a staged checkpoint with commit() and cannot_undo (tools/checkpoint.py)


def _say_where(shown: dict[str, Any]) -> None:
    """The diff is on screen: the status line says the turn waits for the user, and on which cell."""
    number = shown.get("cell_number")
    where = f"the diff on cell {number}" if isinstance(number, int) else "the diff on its cell"
    count = shown.get("execution_count")
    waiting_on(where + (f" (In [{count}])" if isinstance(count, int) else ""))


async def propose_change(
    ledger: ReadLedger,
    cell_id: str,
    new_source: str | None,
    decision_timeout: float | None,
    after_run: AfterRun | None = None,
    *,
    checkpoint: Checkpoint | None = None,
    on_applied: Callable[[dict[str, str]], None] | None = None,
    auto: bool = False,
) -> ToolOutput:
    """Show `cell_id` -> `new_source` (None: delete the cell) to the user; the model learns the outcome.

    After "Accept and run", `after_run(cell_id)` re-runs the cells that depend on it and says what they showed.
    `auto` (Auto mode): the page applies the change at once, without a diff to accept, and marks the
    cell as the agent's; `on_applied` records it as an accepted change is, so Rewind takes it back.
    """
    old = ledger.sources.get(cell_id)
    if old is None:
        raise LookupError(f"read cell {cell_id!r} with read_notebook before proposing a change to it")
    action = "delete_cell" if new_source is None else "edit_cell"
    new = "" if new_source is None else new_source
    if new_source is not None and new.rstrip() == old.rstrip():
        raise ValueError(f"the proposed source is the same as cell {cell_id!r}'s current source")
    diff = unified_diff(old, new, cell_id)
    staged = checkpoint(new) if checkpoint is not None and new_source is not None else None
    by = CALLER.get()
    try:
        reply = await frontend.ask(
            action,
            decision_timeout,
            on_shown=_say_where,
            cell_id=cell_id,
            expected_source=old,
            new_source=new,
            in_request=in_request(),
            **({"auto": True} if auto else {}),
            **({"by": by} if by else {}),  # an outside client's edit says whose it is
        )
    except NoFrontend:
        how = "delete the cell" if new_source is None else "replace the cell's source with the proposal"
        return ToolOutput(
            text=(
                f"Not applied: this frontend has no agentik notebook extension, so the change to cell {cell_id} "
                f"is shown to the user as a diff in the tool card; they can {how} by hand. Diff:\n{diff}"
            ),
            display=_display(diff),
        )
    except TimeoutError:
        return ToolOutput(
            text=f"The user did not decide on the change to cell {cell_id} in time; it was not applied.",
            display=_display(diff),
        )
    finally:
        waiting_on(None)
    status = str(reply.get("status"))
    applied = status == "applied"  # (Auto: no one was asked)
    if applied:
        status = "accepted"
    if status == "accepted_and_run" and staged is not None:
        staged.commit()  # the page ran it: %agent rewind can take it back
    if status in ("accepted", "accepted_and_run") and new_source is not None and on_applied is not None:
        on_applied({"kind": "edit", "cell_id": cell_id, "old": old, "new": new})  # rewind puts `old` back
    if status == "accepted_and_run" and not reply.get("queued"):
        ledger.sources[cell_id] = new
        text, failed = _ran(cell_id, reply)
        if staged is not None and staged.cannot_undo:
            text = "Rewind can't undo: " + "; ".join(staged.cannot_undo) + "\n\n" + text
        if after_run is not None and not failed:
            text += "\n\n" + await after_run(cell_id)
        return ToolOutput(text=text, display=_display(diff))
    if status in ("accepted", "accepted_and_run"):
        if new_source is None:
            if on_applied is not None:  # rewind puts the cell back, where it was
                after = ledger.above.get(cell_id)
                kind = ledger.types.get(cell_id, "code")
                on_applied({"kind": "delete", "cell_id": cell_id, "old": old, "cell_type": kind, "after": after or ""})
            ledger.sources.pop(cell_id, None)
            said = "Deleted (Auto mode; Rewind puts it back)" if applied else "The user accepted"
            return ToolOutput(text=f"{said}: cell {cell_id} was deleted.", display=_display(diff))
        ledger.sources[cell_id] = new
    elif status == "stale":
        ledger.sources.pop(cell_id, None)
    if status == "error":
        raise RuntimeError(f"the notebook could not show the change: {reply.get('message', 'unknown error')}")
    template = OUTCOMES.get("applied" if applied else status)
    if template is None:
        raise RuntimeError(f"the notebook extension answered with an unknown status {status!r}")
    return ToolOutput(text=template.format(id=cell_id), display=_display(diff))
