"""Proposed code cells: where `insert_cell` puts them, and how they reach the notebook.

Two routes, chosen per turn by the anchor the turn was started with:

- **In the request** (`%%agent --wait`, or no anchor): IPython's `set_next_input`. The
  proposal rides on the execute_reply of the cell being run, so every frontend shows it
  right below that cell.
- **From the background** (a default `%%agent` cell, the chat panel): the cell that asked
  has already replied, so a payload would wait for the next cell the user runs. Instead
  the kernel opens a comm to the JupyterLab extension (target `agentik.cells`), which
  inserts the cell below the asking cell (or the active cell for the panel) and answers
  on its own comm (target `agentik.cells.ack`) with the new cell's id. When nothing
  answers (no extension: VS Code, classic runners) the payload route is the fallback.

The answer travels on a comm the frontend opens, not on the kernel's comm: every other
client connected to the kernel (a console, a second browser) closes a comm whose target
it does not know, and a close must not hide the extension's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator

from ..types import ToolOutput

CELLS_TARGET = "agentik.cells"
ACK_TARGET = "agentik.cells.ack"
ACK_TIMEOUT_S = 3.0  # the extension answers in milliseconds; this only bounds a frontend without it
CLOSED_GRACE_S = 1.0  # a client without the extension closed our comm: wait this long for the answer
NO_FRONTEND_MEMORY_S = 60.0  # after no answer, go straight to the fallback for this long


@dataclass
class CellAnchor:
    """Where this turn's proposed cells go.

    `cell_id` is the asking cell (None: below the notebook's active cell);
    `in_request` says the asking cell is still executing, so `set_next_input` reaches it.
    Successive proposals of one turn go below the previous one, keeping their order.
    """

    cell_id: str | None = None
    in_request: bool = False


ANCHOR: ContextVar[CellAnchor | None] = ContextVar("agentik_cell_anchor", default=None)


@contextlib.contextmanager
def anchored(anchor: CellAnchor) -> Iterator[None]:
    """Set the anchor for turns started inside the block (a task copies it when created)."""
    token = ANCHOR.set(anchor)
    try:
        yield
    finally:
        ANCHOR.reset(token)


def asking_cell_id(shell: Any) -> str | None:
    """The id of the cell being executed, from the execute_request JupyterLab sent."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent("shell") if kernel is not None else {}
    except Exception:
        return None
    cell_id = (parent or {}).get("metadata", {}).get("cellId")
    return cell_id if isinstance(cell_id, str) and cell_id else None


async def propose_cell(shell: Any, source: str) -> ToolOutput:
    """Put `source` in a new code cell below the turn's anchor; the user decides to run it."""
    if not source.strip():
        raise ValueError("source is empty; pass the code of the cell to propose")
    anchor = ANCHOR.get()
    if anchor is not None and not anchor.in_request and getattr(shell, "kernel", None) is not None:
        cell_id = await _frontend.insert(source, anchor.cell_id)
        if cell_id is not None:
            anchor.cell_id = cell_id
            return _output(source, "Inserted a new code cell below the asking cell; the user decides whether to run it.")
    return _propose_by_payload(shell, source)


def _propose_by_payload(shell: Any, source: str) -> ToolOutput:
    """IPython's set_next_input. A reply carries one, so proposals in one reply are merged."""
    payload_manager = getattr(shell, "payload_manager", None)
    pending = ""
    if payload_manager is not None:
        for item in payload_manager.read_payload():
            if item.get("source") == "set_next_input" and not item.get("replace"):
                pending = str(item.get("text", ""))
    text = f"{pending.rstrip()}\n\n{source}" if pending else source
    shell.set_next_input(text, replace=False)
    lines = source.count("\n") + 1
    note = f"Proposed a new code cell ({lines} line(s)) below the current cell; the user decides whether to run it."
    if pending:
        note += " It was merged with the cell proposed earlier in this turn."
    return _output(source, note)


def _output(source: str, note: str) -> ToolOutput:
    fenced = "```python\n" + source.rstrip() + "\n```"
    return ToolOutput(text=note, display={"text/markdown": fenced, "text/plain": source})


class _FrontendCells:
    """The comm conversation with the JupyterLab extension, one request per proposed cell."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[str | None]] = {}
        self._registered = False
        self._missing_until = 0.0

    async def insert(self, source: str, after_cell_id: str | None) -> str | None:
        """The new cell's id, or None when no frontend inserted it."""
        if time.monotonic() < self._missing_until:
            return None
        try:
            from comm import create_comm, get_comm_manager
        except ImportError:
            return None
        loop = asyncio.get_running_loop()
        if not self._registered:
            get_comm_manager().register_target(ACK_TARGET, self._on_ack)
            self._registered = True
        request_id = uuid.uuid4().hex
        answer: asyncio.Future[str | None] = loop.create_future()
        self._waiting[request_id] = answer

        def closed(_msg: Any) -> None:  # may run on a subshell's thread: the timer goes on the turn's loop
            loop.call_soon_threadsafe(loop.call_later, CLOSED_GRACE_S, _settle, answer, None)

        data = {"action": "insert_cell", "request_id": request_id, "source": source, "after_cell_id": after_cell_id}
        comm = create_comm(target_name=CELLS_TARGET, data=data)
        comm.on_close(closed)
        try:
            cell_id = await asyncio.wait_for(asyncio.shield(answer), ACK_TIMEOUT_S)
        except asyncio.TimeoutError:
            cell_id = None
        finally:
            self._waiting.pop(request_id, None)
            comm.close()
        self._missing_until = 0.0 if cell_id is not None else time.monotonic() + NO_FRONTEND_MEMORY_S
        return cell_id

    def _on_ack(self, comm: Any, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data") or {}
        answer = self._waiting.get(str(data.get("request_id")))
        cell_id = data.get("cell_id")
        if answer is not None:
            loop = answer.get_loop()
            loop.call_soon_threadsafe(_settle, answer, cell_id if isinstance(cell_id, str) and cell_id else None)


def _settle(answer: asyncio.Future[str | None], value: str | None) -> None:
    if not answer.done():
        answer.set_result(value)


_frontend = _FrontendCells()
