"""No stale "Fix with agent": once a fix's diff is on the failed cell, its button is gone (JupyterLab).

JupyterLab + headless Debian Chromium + the fake LLM. A cell fails and shows **Fix with agent**;
the user asks for the fix another way (`%agent fix`), and the agent proposes its change on the
failed cell. While that diff waits for Accept, a second fix of the same cell would propose a change
to a cell about to change: the button goes when the diff appears, and the kernel refuses a second
fix of a cell whose fix is under way (tests/kernel/test_control_fix.py).

A diff never overwrites newer text: when the user types in the cell while its diff waits, Accept
replaces nothing, says the cell changed, and shows the same change against the cell's new text.
"""

from __future__ import annotations

from collections.abc import Iterator

import nbformat
import pytest
from playwright.sync_api import Locator

from tests.browser.test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import PROPOSAL, run_cell, source

CHANGED_NOTE = "This cell changed after the agent proposed its change, so nothing was replaced."

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


def propose_a_fix(lab: Lab) -> Locator:
    """The failed cell with its Fix with agent button, then `%agent fix`: the fix's diff on the cell."""
    run_cell(lab, CELL_LOAD)
    run_cell(lab, CELL_DATA)
    run_cell(lab, CELL_BROKEN)
    lab.cell(CELL_BROKEN).get_by_role("button", name="Fix with agent").wait_for(timeout=30_000)
    broken = nbformat.read(lab.server.root / NOTEBOOK, as_version=4).cells[CELL_BROKEN].id
    lab.srv.push(
        Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
        Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": broken, "new_source": FIXED}}]),
        Reply.text("Defined factor. END-FIX"),
    )
    run_cell(lab, CELL_FIX)
    diff = lab.cell(CELL_BROKEN).locator(PROPOSAL)
    lab.wait(lambda: diff.count() == 1 and diff.is_visible(), 45, "the fix's diff on the failed cell")
    return diff


def test_the_fix_button_goes_when_a_fix_is_proposed_on_the_cell(lab: Lab) -> None:
    diff = propose_a_fix(lab)
    button = lab.cell(CELL_BROKEN).get_by_role("button", name="Fix with agent")
    lab.wait(lambda: button.count() == 0, 10, "the Fix with agent button to go while the diff waits")
    lab.shot("fix_stale_diff.png", at=diff)
    diff.get_by_role("button", name="Accept", exact=True).click()
    lab.wait(lambda: "END-FIX" in lab.text(lab.output(CELL_FIX)), 45, "the fix turn's end")
    assert source(lab, CELL_BROKEN) == FIXED
    assert button.count() == 0


def test_accept_on_a_cell_changed_since_the_diff_replaces_nothing_and_offers_the_new_diff(lab: Lab) -> None:
    diff = propose_a_fix(lab)
    mine = "factor = 3  # mine\nscaled = total * factor"
    lab.cell(CELL_BROKEN).locator(".cm-content").click()  # the user fixes it their own way meanwhile
    lab.page.keyboard.press("Control+A")
    lab.page.keyboard.type(mine)
    lab.page.keyboard.press("Escape")

    diff.get_by_role("button", name="Accept", exact=True).click()

    lab.wait(lambda: CHANGED_NOTE in lab.text(diff), 20, "Accept saying the cell changed")
    assert source(lab, CELL_BROKEN) == mine  # nothing replaced
    text = lab.text(diff)
    assert "- factor = 3  # mine" in text and "+ factor = 10" in text  # the change against the new text
    assert "END-FIX" not in lab.text(lab.output(CELL_FIX))  # the turn still waits for the decision
    lab.shot("fix_stale_changed.png", at=diff)
    diff.get_by_role("button", name="Accept", exact=True).click()
    lab.wait(lambda: "END-FIX" in lab.text(lab.output(CELL_FIX)), 45, "the fix turn's end")
    assert source(lab, CELL_BROKEN) == FIXED
