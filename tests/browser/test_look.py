"""One look, where to act, no internal cells, in JupyterLab + headless Debian Chromium + the fake LLM.

0. "Fix with agent" in a kernel without the extension says so and offers to load it, then fixes;
1. the approval card's buttons are JupyterLab's (no loud ipywidgets success/danger colours);
2. the on-cell diff's Accept and Reject are JupyterLab's accept/reject buttons (different colours),
   and the diff's cell, far above the asking cell, is scrolled into view when the diff appears,
   unless the user is typing in another cell then;
3. "Fix with agent" starts the fix turn without adding a cell: the notebook keeps its cells, the
   turn shows under the failed cell (not saved) and proposes its diff there;
4. the tools listing (`%agent tools`) in a narrow window wraps between words, never inside one.

In JupyterLab and in Notebook 7 (one server, kernel and page each); steps run in file order.
Screenshots in tests/artifacts/look_<app>_*.png.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import run_cell  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "look_demo.ipynb"
FILLER = "\n".join(f"filler_{i} = {i}" for i in range(45))
SOURCES = [
    "%load_ext agentik_jupyter",
    "total = 1 + 1",
    FILLER,
    FILLER,
    "%%agent\nTidy my notebook.",
    "scaled = total * factor",
    "%agent tools",
    "from agentik_jupyter.kernel.agent import get_agent\n"
    "from agentik_jupyter.kernel.tools_table import ToolsListing\n"
    "ToolsListing(get_agent(get_ipython()).registry)",
]
CELL_LOAD, CELL_DATA, _, _, CELL_ASK, CELL_BROKEN, CELL_TOOLS, CELL_TABLE = range(8)
PROPOSAL = ".agentik-proposal"
FIXED = "factor = 10\nscaled = total * factor"

# Each word's rendered boxes: a word wrapped inside itself has two.
SPLIT_WORDS = """el => {
  const split = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) split.push(m[0]);
    }
  }
  return split;
}"""


APPS = {"jupyterlab": (f"/lab/tree/{NOTEBOOK}", True), "notebook7": (f"/notebooks/{NOTEBOOK}", False)}


@pytest.fixture(scope="module", params=list(APPS))
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    url_path, reset = APPS[request.param]
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact=f"{request.param}-look", url_path=url_path, reset=reset
    ) as lab:
        lab.app = request.param  # type: ignore[attr-defined]  (screenshot names)
        yield lab


def shot(lab: Lab, name: str, at: Any = None) -> None:
    lab.shot(f"look_{lab.app}_{name}", at=at)  # type: ignore[attr-defined]


def classes(locator: Any) -> list[str]:
    return str(locator.get_attribute("class") or "").split()


def background(locator: Any) -> str:
    return str(locator.evaluate("el => getComputedStyle(el).backgroundColor"))


def accept_colour(lab: Lab) -> str:
    """JupyterLab's accept-button colour (jp-mod-accept) as the browser resolves it."""
    return str(
        lab.page.evaluate("""() => { const d = document.createElement('div');
        d.style.background = 'var(--jp-accept-color-normal, var(--md-blue-500, #2196f3))';
        document.body.appendChild(d);
        const c = getComputedStyle(d).backgroundColor; d.remove(); return c; }""")
    )


def in_viewport(lab: Lab, locator: Any) -> bool:
    """Whether the element's top is inside the notebook's visible area."""
    return bool(
        locator.evaluate("""el => { const s = el.closest('.jp-WindowedPanel-outer') || el.closest('.jp-Notebook');
        const a = s.getBoundingClientRect(), b = el.getBoundingClientRect();
        return b.top >= a.top && b.top < a.bottom - 20; }""")
    )


def test_0_fix_without_the_extension_loaded_offers_to_load_it(lab: Lab) -> None:
    lab.srv.set_responder(fix_responder)
    run_cell(lab, CELL_BROKEN)  # before %load_ext: the kernel did not see it fail
    broken = lab.cell(CELL_BROKEN)
    lab.wait(lambda: "NameError" in lab.text(lab.output(CELL_BROKEN)), 60, "the NameError")
    fix = broken.get_by_role("button", name="Fix with agent")
    fix.wait_for(timeout=60_000)
    fix.click()
    load = broken.get_by_role("button", name="Load it (%load_ext agentik_jupyter) and fix")
    load.wait_for(timeout=60_000)
    assert "not loaded in this notebook" in lab.text(broken.locator(".agentik-fix-button"))
    shot(lab, "fix_not_loaded.png", at=load)
    load.click()
    turn = broken.locator(".agentik-fix-turn")
    # one read for both: the turn's live view is swapped for its transcript at the end, and between
    # the two the turn shows only its header
    lab.wait(
        lambda: (t := lab.text(turn)) and "END-FIX" in t and "Fix the failed cell [1]: NameError" in t,
        90,
        "the fix turn's question and end under the failed cell",
    )
    turn.get_by_role("button", name="Dismiss").click()
    lab.wait(lambda: turn.count() == 0, 30, "the fix turn dismissed")


def test_1_approval_card_buttons_are_jupyterlab_buttons(lab: Lab) -> None:
    run_cell(lab, CELL_LOAD)
    run_cell(lab, CELL_DATA)
    lab.srv.push(Reply.tool_calls([{"name": "run_code", "args": {"code": "print('LOOK')"}}]), Reply.text("END-CARD"))
    run_cell(lab, CELL_ASK)
    ask = lab.cell(CELL_ASK)
    approve = ask.get_by_role("button", name="Approve")
    approve.wait_for(timeout=90_000)
    deny = ask.get_by_role("button", name="Deny")
    shot(lab, "approval_card.png", at=approve)
    for button in (approve, deny, ask.get_by_role("button", name="Always in this session")):
        loud = [c for c in classes(button) if c in ("mod-success", "mod-danger", "mod-warning")]
        assert not loud, classes(button)
    assert "agentik-button-accept" in classes(approve)
    assert background(approve) == accept_colour(lab)
    assert background(deny) != background(approve)
    deny.click()
    lab.wait(lambda: "END-CARD" in lab.text(lab.output(CELL_ASK)), 90, "the turn's end")


def test_2_diff_buttons_differ_and_the_diff_is_scrolled_into_view(lab: Lab) -> None:
    def responder(request: Any) -> Reply:
        last = request.messages[-1]
        if last.get("role") == "user":
            return Reply.tool_calls([{"name": "read_notebook", "args": {}}])
        found = re.search(r"\[1\] id=(\S+) code", last.get("content", ""))
        if found:
            return Reply.tool_calls(
                [{"name": "edit_cell", "args": {"cell_id": found.group(1), "new_source": "total = 2"}}]
            )
        return Reply.text("END-DIFF")

    lab.srv.set_responder(responder)
    run_cell(lab, CELL_ASK)
    proposal = lab.cell(CELL_DATA).locator(PROPOSAL)
    lab.wait(lambda: proposal.count() == 1, 90, "the diff on the data cell")
    lab.wait(lambda: in_viewport(lab, proposal), 30, "the diff's cell scrolled into view")
    # the asking cell's status says the turn waits for the user, and on which cell (not "Running edit_cell…")
    lab.wait(
        lambda: (
            f"edit_cell: waiting for your answer on the diff on cell {CELL_DATA + 1}" in lab.text(lab.output(CELL_ASK))
        ),
        10,
        "the status to say where to act",
    )
    shot(lab, "diff_scrolled.png")
    accept = proposal.get_by_role("button", name="Accept", exact=True)
    reject = proposal.get_by_role("button", name="Reject")
    for button, mod in ((accept, "jp-mod-accept"), (reject, "jp-mod-reject")):
        assert {"jp-Button", "jp-mod-styled", mod} <= set(classes(button)), classes(button)
    assert background(accept) != background(reject)
    assert background(accept) == accept_colour(lab)
    reject.click()
    lab.wait(lambda: "END-DIFF" in lab.text(lab.output(CELL_ASK)), 90, "the turn's end")


def test_2b_no_scroll_while_the_user_types_in_another_cell(lab: Lab) -> None:
    def responder(request: Any) -> Reply:
        last = request.messages[-1]
        if last.get("role") == "user":
            return Reply.tool_calls([{"name": "read_notebook", "args": {}}])
        found = re.search(r"\[1\] id=(\S+) code", last.get("content", ""))
        if found:
            time.sleep(3)  # the user is in another cell's editor by then
            return Reply.tool_calls(
                [{"name": "edit_cell", "args": {"cell_id": found.group(1), "new_source": "total = 3"}}]
            )
        return Reply.text("END-UNSCROLLED")

    lab.srv.set_responder(responder)
    run_cell(lab, CELL_ASK)
    editor = lab.cell(CELL_BROKEN).locator(".cm-content")
    editor.click()
    proposal = lab.cell(CELL_DATA).locator(PROPOSAL)
    lab.wait(lambda: proposal.count() == 1, 90, "the diff on the data cell")
    lab.stays(lambda: not in_viewport(lab, proposal), 1.0, "the diff to stay out of view (no scroll)")
    assert editor.evaluate("el => el.contains(document.activeElement)")
    shot(lab, "diff_not_scrolled_while_typing.png")
    lab.page.keyboard.press("Escape")
    proposal.get_by_role("button", name="Reject").click()
    lab.wait(lambda: "END-UNSCROLLED" in lab.text(lab.output(CELL_ASK)), 90, "the turn's end")


def fix_responder(request: Any) -> Reply:
    last = request.messages[-1]
    if last.get("role") == "user":
        cell = re.search(r"Fix the error in cell (\S+) ", last["content"])
        assert cell, last["content"][:200]
        return Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": cell.group(1), "new_source": FIXED}}])
    return Reply.text("The user decided. END-FIX")


def test_3_fix_with_agent_adds_no_cell(lab: Lab) -> None:
    lab.srv.set_responder(fix_responder)
    cells = lab.page.locator(".jp-Notebook .jp-Cell")
    before = cells.count()
    run_cell(lab, CELL_BROKEN)
    broken = lab.cell(CELL_BROKEN)
    lab.wait(lambda: "NameError" in lab.text(lab.output(CELL_BROKEN)), 60, "the NameError")
    button = broken.get_by_role("button", name="Fix with agent")
    button.wait_for(timeout=60_000)
    seen = len(lab.console)  # (Notebook 7 logs a page error while it loads: not this test's)
    button.click()
    lab.wait(lambda: broken.locator(PROPOSAL).count() == 1, 90, "the proposed fix on the failed cell")
    assert cells.count() == before
    assert "%agent fix" not in lab.text(lab.page.locator(".jp-Notebook"))
    turn = broken.locator(".agentik-fix-turn")
    lab.wait(lambda: "Fix the failed cell" in lab.text(turn), 60, "the fix turn under the failed cell")
    shot(lab, "fix_turn.png", at=broken.locator(PROPOSAL))
    broken.locator(PROPOSAL).get_by_role("button", name="Reject").click()
    lab.wait(lambda: "END-FIX" in lab.text(turn), 90, "the fix turn's end under the failed cell")
    assert cells.count() == before
    assert not [line for line in lab.console[seen:] if line.startswith("pageerror")], lab.console[seen:]


def wraps_between_words(lab: Lab, cell: int, name: str) -> list[str]:
    """Run the cell in a 700 px wide window; the words of its output drawn across two lines."""
    lab.page.set_viewport_size({"width": 700, "height": 1100})
    run_cell(lab, cell)
    output = lab.output(cell)
    lab.wait(lambda: "read_notebook" in lab.text(output), 60, "the tools listing")
    shot(lab, name, at=output)
    assert "run_code" in lab.text(output)
    shown = output.locator(".jp-OutputArea-output").first
    clipped = shown.evaluate("el => el.scrollWidth - el.clientWidth")
    assert clipped <= 1, f"the listing is {clipped} px wider than the output"
    return list(output.evaluate(SPLIT_WORDS))


def test_4_the_tools_table_wraps_between_words(lab: Lab) -> None:
    assert wraps_between_words(lab, CELL_TABLE, "tools_table.png") == []


def test_5_agent_tools_wraps_between_words(lab: Lab) -> None:
    assert wraps_between_words(lab, CELL_TOOLS, "tools.png") == []
