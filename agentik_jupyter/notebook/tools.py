"""The notebook tools: `insert_cell` and `read_notebook` (auto: a proposal, a read), `edit_cell`, `delete_cell`, `run_cells`.

The live document in the editor is the source of truth when the notebook extension
answers; otherwise the saved `.ipynb`, which the text marks as possibly stale. Edits
are proposals the user accepts or rejects on the cell itself (edits.py), so they
need no approval card of their own. `run_cells` re-runs existing cells (policy ask); after
"Accept and run" of an edit, the cells that depend on the fixed one are re-run through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentik_jupyter.errors import NoFrontend, NotebookReadError
from agentik_jupyter.notebook.cells import propose_cell
from agentik_jupyter.notebook.document import NotebookDoc, cells_from_json, load_saved
from agentik_jupyter.notebook.edits import Checkpoint, ReadLedger, in_request, propose_change
from agentik_jupyter.notebook.images import output_images
from agentik_jupyter.notebook.reading import cell_range, one_cell, overview
from agentik_jupyter.notebook.requests import frontend
from agentik_jupyter.notebook.rerun import dependents, rerun_report
from agentik_jupyter.tools.approval import approval_timeout
from agentik_jupyter.tools.checkpoint import checkpoints_for
from agentik_jupyter.tools.images import with_images
from agentik_jupyter.tools.registry import ToolRegistry, add_builtin, definition_from_function
from agentik_jupyter.types import ToolCall, ToolDefinition, ToolOutput, new_id

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

NotebookPath = Callable[[], "Path | None"]
Approve = Callable[[ToolCall, ToolDefinition], Awaitable[bool]]


async def load_notebook(notebook_path: NotebookPath) -> NotebookDoc:
    """The live document when the extension answers, else the saved file (read off the loop)."""
    path = notebook_path()
    try:
        reply = await frontend.ask("read")
    except NoFrontend:
        reply = None
    if reply is not None and reply.get("status") == "ok":
        return NotebookDoc(
            path=str(reply.get("path") or path or ""),
            origin="live",
            cells=cells_from_json({"cells": reply.get("cells") or []}),
        )
    if path is None:
        raise NotebookReadError(
            "this kernel does not know its notebook (a console or plain IPython); "
            "use get_cell_history for the cells run so far"
        )
    return await asyncio.to_thread(load_saved, Path(path))


def _decision_timeout() -> float | None:
    return approval_timeout()


async def _allowed(definition: ToolDefinition, call: ToolCall, approve: Approve | None) -> bool:
    """The tool's policy as the orchestrator applies it: auto runs, deny refuses, ask asks the user."""
    if definition.policy == "auto":
        return True
    if definition.policy == "deny" or approve is None:
        return False
    return await approve(call, definition)


async def _run_cells(cell_ids: list[str]) -> str:
    reply = await frontend.ask("run_cells", cell_ids=cell_ids, in_request=in_request())
    if reply.get("status") != "ok":
        raise RuntimeError(f"the notebook could not run the cells: {reply.get('message', reply.get('status'))}")
    return rerun_report(reply, cell_ids)


def insert_cell_tool(shell: InteractiveShell) -> ToolDefinition:
    """`insert_cell` bound to `shell`: a proposed cell below the asking one, which the user runs themselves."""

    async def insert_cell(source: str) -> ToolOutput:
        """Propose a new code cell below the current one for the user to review and run themselves.

        Args:
            source: the code of the new cell
        """
        return await propose_cell(shell, source)

    return definition_from_function(insert_cell, policy="auto", source="builtin")  # a proposal: nothing runs


def make_notebook_tools(
    notebook_path: NotebookPath,
    approve: Approve | None = None,
    registry: ToolRegistry | None = None,
    checkpoint: Checkpoint | None = None,
    on_applied: Callable[[dict[str, str]], None] | None = None,
    auto: Callable[[], bool] | None = None,
) -> list[ToolDefinition]:
    """The notebook tools; `approve` asks the user (the kernel's approval gate) for the fix loop's re-runs,
    under run_cells' policy as `registry` holds it now (`%agent policy run_cells auto` is respected).
    `auto()`: the turn is in Auto mode, where edits land without waiting for Accept (Rewind takes them back)."""
    in_auto = auto or (lambda: False)
    ledger = ReadLedger()
    rerun_tool: list[ToolDefinition] = []

    async def rerun_dependents(cell_id: str) -> str:
        """After a fix ran: re-run the later cells that use what it defines, as run_cells' policy allows."""
        doc = await load_notebook(notebook_path)
        found = doc.find(cell_id)
        if found is None:
            return "Could not find the fixed cell again to look for the cells that depend on it."
        cells, names = dependents(doc.cells, found[0])
        if not cells:
            return "No later cell uses what it defines, so nothing else needed re-running."
        ids = [c.id for c in cells]
        what = f"Later cells that use what it defines ({', '.join(sorted(names))}): {', '.join(ids)}."
        call = ToolCall(
            id=new_id("call_"),
            name="run_cells",
            args={"cell_ids": ids, "reason": f"re-run after the fix of cell {cell_id}"},
        )
        current = registry.get("run_cells") if registry is not None else None
        definition = current if current is not None and current.source == "builtin" else rerun_tool[0]
        if not await _allowed(definition, call, approve):
            return f"{what} The user did not approve re-running them: tell them to re-run those cells."
        try:
            return f"{what} Re-ran them in order:\n{await _run_cells(ids)}"
        except NoFrontend:
            return f"{what} They could not be re-run from here: tell the user to re-run them."

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
            cells = [doc.find(cell_id)[1]]  # type: ignore[index]  # (one_cell raised if there is none)
            ledger.record(doc, only=cells[0].id)
        elif start is not None or end is not None:
            text = cell_range(doc, start or 0, end)
            cells = doc.cells[start or 0 : None if end is None else end + 1]
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
        return await propose_change(
            ledger,
            cell_id,
            new_source,
            _decision_timeout(),
            rerun_dependents,
            checkpoint=checkpoint,
            on_applied=on_applied,
            auto=in_auto(),
        )

    async def delete_cell(cell_id: str) -> ToolOutput:
        """Propose deleting a cell; the user accepts or rejects it on the cell.

        Args:
            cell_id: the cell's id, as shown by read_notebook
        """
        return await propose_change(ledger, cell_id, None, _decision_timeout(), on_applied=on_applied, auto=in_auto())

    async def run_cells(cell_ids: list[str]) -> ToolOutput:
        """Re-run existing notebook cells in order (the user approves); answers each one's new outputs.

        The run stops at the first cell that fails. Use it to verify a fix in the cells that depend on it.

        Args:
            cell_ids: the cells' ids, as shown by read_notebook, in the order to run them
        """
        try:
            text = await _run_cells([str(c) for c in cell_ids])
        except NoFrontend:
            raise RuntimeError(
                "cells can only be re-run in JupyterLab or Notebook 7 with the agentik extension; "
                "ask the user to re-run them"
            ) from None
        return ToolOutput(text=text, display={"text/plain": text})

    proposals = (read_notebook, edit_cell, delete_cell)  # a read, and changes the user accepts on the cell
    tools = [definition_from_function(fn, policy="auto", source="builtin") for fn in proposals]
    rerun_tool.append(definition_from_function(run_cells, policy="ask", source="builtin"))
    return tools + rerun_tool


def register_notebook_tools(
    registry: ToolRegistry,
    shell: InteractiveShell,
    notebook_path: NotebookPath,
    approve: Approve | None = None,
    auto: Callable[[], bool] | None = None,
) -> None:
    """Add insert_cell and the notebook tools, keeping a policy the user changed and a user tool of the same name."""
    checkpoints = checkpoints_for(shell)  # "Accept and run" is checkpointed like run_code; edits are noted
    tools = make_notebook_tools(notebook_path, approve, registry, checkpoints.stage, checkpoints.note_cell, auto)
    for definition in [insert_cell_tool(shell), *tools]:
        add_builtin(registry, definition)
