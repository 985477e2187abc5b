"""`%agent rewind` and the panel's Rewind button, in JupyterLab and Notebook 7.

Headless Debian Chromium + the fake LLM: a turn reads the notebook, proposes an edit to a cell
(the user accepts it on the cell, then changes it) and inserts a cell below the asking one; a
`%agent rewind` cell then removes the inserted cell, proposes putting the changed cell's source
back (the user accepts) and says so. A cell turn is stopped before the panel opens: the panel marks
it "■ Stopped". Then a panel turn runs approved code, and the panel's Rewind button shows the
preview, asks, and rewinds; the panel tells it once, by the rewound turn's line.
Steps run in file order on one server, kernel and page per app.
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

NOTEBOOK = "rewind_demo.ipynb"
CELL_LOAD, CELL_DATA, CELL_ASK, CELL_REWIND, CELL_SLOW, CELL_STOP, CELL_PANEL = range(7)
SOURCES = [
    "%load_ext agentik_jupyter",
    "rate = 1",
    "%%agent\nChange my notebook.",
    "%agent rewind",
    "%%agent\nTake your time.",
    "%agent stop",
    "%agent panel",
]
EDITED = "rate = 2  # from the agent"
MINE = "rate = 3  # mine"
INSERTED = "print('RATE', rate)"
REWIND_NOW = re.compile(r"^\W*Rewind now$")  # (after the icon's glyph)
LATEST = re.compile(r"^Take back the latest turn")  # the panel's Rewind beside Send


app_page = app_page_fixture(NOTEBOOK, SOURCES, "rewind")


def responder(request: Any) -> Reply:
    """The model: read the notebook, edit the `rate` cell, insert a cell, then answer."""
    last = request.messages[-1]
    if last.get("role") == "user":
        return Reply.tool_calls([{"name": "read_notebook", "args": {}}])
    told = str(last.get("content", ""))
    if "id=" in told and "In [" in told:
        cell_id = re.findall(r"id=(\S+) code", told)[CELL_DATA]
        return Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": cell_id, "new_source": EDITED}}])
    if "accepted the edit" in told:
        return Reply.tool_calls([{"name": "insert_cell", "args": {"source": INSERTED}}])
    return Reply.text("Edited and inserted. END-TURN")


def test_rewind_reverts_the_edit_and_removes_the_inserted_cell(app_page: Lab) -> None:
    lab = app_page
    lab.srv.set_responder(responder)
    run_cell(lab, CELL_LOAD)
    lab.console.clear()  # Notebook 7.6 logs an error of its own while the page loads; only ours count
    run_cell(lab, CELL_DATA)
    run_cell(lab, CELL_ASK)
    diff = lab.cell(CELL_DATA).locator(PROPOSAL)
    lab.wait(lambda: diff.count() == 1 and diff.is_visible(), 40, "the diff on the cell")
    diff.get_by_role("button", name="Accept", exact=True).click()
    lab.wait(lambda: "END-TURN" in lab.text(lab.output(CELL_ASK)), 40, "the turn to end")
    cells = lab.page.locator(".jp-Notebook .jp-Cell")
    lab.wait(lambda: cells.count() == len(SOURCES) + 1, 10, "the inserted cell")
    assert source(lab, CELL_DATA) == EDITED
    assert source(lab, CELL_ASK + 1) == f"{PROPOSAL_LINE}\n{INSERTED}"
    shot(lab, "rewind_before.png")
    lab.cell(CELL_DATA).locator(".cm-content").click()  # the user changes the agent's edit
    lab.page.keyboard.press("Control+A")
    lab.page.keyboard.type(MINE)
    lab.page.keyboard.press("Escape")

    # Run the `%agent rewind` cell (the inserted cell sits above it, until the rewind removes it)
    lab.cell(CELL_REWIND + 1).locator(".jp-InputArea-prompt").click()
    lab.page.keyboard.press("Control+Enter")  # run in place: no new cell below the last one
    lab.wait(lambda: cells.count() == len(SOURCES), 20, "the inserted cell removed")
    assert PROPOSAL_LINE not in lab.text(lab.page.locator(".jp-Notebook"))
    # the cell the user changed is not reverted silently: the revert is proposed on it
    diff = lab.cell(CELL_DATA).locator(PROPOSAL)
    lab.wait(lambda: diff.count() == 1 and diff.is_visible(), 20, "the revert proposed on the changed cell")
    assert "- " + MINE in lab.text(diff) and "+ rate = 1" in lab.text(diff)
    assert "Rewind: put this cell back as it was before the agent's turn?" in lab.text(diff)
    assert source(lab, CELL_DATA) == MINE
    shot(lab, "rewind_asks.png", at=diff)
    diff.get_by_role("button", name="Accept", exact=True).click()
    lab.wait(lambda: source(lab, CELL_DATA) == "rate = 1", 10, "the edit reverted")
    output = lab.output(CELL_REWIND)
    lab.wait(lambda: "Rewound turn 1" in lab.text(output), 20, "the rewind's printout")
    printed = lab.text(output)
    assert re.search(r"cells reverted: \S+", printed) and "cells reverted: none" not in printed
    assert re.search(r"inserted cells removed: \S+", printed) and "inserted cells removed: none" not in printed
    assert "turns dropped from the conversation: 1: 'Change my notebook.'" in printed
    shot(lab, "rewind_after.png", at=lab.output(CELL_REWIND))
    assert not [line for line in lab.console if line.startswith("pageerror")], lab.console


def test_the_panel_rewind_button_previews_asks_and_rewinds(app_page: Lab) -> None:
    lab = app_page
    lab.srv.set_responder(None)
    lab.srv.push(Reply.text("Never said.", first_byte_after=120))  # a turn stopped before the panel shows
    asked = len(lab.srv.requests)
    run_cell(lab, CELL_SLOW)
    lab.wait(lambda: len(lab.srv.requests) > asked, 60, "the slow turn's request to the model")
    run_cell(lab, CELL_STOP)
    lab.wait(lambda: "■ Stopped" in lab.text(lab.output(CELL_SLOW)), 60, "the cell turn stopped")
    lab.srv.push(
        Reply.tool_calls([{"name": "run_code", "args": {"code": "rate = 5\nprint('RATE', rate)"}}]),
        Reply.text("Set the rate. END-PANEL"),
    )
    run_cell(lab, CELL_PANEL)
    panel = lab.output(CELL_PANEL)
    box = panel.get_by_placeholder("Ask the agent")
    box.wait_for(timeout=20_000)
    # the turn stopped before the panel was shown is marked there, under its question
    transcript = panel.locator(".agentik-panel-transcript")
    lab.wait(lambda: "Take your time." in lab.text(transcript), 30, "the stopped turn in the panel")
    assert lab.text(transcript).count("■ Stopped") == 1, lab.text(transcript)
    assert lab.text(transcript).index("Take your time.") < lab.text(transcript).index("■ Stopped")
    box.fill("Set the rate to 5.")
    panel.get_by_role("button", name="Send").click()
    approve = panel.get_by_role("button", name="Approve")
    approve.wait_for(state="visible", timeout=30_000)
    approve.click()
    lab.wait(lambda: "END-PANEL" in lab.text(panel), 30, "the panel turn to end")
    lab.wait(lambda: panel.get_by_role("button", name="Stop").is_disabled(), 15, "the panel to be idle")

    latest = panel.get_by_title(LATEST)  # (beside Send; each turn above ends with its own Rewind too)
    latest.click()
    lab.wait(lambda: "Rewind would take back turn 3" in lab.text(panel), 20, "the preview")
    preview = lab.text(panel)
    assert "names restored: rate" in preview and "Set the rate to 5." in preview
    shot(lab, "rewind_panel_preview.png", at=panel.get_by_role("button", name=REWIND_NOW))
    panel.get_by_role("button", name=REWIND_NOW).click()
    lab.wait(lambda: "Rewound turn 3" in lab.text(panel), 20, "the rewind's outcome")
    lab.wait(lambda: not panel.get_by_role("button", name=REWIND_NOW).count(), 20, "the question answered")
    # told once, by the rewound turn's line in the transcript: no printout under the box, no note
    shown = lab.text(panel)
    assert shown.count("Rewound turn 3") == 1 and "This turn was rewound." not in shown, shown
    assert "names restored: rate" in lab.text(transcript)
    shot(lab, "rewind_panel_done.png", at=latest)
    assert not [line for line in lab.console if line.startswith("pageerror")], lab.console
