"""The Rewind at the end of a `%%agent` cell's turn, in JupyterLab and Notebook 7.

Headless Debian Chromium + the fake LLM: a turn runs approved code that changes `rate`, deletes a
cell (the user accepts it on the cell) and inserts a cell below the asking one; the Rewind button
in the cell's output shows that turn's preview, asks, and "Rewind now" removes the inserted cell,
puts the deleted one back and `rate` too, which a cell run afterwards prints.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_browser import Lab  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import PROPOSAL, run_cell, source
from tests.browser_apps import app_page_fixture, shot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from agentik_jupyter.notebook.cells import PROPOSAL_LINE  # noqa: E402
from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "turn_rewind.ipynb"
CELL_LOAD, CELL_DATA, CELL_NOTE, CELL_ASK, CELL_PRINT = range(5)
QUESTION = "Set the rate, drop the note and add a cell."
NOTE = "note = 'keep me'"
SOURCES = ["%load_ext agentik_jupyter", "rate = 1", NOTE, f"%%agent\n{QUESTION}", "print('RATE-IS', rate)"]
INSERTED = "print('INSERTED', rate)"
REWIND, REWIND_NOW = re.compile(r"^\W*Rewind$"), re.compile(r"^\W*Rewind now$")  # (after the icon's glyph)


app_page = app_page_fixture(NOTEBOOK, SOURCES, "turn-rewind")


def responder(request: Any) -> Reply:
    """The model: run code that changes `rate`, read the notebook, delete the note cell, insert a
    cell, then answer."""
    calls = [m for m in request.messages if m.get("role") == "assistant" and m.get("tool_calls")]
    if not calls:
        return Reply.tool_calls([{"name": "run_code", "args": {"code": "rate = 5"}}])
    if len(calls) == 1:
        return Reply.tool_calls([{"name": "read_notebook", "args": {}}])
    if len(calls) == 2:
        cell_id = re.findall(r"id=(\S+) code", str(request.messages[-1].get("content", "")))[CELL_NOTE]
        return Reply.tool_calls([{"name": "delete_cell", "args": {"cell_id": cell_id}}])
    if len(calls) == 3:
        return Reply.tool_calls([{"name": "insert_cell", "args": {"source": INSERTED}}])
    return Reply.text("Set, deleted and inserted. END-TURN")


def test_the_rewind_in_the_cells_output_takes_its_turn_back(app_page: Lab) -> None:
    lab = app_page
    lab.srv.set_responder(responder)
    run_cell(lab, CELL_LOAD)
    lab.console.clear()  # Notebook 7.6 logs an error of its own while the page loads; only ours count
    run_cell(lab, CELL_DATA)
    run_cell(lab, CELL_ASK)
    asking = lab.page.locator(".jp-Notebook .jp-Cell", has_text=QUESTION)  # (its index moves with the edits)
    output = asking.locator(".jp-Cell-outputArea").first
    approve = output.get_by_role("button", name="Approve")
    approve.wait_for(state="visible", timeout=60_000)
    approve.click()
    diff = lab.cell(CELL_NOTE).locator(PROPOSAL)
    lab.wait(lambda: diff.count() == 1 and diff.is_visible(), 60, "the deletion proposed on the note cell")
    diff.get_by_role("button", name="Accept", exact=True).click()
    lab.wait(lambda: "END-TURN" in lab.text(output), 60, "the turn to end")
    cells = lab.page.locator(".jp-Notebook .jp-Cell")
    lab.wait(lambda: source(lab, CELL_ASK) == f"{PROPOSAL_LINE}\n{INSERTED}", 20, "the inserted cell")
    assert cells.count() == len(SOURCES) and NOTE not in [source(lab, i) for i in range(len(SOURCES))]

    rewind = output.get_by_role("button", name=REWIND)
    rewind.wait_for(state="visible", timeout=30_000)  # at the end of the turn, once it ended
    rewind.click()
    lab.wait(lambda: "Rewind would take back turn 1" in lab.text(output), 30, "the turn's preview")
    preview = lab.text(output)
    assert "names restored: rate" in preview and "inserted cells to remove:" in preview
    assert "inserted cells to remove: none" not in preview and "deleted cells to restore:" in preview
    assert source(lab, CELL_ASK) == f"{PROPOSAL_LINE}\n{INSERTED}"  # asked, not done
    shot(lab, "turn_rewind_preview.png", at=output.get_by_role("button", name=REWIND_NOW))
    output.get_by_role("button", name=REWIND_NOW).click()
    lab.wait(lambda: source(lab, CELL_NOTE) == NOTE, 30, "the deleted cell back in its place")
    lab.wait(lambda: "Rewound turn 1" in lab.text(output), 30, "the rewind's printout")
    assert [source(lab, i) for i in range(cells.count())] == SOURCES  # and the inserted cell gone
    done = lab.text(output)
    assert "This turn was rewound." in done and not output.get_by_role("button", name=REWIND).count()
    assert PROPOSAL_LINE not in lab.text(lab.page.locator(".jp-Notebook"))
    shot(lab, "turn_rewind_done.png", at=output)

    run_cell(lab, CELL_PRINT)  # the variable is back
    lab.wait(lambda: "RATE-IS 1" in lab.text(lab.output(CELL_PRINT)), 30, "rate printed")
    assert not [line for line in lab.console if line.startswith("pageerror")], lab.console
