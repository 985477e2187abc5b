"""The notebook tools: `read_notebook` (auto policy: it only reads).

The saved `.ipynb` is the source when the kernel knows its notebook's path; the
text says it may be stale, so the model can ask the user to save when it matters.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

from ..registry import ToolRegistry, definition_from_function
from ..types import ToolDefinition, ToolOutput
from .document import NotebookDoc, NotebookReadError, load_saved
from .reading import cell_range, one_cell, overview

NotebookPath = Callable[[], "Path | None"]


async def load_notebook(notebook_path: NotebookPath) -> NotebookDoc:
    """The notebook this kernel belongs to, read off the event loop."""
    path = notebook_path()
    if path is None:
        raise NotebookReadError(
            "this kernel does not know its notebook (a console or plain IPython); "
            "use get_cell_history for the cells run so far"
        )
    return await asyncio.to_thread(load_saved, Path(path))


def make_notebook_tools(notebook_path: NotebookPath) -> list[ToolDefinition]:
    async def read_notebook(cell_id: str | None = None, start: int | None = None, end: int | None = None) -> ToolOutput:
        """Read the notebook's cells in order: ids, type, source, execution count and output summaries.

        Without arguments: every cell, clipped to fit. With cell_id: that cell in full.
        With start/end (0-based, inclusive, as numbered in the overview): those cells.
        Cells the user has not run yet and markdown cells are included.

        Args:
            cell_id: one cell's id (from the overview) to read in full
            start: first cell index of a range
            end: last cell index of a range (default: to the end)
        """
        doc = await load_notebook(notebook_path)
        if cell_id:
            text = one_cell(doc, cell_id)
        elif start is not None or end is not None:
            text = cell_range(doc, start or 0, end)
        else:
            text = overview(doc)
        return ToolOutput(text=text, display={"text/plain": text})

    return [definition_from_function(read_notebook, source="builtin")]


def register_notebook_tools(registry: ToolRegistry, notebook_path: NotebookPath) -> None:
    """Add the notebook tools, keeping a policy the user changed and a user tool of the same name."""
    for definition in make_notebook_tools(notebook_path):
        existing: Any = registry.get(definition.name)
        if existing is not None and existing.source != "builtin":
            continue
        if existing is not None:
            definition.policy = existing.policy
        registry.add(definition, replace=True)
