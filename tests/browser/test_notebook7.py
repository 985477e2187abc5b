"""The agent's edit_cell diff in Notebook 7 (`/notebooks/…`), headless Debian Chromium + the fake LLM.

The same lab extension serves JupyterLab and Notebook 7; this checks the diff UI in the latter:
the model reads the live document, proposes an edit, the diff appears on the cell with Accept /
Accept and run / Reject; Reject leaves the cell as it was and the model is told; Accept changes it
(without running it) and the model is told.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import (  # noqa: E402  (skips the module when chromium is missing)
    Lab,
    notebook_page,
    tool_messages,
)
from tests.browser.test_notebook import PROPOSAL, live_cell_ids, run_cell, source
from tests.browser_apps import IDLE, is_notebook7, url_path

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "nb7_edits.ipynb"
CELL_LOAD, CELL_DATA, CELL_ASK = range(3)
SOURCES = ["%load_ext agentik_jupyter", "rate = 1", "%%agent\nLook at my notebook."]
EDITED = "rate = 2  # from the agent"


@pytest.fixture(scope="module")
def nb7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with notebook_page(
        tmp_path_factory,
        NOTEBOOK,
        SOURCES,
        artifact="notebook7-edits",
        url_path=url_path("notebook7", NOTEBOOK),
        reset=False,
    ) as lab:
        lab.wait(lambda: lab.page.locator(IDLE).count() > 0, 60, "the notebook's kernel to be idle")
        # Notebook 7.6 itself logs "Cannot read properties of undefined (reading 'schema')" while the
        # page loads, with the agentik extension disabled too: only errors after the load count.
        lab.console.clear()
        yield lab


def proposal(lab: Lab) -> Any:
    return lab.cell(CELL_DATA).locator(PROPOSAL)


def ask_edit(lab: Lab, cell_id: str, answer: str) -> None:
    lab.srv.push(
        Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
        Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": cell_id, "new_source": EDITED}}]),
        Reply.text(answer),
    )
    run_cell(lab, CELL_ASK)
    lab.wait(lambda: proposal(lab).count() == 1 and proposal(lab).is_visible(), 30, "the diff on the cell")


def test_1_in_notebook7_reject_leaves_the_cell_and_the_model_is_told(nb7: Lab) -> None:
    lab = nb7
    assert is_notebook7(lab)
    run_cell(lab, CELL_LOAD)
    lab.srv.push(Reply.tool_calls([{"name": "read_notebook", "args": {}}]), Reply.text("Read. END-READ"))
    run_cell(lab, CELL_ASK)
    lab.wait(lambda: "END-READ" in lab.text(lab.output(CELL_ASK)), 30, "the reading turn")
    assert "live document in the editor" in tool_messages(lab)[-1]["content"]
    target = live_cell_ids(lab)[CELL_DATA]
    lab.page.evaluate("id => window.__agentik_target = id", target)

    ask_edit(lab, target, "Left alone. END-REJECT")
    diff = lab.text(proposal(lab))
    assert "- rate = 1" in diff and "+ " + EDITED in diff
    buttons = [lab.text(b) for b in proposal(lab).locator("button").all()]
    assert buttons == ["Accept", "Accept and run", "Reject"]
    assert source(lab, CELL_DATA) == "rate = 1"  # nothing changes before Accept
    lab.shot("nb7_edit_proposal.png", at=proposal(lab))
    proposal(lab).get_by_role("button", name="Reject").click()
    lab.wait(lambda: "END-REJECT" in lab.text(lab.output(CELL_ASK)), 30, "the answer after Reject")
    assert proposal(lab).count() == 0 and source(lab, CELL_DATA) == "rate = 1"
    assert "rejected the edit" in tool_messages(lab)[-1]["content"]


def test_2_in_notebook7_accept_changes_the_cell_and_the_model_is_told(nb7: Lab) -> None:
    lab = nb7
    target = str(lab.page.evaluate("() => window.__agentik_target"))
    ask_edit(lab, target, "Changed. END-ACCEPT")
    proposal(lab).get_by_role("button", name="Accept", exact=True).click()
    lab.wait(lambda: "END-ACCEPT" in lab.text(lab.output(CELL_ASK)), 30, "the answer after Accept")
    assert proposal(lab).count() == 0 and source(lab, CELL_DATA) == EDITED
    assert "now holds the new source (not run)" in tool_messages(lab)[-1]["content"]
    assert not [line for line in lab.console if line.startswith("pageerror")], lab.console
    lab.shot("nb7_edit_accepted.png", at=lab.cell(CELL_DATA))
