"""A notebook the bench holds and keeps as our lab extension keeps a page's notebook.

The kernel asks the notebook extension to read the notebook, insert a proposed cell and, on a
rewind, revert what the agent did to the cells (agentik_jupyter/notebook/requests.py: a comm to
`agentik.notebook`, answered on a comm to `agentik.notebook.reply`). This page answers those
requests on a real nbformat notebook as labextension/src/notebook.ts does (insert below the asking
cell; remove an inserted cell, or put an edited one back, only while it still holds what the agent
left in it), so a benchmark can count the cells a turn added and the ones its Rewind left behind.
What it is not: JupyterLab. The browser tests drive the real extension.
"""

from __future__ import annotations

import uuid
from typing import Any

import nbformat

REQUEST_TARGET = "agentik.notebook"
REPLY_TARGET = "agentik.notebook.reply"


class NotebookPage:
    """One page's notebook: code cells with ids, changed only by the kernel's requests."""

    def __init__(self, sources: list[str]) -> None:
        self.notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
        self.asked: list[str] = []  # the actions the kernel asked for, in order

    @property
    def ids(self) -> list[str]:
        return [str(cell.id) for cell in self.notebook.cells]

    def cell_id(self, index: int) -> str:
        return str(self.notebook.cells[index].id)

    def source(self, cell_id: str) -> str | None:
        for cell in self.notebook.cells:
            if cell.id == cell_id:
                return str(cell.source)
        return None

    def handle(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """The reply to one iopub message when it is a request to the notebook extension, else None."""
        content = msg.get("content") or {}
        if msg.get("msg_type") != "comm_open" or content.get("target_name") != REQUEST_TARGET:
            return None
        data = content.get("data") or {}
        action = str(data.get("action"))
        self.asked.append(action)
        reply: dict[str, Any] = {"request_id": data.get("request_id"), "page": data.get("page"), "phase": "result"}
        if action == "read":
            cells = [{"id": c.id, "cell_type": c.cell_type, "source": c.source} for c in self.notebook.cells]
            return {**reply, "status": "ok", "cells": cells}
        if action == "insert_cell":
            return {**reply, "status": "ok", "cell_id": self._insert(str(data.get("source", "")), data)}
        if action == "revert_cells":
            return {**reply, "status": "ok", "results": [self._revert(c) for c in data.get("changes") or []]}
        return {**reply, "status": "error", "message": f"the bench's page does not do {action}"}

    def _insert(self, source: str, data: dict[str, Any]) -> str:
        """Below the asking cell (the last cell when none is named), as cells.ts insertBelow does."""
        cell = nbformat.v4.new_code_cell(source, id=uuid.uuid4().hex[:8])
        cell.metadata["agentik"] = {"proposal": True}
        after = data.get("after_cell_id")
        index = self.ids.index(after) + 1 if after in self.ids else len(self.notebook.cells)
        self.notebook.cells.insert(index, cell)
        return str(cell.id)

    def _revert(self, change: dict[str, Any]) -> dict[str, str]:
        """One change undone as notebook.ts revertCells does it."""
        cell_id = str(change.get("cell_id"))
        ids = self.ids
        if change.get("kind") == "delete":
            if cell_id in ids:
                return {"cell_id": cell_id, "outcome": "present"}
            above = ids.index(change["after"]) + 1 if change.get("after") in ids else len(ids)
            restored = nbformat.v4.new_code_cell(str(change.get("old", "")), id=cell_id)
            self.notebook.cells.insert(above, restored)
            return {"cell_id": cell_id, "outcome": "restored"}
        if cell_id not in ids:
            return {"cell_id": cell_id, "outcome": "missing"}
        cell = self.notebook.cells[ids.index(cell_id)]
        left = change.get("new", "") if change.get("kind") == "edit" else change.get("source", "")
        if cell.source != left:
            return {"cell_id": cell_id, "outcome": "changed"}
        if change.get("kind") == "edit":
            cell.source = str(change.get("old", ""))
            return {"cell_id": cell_id, "outcome": "reverted"}
        del self.notebook.cells[ids.index(cell_id)]
        return {"cell_id": cell_id, "outcome": "removed"}
