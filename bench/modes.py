"""The demo's analysis in Agent and in Auto: the cards that asked, the time to the final answer, the Rewind.

In a real kernel through jupyter_client, with the fake model scripted as the quickstart's analysis goes:
describe the data (`describe_dataframe`), clean a column and plot it (two `run_code` calls), insert a
summary cell (`insert_cell`), then the answer. The same `%%agent --wait` turn runs once with the session
in Agent and once in Auto, each in a new kernel, from a cell of a notebook the client holds and keeps as
our lab extension keeps a page's (bench/notebook_page.py: it answers the extension's handshake and the
kernel's requests to insert and revert cells). Every approval card that opens is approved at once by
the client, as a user who clicks without reading would (so the time measures the cards' round trips,
not a person). After the Auto turn, `%agent rewind` must give back every variable as it was before it
and remove every cell the turn added (`rewind_mismatches` counts the variables that differ or were
left behind and the added cells still in the notebook; `cells_left` the cells alone).
"""

from __future__ import annotations

import time
from typing import Any

from agentik_jupyter.notebook.cells import PROPOSAL_LINE
from agentik_jupyter.testing import FakeLLMServer, Reply

from .kernel_client import BenchKernel, kernel_environ
from .notebook_page import NotebookPage

SETUP = (
    "import numpy as np, pandas as pd, matplotlib\n"
    "matplotlib.use('Agg')\n"
    "sales = pd.DataFrame({'region': list('NSEW') * 250, 'price': np.where(np.arange(1000) % 7 == 0, np.nan, "
    "np.arange(1000) % 50 + 1.0), 'units': np.arange(1000) % 13})\n"
    "_before = sales.copy()"
)
CLEAN = "sales['price'] = sales['price'].fillna(sales['price'].median())\nmissing = int(sales['price'].isna().sum())"
PLOT = "ax = sales.groupby('region')['units'].sum().plot(kind='bar')\nfig = ax.figure"
SUMMARY = "print(sales.groupby('region')['units'].sum())"
ASK = "%%agent --wait\nClean the prices and plot units by region."
EXTENSION = {"live_text": 1}
"""What our lab extension answers to the kernel's frontend handshake (bench/paced_turns.py)."""
ANSWER = "Prices were missing in 143 rows; I filled them with the median and plotted units by region."
CHECK = "[not sales.equals(_before), *[n for n in ('missing', 'ax', 'fig') if n in globals()]]"
"""What the rewind did not give back: whether `sales` differs, then the turn's names still there."""


def _replies() -> list[Reply]:
    return [
        Reply.tool_calls([{"name": "describe_dataframe", "args": {"name": "sales"}}]),
        Reply.tool_calls([{"name": "run_code", "args": {"code": CLEAN}}]),
        Reply.tool_calls([{"name": "run_code", "args": {"code": PLOT}}]),
        Reply.tool_calls([{"name": "insert_cell", "args": {"source": SUMMARY}}]),
        Reply.text(ANSWER),
    ]


def _one(mode: str) -> dict[str, Any]:
    with FakeLLMServer() as server:
        page = NotebookPage(["%load_ext agentik_jupyter", SETUP, f"%agent mode {mode}", ASK])
        kernel = BenchKernel(kernel_environ(server.env()), frontend=EXTENSION, page=page)
        try:
            for index in range(3):
                kernel.run(page.notebook.cells[index].source)
            before = page.ids
            server.push(*_replies())
            approve: list[str] = []

            def click(msg: dict[str, Any]) -> None:
                if msg["msg_type"] != "comm_open":
                    return
                state = msg["content"].get("data", {}).get("state", {})
                if state.get("_model_name") == "ButtonModel" and state.get("description") == "Approve":
                    approve.append(msg["content"]["comm_id"])
                    kernel.send_comm(msg["content"]["comm_id"], {"method": "custom", "content": {"event": "click"}})

            started = time.perf_counter()
            msg_id = kernel.send(ASK, cell_id=page.cell_id(3))
            cell = kernel.wait_idle(msg_id, started, on_message=click)
            if not cell.ok or ANSWER not in cell.text:
                raise RuntimeError(f"the {mode} turn did not end with its answer: {cell.text[-300:]!r}")
            added = [cell_id for cell_id in page.ids if cell_id not in before]
            if [page.source(cell_id) for cell_id in added] != [f"{PROPOSAL_LINE}\n{SUMMARY}"]:
                raise RuntimeError(f"the {mode} turn did not add its summary cell: {page.notebook.cells[3:]}")
            result: dict[str, Any] = {
                "cards": len(approve),
                "seconds_to_answer": round(cell.seconds, 3),
                "cells_added": len(added),
            }
            if mode == "auto":
                kernel.run("%agent rewind")
                left = kernel.value(CHECK)
                cells_left = [cell_id for cell_id in added if cell_id in page.ids]
                result["cells_left"] = len(cells_left)
                result["rewind_mismatches"] = int(bool(left[0])) + len(left[1:]) + len(cells_left)
                result["not_restored"] = (
                    [str(x) for x in left[1:]] + (["sales"] if left[0] else []) + [f"cell {c}" for c in cells_left]
                )
                result["notebook_as_before"] = page.ids == before
            return result
        finally:
            kernel.close()


def modes() -> dict[str, Any]:
    """Agent, then Auto: cards that asked, seconds to the final answer, and Auto's Rewind."""
    agent, auto = _one("agent"), _one("auto")
    return {
        "agent": agent,
        "auto": auto,
        "time_ratio": round(auto["seconds_to_answer"] / agent["seconds_to_answer"], 3),
    }
