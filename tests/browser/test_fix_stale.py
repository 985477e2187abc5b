"""No stale "Fix with agent": once a fix's diff is on the failed cell, its button is gone (JupyterLab).

JupyterLab + headless Debian Chromium + the fake LLM. A cell fails and shows **Fix with agent**;
the user asks for the fix another way (`%agent fix`), and the agent proposes its change on the
failed cell. While that diff waits for Accept, a second fix of the same cell would propose a change
to a cell about to change: the button goes when the diff appears, and the kernel refuses a second
fix of a cell whose fix is under way (tests/kernel/test_control_fix.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import nbformat
import pytest

from tests.browser.test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import PROPOSAL, run_cell, source

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "fix_stale.ipynb"
SOURCES = ["%load_ext agentik_jupyter", "total = 1", "scaled = total * factor", "%agent fix"]
CELL_LOAD, CELL_DATA, CELL_BROKEN, CELL_FIX = range(4)
FIXED = "factor = 10\nscaled = total * factor"


@pytest.fixture
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact="jupyterlab-fix-stale", url_path=f"/lab/tree/{NOTEBOOK}"
    ) as lab:
        yield lab


def test_the_fix_button_goes_when_a_fix_is_proposed_on_the_cell(lab: Lab) -> None:
    run_cell(lab, CELL_LOAD)
    run_cell(lab, CELL_DATA)
    run_cell(lab, CELL_BROKEN)
    button = lab.cell(CELL_BROKEN).get_by_role("button", name="Fix with agent")
    button.wait_for(timeout=30_000)
    broken = nbformat.read(lab.server.root / NOTEBOOK, as_version=4).cells[CELL_BROKEN].id
    lab.srv.push(
        Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
        Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": broken, "new_source": FIXED}}]),
        Reply.text("Defined factor. END-FIX"),
    )
    run_cell(lab, CELL_FIX)
    diff = lab.cell(CELL_BROKEN).locator(PROPOSAL)
    lab.wait(lambda: diff.count() == 1 and diff.is_visible(), 45, "the fix's diff on the failed cell")
    lab.wait(lambda: button.count() == 0, 10, "the Fix with agent button to go while the diff waits")
    lab.shot("fix_stale_diff.png", at=diff)
    diff.get_by_role("button", name="Accept", exact=True).click()
    lab.wait(lambda: "END-FIX" in lab.text(lab.output(CELL_FIX)), 45, "the fix turn's end")
    assert source(lab, CELL_BROKEN) == FIXED
    assert button.count() == 0
