"""Proposed code cells: where `insert_cell` puts them, and how they reach the notebook.

Two routes, chosen per turn by the anchor the turn was started with:

- **In the request** (`%%agent --wait`, or no anchor) without the extension (nbclient,
  papermill, VS Code): IPython's `set_next_input`. The proposal rides on the execute_reply of
  the cell being run, so every frontend shows it right below that cell, but unmarked: a
  payload carries no metadata. When the extension answered the kernel's hello (notebook/page.py),
  a `--wait` turn's cells take the extension's route below, and so carry their marks.
- **From the background** (a default `%%agent` cell, the chat panel): the cell that asked
  has already replied, so a payload would wait for the next cell the user runs. Instead
  the kernel asks the notebook extension (`insert_cell`, through the one request/answer
  path of notebook/requests.py), which inserts the cell below the asking cell (or the
  active cell for the panel) and answers with the new cell's id. When nothing answers
  (no extension: VS Code, classic runners) the payload route is the fallback.

A proposal is code nobody approved, so it is marked as one on both routes: its first line
is `PROPOSAL_LINE` (a comment saying the agent wrote it and it has not run), and the
extension also tags the cell (`agentik-proposal`, metadata `{"agentik": {"proposal": true}}`,
labextension/src/cells.ts). `%agent export` comments out proposals the kernel never ran.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentik_jupyter.errors import NoFrontend
from agentik_jupyter.notebook import page
from agentik_jupyter.notebook.requests import frontend
from agentik_jupyter.tools.checkpoint import checkpoints_for
from agentik_jupyter.types import ToolOutput

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell


@dataclass
class CellAnchor:
    """Where this turn's proposed cells go.

    `cell_id` is the asking cell (None: below the notebook's active cell);
    `in_request` says the asking cell is still executing, so `set_next_input` reaches it.
    Successive proposals of one turn go below the previous one, keeping their order.
    """

    cell_id: str | None = None
    in_request: bool = False


PROPOSAL_LINE = "# Proposed by the agent (insert_cell), not run yet: review it before you run it."
"""The first line of every proposed cell (`%agent export` looks past it when it matches what ran)."""


def marked(source: str) -> str:
    """`source` as a proposed cell holds it: under the proposal comment line."""
    return f"{PROPOSAL_LINE}\n{source}"


ANCHOR: ContextVar[CellAnchor | None] = ContextVar("agentik_cell_anchor", default=None)


@contextlib.contextmanager
def anchored(anchor: CellAnchor) -> Iterator[None]:
    """Set the anchor for turns started inside the block (a task copies it when created)."""
    token = ANCHOR.set(anchor)
    try:
        yield
    finally:
        ANCHOR.reset(token)


def asking_cell_id(shell: InteractiveShell) -> str | None:
    """The id of the cell being executed, from the execute_request JupyterLab sent."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent("shell") if kernel is not None else {}
    except Exception:
        return None
    cell_id = (parent or {}).get("metadata", {}).get("cellId")
    return cell_id if isinstance(cell_id, str) and cell_id else None


async def propose_cell(shell: InteractiveShell, source: str) -> ToolOutput:
    """Put `source` in a new code cell below the turn's anchor; the user decides to run it."""
    if not source.strip():
        raise ValueError("source is empty; pass the code of the cell to propose")
    anchor = ANCHOR.get()
    through_extension = anchor is not None and (not anchor.in_request or page.live_text())
    if through_extension and anchor is not None and getattr(shell, "kernel", None) is not None:
        cell_id = await _insert(source, anchor.cell_id)
        if cell_id is not None:
            anchor.cell_id = cell_id
            checkpoints_for(shell).note_cell({"kind": "insert", "cell_id": cell_id, "source": marked(source)})
            return _output(
                source, "Inserted a new code cell below the asking cell; the user decides whether to run it."
            )
    return _propose_by_payload(shell, source)


def _propose_by_payload(shell: InteractiveShell, source: str) -> ToolOutput:
    """IPython's set_next_input. A reply carries one, so proposals in one reply are merged."""
    payload_manager = getattr(shell, "payload_manager", None)
    pending = ""
    if payload_manager is not None:
        for item in payload_manager.read_payload():
            if item.get("source") == "set_next_input" and not item.get("replace"):
                pending = str(item.get("text", ""))
    text = f"{pending.rstrip()}\n\n{source}" if pending else marked(source)
    shell.set_next_input(text, replace=False)
    lines = source.count("\n") + 1
    note = f"Proposed a new code cell ({lines} line(s)) below the current cell; the user decides whether to run it."
    if pending:
        note += " It was merged with the cell proposed earlier in this turn."
    return _output(source, note)


def _output(source: str, note: str) -> ToolOutput:
    fenced = "```python\n" + source.rstrip() + "\n```"
    return ToolOutput(text=note, display={"text/markdown": fenced, "text/plain": source})


async def _insert(source: str, after_cell_id: str | None) -> str | None:
    """The new cell's id, or None when no extension inserted it."""
    try:
        reply = await frontend.ask("insert_cell", source=marked(source), after_cell_id=after_cell_id)
    except NoFrontend:
        return None
    cell_id = reply.get("cell_id")
    return cell_id if reply.get("status") == "ok" and isinstance(cell_id, str) and cell_id else None
