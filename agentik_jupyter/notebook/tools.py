"""The notebook tools: `read_notebook` (auto policy: it only reads), `edit_cell` and `delete_cell`.

The live document in the editor is the source of truth when the notebook extension
answers; otherwise the saved `.ipynb`, which the text marks as possibly stale. Edits
are proposals the user accepts or rejects on the cell itself (edits.py), so they
need no approval card of their own.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

from ..registry import ToolRegistry, definition_from_function
from ..types import ToolDefinition, ToolOutput
from .document import NotebookDoc, NotebookReadError, cells_from_json, load_saved
from .edits import ReadLedger, propose_change
from .frontend import NoFrontend, frontend
from .images import output_images, with_images
from .reading import cell_range, one_cell, overview

NotebookPath = Callable[[], "Path | None"]


async def load_notebook(notebook_path: NotebookPath) -> NotebookDoc:
    """The live document when the extension answers, else the saved file (read off the loop)."""
    path = notebook_path()
    try:
        reply = await frontend.ask("read")
    except NoFrontend:
        reply = None
    if reply is not None and reply.get("status") == "ok":
        return NotebookDoc(path=str(reply.get("path") or path or ""), origin="live",
                           cells=cells_from_json({"cells": reply.get("cells") or []}))
    if path is None:
        raise NotebookReadError(
            "this kernel does not know its notebook (a console or plain IPython); "
            "use get_cell_history for the cells run so far"
        )
    return await asyncio.to_thread(load_saved, Path(path))


def _decision_timeout() -> float | None:
    from ..kernel.approval import approval_timeout

    return approval_timeout()


def make_notebook_tools(notebook_path: NotebookPath) -> list[ToolDefinition]:
    ledger = ReadLedger()

    async def read_notebook(
        cell_id: str | None = None, start: int | None = None, end: int | None = None, images: bool | None = None
    ) -> ToolOutput:
        """Read the notebook's cells in order: ids, type, source, execution count and output summaries.

        Without arguments: every cell, clipped to fit. With cell_id: that cell in full.
        With start/end (0-based, inclusive, as numbered in the overview): those cells.
        Read a cell before proposing an edit to it.

        Args:
            cell_id: one cell's id (from the overview) to read in full
            start: first cell index of a range
            end: last cell index of a range (default: to the end)
            images: also look at the images (plots) in the outputs read; default: yes for one cell, no otherwise
        """
        doc = await load_notebook(notebook_path)
        if cell_id:
            text = one_cell(doc, cell_id)
            cells = [doc.find(cell_id)[1]]  # type: ignore[index]
            ledger.record(doc, only=cells[0].id)
        elif start is not None or end is not None:
            text = cell_range(doc, start or 0, end)
            cells = doc.cells[start or 0:None if end is None else end + 1]
            ledger.record(doc)
        else:
            text = overview(doc)
            cells = doc.cells
            ledger.record(doc)
        if not (images if images is not None else bool(cell_id)):
            return ToolOutput(text=text, display={"text/plain": text})
        found, vector = output_images(cells)
        return with_images(text, found, vector, more_hint="read_notebook(cell_id=..., images=True) reads one cell's")

    async def edit_cell(cell_id: str, new_source: str) -> ToolOutput:
        """Propose new source for an existing cell; the user sees a diff on the cell and accepts or rejects it.

        Only cells you have read (read_notebook) can be edited, and only if unchanged since.
        The answer says whether the user accepted (and maybe ran) or rejected the edit.

        Args:
            cell_id: the cell's id, as shown by read_notebook
            new_source: the cell's complete new source
        """
        return await propose_change(ledger, cell_id, new_source, _decision_timeout())

    async def delete_cell(cell_id: str) -> ToolOutput:
        """Propose deleting a cell; the user accepts or rejects it on the cell.

        Args:
            cell_id: the cell's id, as shown by read_notebook
        """
        return await propose_change(ledger, cell_id, None, _decision_timeout())

    return [definition_from_function(fn, source="builtin") for fn in (read_notebook, edit_cell, delete_cell)]


def register_notebook_tools(registry: ToolRegistry, notebook_path: NotebookPath) -> None:
    """Add the notebook tools, keeping a policy the user changed and a user tool of the same name."""
    for definition in make_notebook_tools(notebook_path):
        existing: Any = registry.get(definition.name)
        if existing is not None and existing.source != "builtin":
            continue
        if existing is not None:
            definition.policy = existing.policy
        registry.add(definition, replace=True)
