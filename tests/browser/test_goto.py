"""Run All held at "Queued (1 ahead)" by an approval far up the page: the queued line takes the user there.

JupyterLab and Notebook 7 + headless Debian Chromium + the fake LLM. A notebook whose first
`%%agent` cell asks to run code, then long filler cells, then a second `%%agent` cell; Run All.
The second turn queues behind the first, which waits for the approval far above. The queued
line says so and carries "Go to the approval" (agentik_jupyter/widgets/status.py; the lab
extension's labextension/src/goto.ts shows it and acts on it): one click scrolls the card into
view and puts the keyboard on Approve, and Enter answers it; both turns then finish.
Screenshots in tests/artifacts/goto_<app>_*.png.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import run_cell  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from agentik_jupyter.testing import Reply  # noqa: E402
from agentik_jupyter.widgets.status import TICK_S  # noqa: E402

NOTEBOOK = "goto_demo.ipynb"
FILLER = "\n".join(f"filler_{i} = {i}" for i in range(45))
SOURCES = [
    "%load_ext agentik_jupyter",
    "%%agent\nRun the first step.",
    FILLER,
    FILLER,
    FILLER,
    FILLER,
    "%%agent\nThen the second step.",
]
CELL_LOAD, CELL_FIRST, CELL_QUEUED = 0, 1, len(SOURCES) - 1
APPS = {"jupyterlab": (f"/lab/tree/{NOTEBOOK}", True), "notebook7": (f"/notebooks/{NOTEBOOK}", False)}


@pytest.fixture(params=list(APPS))
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    url_path, reset = APPS[request.param]
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact=f"{request.param}-goto", url_path=url_path, reset=reset
    ) as lab:
        lab.app = request.param  # type: ignore[attr-defined]  (screenshot names)
        yield lab


@pytest.fixture
def bare_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab with the go-to plugin disabled (labconfig/page_config.json), as in a frontend without it."""
    with notebook_page(
        tmp_path_factory,
        NOTEBOOK,
        SOURCES,
        artifact="jupyterlab-goto-bare",
        url_path=f"/lab/tree/{NOTEBOOK}",
        disabled=("agentik-jupyter:goto",),
    ) as lab:
        lab.app = "jupyterlab_without_goto"  # type: ignore[attr-defined]
        yield lab


def shot(lab: Lab, name: str) -> None:
    lab.shot(f"goto_{lab.app}_{name}")  # type: ignore[attr-defined]


def in_view(locator: Any) -> bool:
    """Whether the element is drawn inside the window and inside the notebook's scrolling box."""
    return bool(
        locator.evaluate("""el => {
        const b = el.getBoundingClientRect();
        const s = el.closest('.jp-WindowedPanel-outer') || document.scrollingElement;
        const a = s.getBoundingClientRect();
        return b.height > 0 && b.top >= Math.max(a.top, 0) && b.bottom <= Math.min(a.bottom, window.innerHeight); }""")
    )


def run_all(lab: Lab) -> None:
    lab.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    lab.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


FLASH_WATCH = """cell => {
  cell.__agentikFlashed = false;
  new MutationObserver(() => { cell.__agentikFlashed ||= cell.classList.contains('agentik-flash'); })
    .observe(cell, {attributes: true, attributeFilter: ['class']});
}"""
"""Record on the cell whether it flashes: the class lasts 1.6 s, which the waits for the scroll and
the focus before a look can outlast on a loaded machine."""


def hold_the_queue(lab: Lab) -> Any:
    """Run All: the first turn waits for approval, the last cell's turn queues behind it; its output."""
    run_cell(lab, CELL_LOAD)  # (the kernel is ready)
    lab.srv.push(
        Reply.tool_calls([{"name": "run_code", "args": {"code": "print('FIRST' + 'RAN')"}}]),
        Reply.text("END-FIRST"),
        Reply.text("END-SECOND"),
    )
    run_all(lab)
    lab.cell(
        CELL_QUEUED
    ).scroll_into_view_if_needed()  # the user is at the end of the page (a cell out of view is not drawn)
    queued = lab.output(CELL_QUEUED)
    lab.wait(
        lambda: "Queued (1 ahead): the turn ahead waits for your approval to run run_code" in lab.text(queued),
        60,
        "the queued line to say what holds it",
    )
    return queued


def test_the_queued_line_goes_to_the_approval_that_holds_it(lab: Lab) -> None:
    queued = hold_the_queue(lab)
    approve = lab.cell(CELL_FIRST).get_by_role("button", name="Approve")
    go = queued.get_by_role("button", name="Go to the approval")
    go.scroll_into_view_if_needed(timeout=10_000)
    lab.wait(lambda: not in_view(approve), 5, "the approval to be out of view (the page is long)")
    shot(lab, "queued.png")

    lab.cell(CELL_FIRST).evaluate(FLASH_WATCH)
    go.click()
    lab.wait(lambda: in_view(approve), 5, "the approval scrolled into view")
    lab.wait(lambda: approve.evaluate("el => el === document.activeElement"), 5, "the keyboard on Approve")
    assert lab.cell(CELL_FIRST).evaluate("cell => cell.__agentikFlashed"), "the cell did not flash"
    shot(lab, "went_to_approval.png")

    lab.page.keyboard.press("Enter")  # the keyboard user answers where they landed
    lab.wait(lambda: "END-FIRST" in lab.text(lab.output(CELL_FIRST)), 30, "the first turn's end")
    ran = [m for r in lab.srv.requests for m in r.messages if m.get("role") == "tool"]
    assert ran and "FIRSTRAN" in str(ran[0].get("content")), ran  # approved by Enter: the code ran
    lab.cell(
        CELL_QUEUED
    ).scroll_into_view_if_needed()  # (a cell out of view is not drawn: its inner text is not all there)
    lab.wait(lambda: "END-SECOND" in lab.text(queued), 30, "the queued turn's end")
    assert not go.count() or not go.is_visible()


def test_without_the_extension_the_control_stays_hidden(bare_lab: Lab) -> None:
    """Where nothing would act on a click (no lab extension) there is no button that does nothing:
    the line says in words where to act."""
    lab = bare_lab
    queued = hold_the_queue(lab)
    shown = (
        "() => [...document.styleSheets].some(s => { try { return [...s.cssRules].some("
        "r => r.cssText.includes('agentik-goto')); } catch { return false; } })"
    )
    assert lab.page.evaluate(shown) is False  # (the plugin is off)
    control = queued.locator(".agentik-goto")
    assert control.count() == 1 and not control.is_visible()
    assert "in its cell above" in lab.text(queued)
    lab.cell(CELL_QUEUED).scroll_into_view_if_needed()
    shot(lab, "queued_without_extension.png")
    lab.cell(CELL_FIRST).get_by_role("button", name="Approve").click()
    lab.wait(lambda: "END-FIRST" in lab.text(lab.output(CELL_FIRST)), 30, "the first turn's end")
    lab.cell(
        CELL_QUEUED
    ).scroll_into_view_if_needed()  # (a cell out of view is not drawn: its inner text is not all there)
    lab.wait(lambda: "END-SECOND" in lab.text(queued), 30, "the queued turn's end")


def test_the_waiting_line_shows_the_diff_it_waits_on(lab: Lab) -> None:
    """The issue's "Running edit_cell… 18 s while the diff sits on another cell": the user scrolled
    back to the asking cell; "Show it" takes them to the diff and puts the keyboard on Accept."""

    def responder(request: Any) -> Reply:
        last = request.messages[-1]
        if last.get("role") == "user":
            return Reply.tool_calls([{"name": "read_notebook", "args": {}}])
        found = re.search(r"\[0\] id=(\S+) code", last.get("content", ""))  # the first cell
        if found:
            return Reply.tool_calls(
                [
                    {
                        "name": "edit_cell",
                        "args": {"cell_id": found.group(1), "new_source": "%load_ext agentik_jupyter\n# tidy"},
                    }
                ]
            )
        return Reply.text("END-DIFF")

    run_cell(lab, CELL_LOAD)
    lab.srv.set_responder(responder)
    run_cell(lab, CELL_QUEUED)
    proposal = lab.cell(CELL_LOAD).locator(".agentik-proposal")
    lab.wait(lambda: proposal.count() == 1, 30, "the diff on the first cell")
    asking = lab.output(CELL_QUEUED)
    show = asking.get_by_role("button", name="Show it")
    lab.cell(CELL_QUEUED).scroll_into_view_if_needed()  # the user went back to the asking cell
    accept = proposal.get_by_role("button", name="Accept", exact=True)
    lab.wait(lambda: not in_view(accept), 5, "the diff to be out of view")
    lab.wait(
        lambda: "waiting for your answer on the diff on cell 1" in lab.text(asking),
        30,
        "the line to say what it waits on",
    )
    # A slow click: the line re-renders (its elapsed time ticks) between press and release. (A tick
    # between finding the button and measuring it leaves no box: find it again.)
    pressed, box = lab.wait(
        lambda: (handle := show.element_handle()) and (where := handle.bounding_box()) and (handle, where),
        10,
        "the Show it button's place",
    )
    lab.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    lab.page.mouse.down()
    time.sleep(TICK_S + 0.3)
    lab.page.mouse.up()
    assert not pressed.evaluate("el => el.isConnected")  # (the button pressed is gone: no click event)
    lab.wait(lambda: in_view(accept), 5, "the diff scrolled into view")
    lab.wait(lambda: accept.evaluate("el => el === document.activeElement"), 5, "the keyboard on Accept")
    shot(lab, "went_to_diff.png")
    proposal.get_by_role("button", name="Reject").click()
    lab.cell(CELL_QUEUED).scroll_into_view_if_needed()
    lab.wait(lambda: "END-DIFF" in lab.text(asking), 30, "the turn's end")


@pytest.fixture
def windowed_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab whose notebook keeps only the cells in view in the page (windowingMode "full")."""
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact="jupyterlab-goto-windowed", url_path=f"/lab/tree/{NOTEBOOK}"
    ) as lab:
        settings = (
            lab.server.log_path.parent / "config" / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
        )
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "full"}))
        lab.page.reload()
        lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)
        lab.app = "jupyterlab_windowed"  # type: ignore[attr-defined]
        yield lab


def test_a_windowed_notebook_brings_the_card_back_into_the_page(windowed_lab: Lab) -> None:
    """With windowing the card's cell, far up, is not drawn (hidden or out of the page): the notebook scrolls to it first."""
    lab = windowed_lab
    queued = hold_the_queue(lab)
    approve = lab.page.get_by_role("button", name="Approve")  # (the only one)
    go = queued.get_by_role("button", name="Go to the approval")
    go.scroll_into_view_if_needed(timeout=10_000)
    lab.wait(lambda: approve.count() == 0, 10, "the card's cell to leave the page (hidden or detached)")
    go.click()
    lab.wait(lambda: approve.count() == 1 and in_view(approve), 5, "the approval back in the page, in view")
    lab.wait(lambda: approve.evaluate("el => el === document.activeElement"), 5, "the keyboard on Approve")
    shot(lab, "went_to_approval.png")
    lab.page.keyboard.press("Enter")
    lab.wait(lambda: lab.srv.pending == 0, 60, "both turns to finish")


PANEL_SOURCES = [
    "%load_ext agentik_jupyter",
    "%agent panel",
    "%%agent\nRun the first step.",
    FILLER,
    FILLER,
    "%%agent\nThen the second step.",
]


@pytest.fixture
def panel_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab with the chat panel shown above the card: its Send button is accept-styled too."""
    with notebook_page(
        tmp_path_factory, NOTEBOOK, PANEL_SOURCES, artifact="jupyterlab-goto-panel", url_path=f"/lab/tree/{NOTEBOOK}"
    ) as lab:
        lab.app = "jupyterlab_panel"  # type: ignore[attr-defined]
        yield lab


def test_a_chat_panel_above_is_not_taken_for_the_approval(panel_lab: Lab) -> None:
    """The control goes to the card that waits, not to the first accept-styled button on the page
    (the panel's Send, always enabled)."""
    lab = panel_lab
    first, queued_cell = 2, len(PANEL_SOURCES) - 1
    run_cell(lab, CELL_LOAD)
    run_cell(lab, 1)
    lab.wait(lambda: lab.cell(1).get_by_role("button", name="Send").count() == 1, 30, "the panel's Send")
    lab.srv.push(
        Reply.tool_calls([{"name": "run_code", "args": {"code": "print('FIRST' + 'RAN')"}}]),
        Reply.text("END-FIRST"),
        Reply.text("END-SECOND"),
    )
    run_all(lab)
    lab.cell(queued_cell).scroll_into_view_if_needed()
    queued = lab.output(queued_cell)
    lab.wait(
        lambda: "Queued (1 ahead): the turn ahead waits for your approval" in lab.text(queued),
        60,
        "the queued line to say what holds it",
    )
    approve = lab.cell(first).get_by_role("button", name="Approve")
    send = lab.cell(1).get_by_role("button", name="Send")
    go = queued.get_by_role("button", name="Go to the approval")
    go.scroll_into_view_if_needed(timeout=10_000)
    go.click()
    lab.wait(lambda: in_view(approve), 5, "the approval scrolled into view")
    lab.wait(lambda: approve.evaluate("el => el === document.activeElement"), 5, "the keyboard on Approve")
    assert not send.evaluate("el => el === document.activeElement")
    shot(lab, "went_to_approval_past_the_panel.png")
    lab.page.keyboard.press("Enter")
    lab.wait(lambda: lab.srv.pending == 0, 60, "both turns to finish")
