"""The offline demo model's fix and edit in JupyterLab, as a new user meets them (headless chromium).

1. a cell fails with a typo; **Fix with agent** starts the fix turn: the user's bubble is one
   line, the demo reads the cell and proposes the corrected source as a diff on it, and
   **Accept and run** fixes it;
2. "Add a comment to the cell that makes sales." reads the notebook and proposes a diff on
   that cell; **Accept** changes it and the answer says so.

Screenshots land in tests/artifacts/.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from .test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from .test_browser_notebook import PROPOSAL, run_cell, source

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

from agentik_jupyter.testing.demo import demo_responder  # noqa: E402

NOTEBOOK = "demo_walk.ipynb"
CELL_LOAD, CELL_DATA, CELL_BROKEN, CELL_ASK_EDIT = range(4)
DATA = "import pandas as pd\nsales = pd.DataFrame({'region': ['north', 'south'] * 5, 'units': range(10)})"
BROKEN = 'average = sale["units"].mean()'
SOURCES = ["%load_ext agentik_jupyter", DATA, BROKEN, "%%agent\nAdd a comment to the cell that makes sales."]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with notebook_page(tmp_path_factory, NOTEBOOK, SOURCES, artifact="jupyterlab-demo",
                       url_path=f"/lab/tree/{NOTEBOOK}") as lab:
        lab.srv.set_responder(demo_responder)
        yield lab


def index_of(lab: Lab, text: str) -> int:
    """The index of the cell whose source holds `text` (cells may have been inserted above it)."""
    return int(lab.page.evaluate(
        "t => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].findIndex("
        "c => (c.querySelector('.cm-content')?.innerText ?? '').includes(t))", text))


def test_1_fix_with_agent_proposes_the_corrected_cell(lab: Lab) -> None:
    for index in (CELL_LOAD, CELL_DATA, CELL_BROKEN):
        run_cell(lab, index)
    broken = lab.cell(CELL_BROKEN)
    lab.wait(lambda: "NameError" in lab.text(lab.output(CELL_BROKEN)), 20, "the NameError")
    broken.get_by_role("button", name="Fix with agent").click()
    proposal = broken.locator(PROPOSAL)
    lab.wait(lambda: proposal.count() == 1 and proposal.is_visible(), 40, "the proposed fix on the failed cell")
    assert "+ average = sales[\"units\"].mean()" in lab.text(proposal)
    notebook = lab.page.locator(".jp-Notebook")
    lab.wait(lambda: "Fix the failed cell [" in lab.text(notebook), 20, "the fix turn's question")
    bubble = lab.page.locator(".jp-Notebook .agentik-user").filter(has_text="Fix the failed cell [")
    shown = lab.text(bubble.first)
    assert "NameError: name 'sale' is not defined" in shown, shown
    assert "ipykernel" not in shown and "Attached by" not in shown and "Traceback" not in shown, shown
    lab.shot("demo_fix_proposal.png", at=proposal)
    proposal.get_by_role("button", name="Accept and run").click()
    lab.wait(lambda: "ran without an error" in lab.text(notebook), 40, "the demo's report after Accept and run")
    assert source(lab, CELL_BROKEN) == 'average = sales["units"].mean()'
    assert "NameError" not in lab.text(lab.output(CELL_BROKEN))
    lab.shot("demo_fixed.png")


def test_2_an_edit_is_a_diff_on_the_cell_that_makes_sales(lab: Lab) -> None:
    ask = index_of(lab, "Add a comment to the cell")
    run_cell(lab, ask)
    proposal = lab.cell(CELL_DATA).locator(PROPOSAL)
    lab.wait(lambda: proposal.count() == 1 and proposal.is_visible(), 40, "the proposed comment on the data cell")
    assert "+ # Defines sales. (comment added by the agent)" in lab.text(proposal)
    lab.shot("demo_edit_proposal.png", at=proposal)
    proposal.get_by_role("button", name="Accept", exact=True).click()
    lab.wait(lambda: "You accepted the change" in lab.text(lab.output(ask)), 40, "the answer after Accept")
    assert source(lab, CELL_DATA).startswith("# Defines sales.") and source(lab, CELL_DATA).endswith(DATA.splitlines()[-1])
