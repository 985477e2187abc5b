"""The chat panel keeps up, in real JupyterLab and headless Debian Chromium.

With the panel shown, `%%agent` cells of its session (background and `--wait`, also after a
`--temp` cell) appear in it: the question, the streamed answer, the tool card, the end state.
The newest message is in view inside the panel's scrolling box while it streams and when it
ends, unless the user scrolled up to read: then what they read stays where it is, and going
back to the bottom pins the view again, also where fractional line heights put the bottom at
scroll offset +1 (our lab extension sets it to 0). A stopped turn says "■ Stopped" under its answer, live
and when the session is re-rendered from the sessions file.

Reuses tests/browser/test_browser.py's helpers; its own JupyterLab, kernel and page (module fixture).
Screenshots in tests/artifacts/panel_live_*.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import Lab, browser_lab, lab_server, run_cell, wait_until, write_code_cells

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from agentik_jupyter.testing import Reply  # noqa: E402
from tests.kernel_support import AGENT_EXPR  # noqa: E402
from tests.shared_servers import shared_llm  # noqa: E402

NOTEBOOK = "panel_live.ipynb"
CHUNK_DELAY = 0.03


def paragraphs(tag: str, n: int) -> str:
    """An answer of `n` short paragraphs, tall enough to overflow the panel's box."""
    return "\n\n".join(f"{tag} paragraph {i}: the units grew in every region this month." for i in range(n))


FIRST_ANSWER = paragraphs("First", 30) + "\n\nEND-FIRST"
CELL_ANSWER = paragraphs("Cell", 12) + "\n\nThe frame has three rows. END-CELL"
WAITED_ANSWER = paragraphs("Waited", 12) + "\n\nEND-WAITED"
LONG_ANSWER = " ".join(f"essay{i}" for i in range(2000)) + " END-LONG"
AFTER_TEMP_ANSWER = paragraphs("Back", 6) + "\n\nEND-BACK"
FRESH_QUESTION = "A first question typed in the panel"
FRESH_ANSWER = paragraphs("Fresh", 24) + "\n\nEND-FRESH"  # (taller than the box in the theme's line height)
READING_ANSWER = paragraphs("Reading", 20) + "\n\nEND-READING"
PINNED_ANSWER = paragraphs("Pinned", 20) + "\n\nEND-PINNED"

(
    CELL_LOAD,
    CELL_DATA,
    CELL_FIRST,
    CELL_PANEL,
    CELL_BACKGROUND,
    CELL_WAITED,
    CELL_LONG,
    CELL_STOP,
    CELL_READING,
    CELL_PINNED,
    CELL_NEW,
    CELL_RESUME,
    CELL_FRESH,
    CELL_TEMP,
    CELL_AFTER_TEMP,
) = range(15)
CELL_SOURCES = [
    "%load_ext agentik_jupyter",
    "import pandas as pd\nsales = pd.DataFrame({'region': ['north', 'south', 'east'], 'units': [1, 2, 3]})",
    "%%agent --wait\nFirst question, before the panel",
    "%agent panel",
    "%%agent\nDescribe sales from a cell",
    "%%agent --wait\nA waited question from a cell",
    "%%agent\nWrite a long essay from a cell",
    "%agent stop",
    "%%agent\nA question answered while I read above",
    "%%agent\nA question answered at the bottom",
    f"_cid = {AGENT_EXPR}.session.conversation_id\n%agent new",
    "get_ipython().run_line_magic('agent', f'resume {_cid}')",
    "%agent new",
    "%%agent --wait --temp\nA temporary question",
    "%%agent\nA question after the temporary one",
]

SCROLLER = """
  const box = el.closest('.agentik-panel-transcript');
"""
"""The panel's conversation box around `el` (the box the user scrolls), null outside the panel.
Named, not searched for: a nearest scrollable ancestor can be a widget's own box for a moment."""

GEOMETRY = (
    "(el) => {"
    + SCROLLER
    + """
  const outer = el.closest('.jp-WindowedPanel-outer');
  if (!outer) return null;  // re-drawn away between the look-up and this call: look again
  const r = el.getBoundingClientRect(), b = (box || el).getBoundingClientRect();
  const w = outer.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, boxTop: b.top, boxBottom: b.bottom, windowTop: w.top, windowBottom: w.bottom,
          inPanel: box !== null, scrollTop: box ? box.scrollTop : null,
          scrollHeight: box ? box.scrollHeight : null, clientHeight: box ? box.clientHeight : null};
}"""
)
"""Where `el` is against the panel's conversation box, in pixels."""

SCROLL_TO = (
    "(el, where) => {"
    + SCROLLER
    + """
  box.scrollTop = where === 'top' ? -box.scrollHeight : box.scrollHeight;  // clamped either way
  return box.scrollTop;
}"""
)
"""Scroll the panel's conversation box to its top or bottom, as a user dragging it would
(a column-reverse box counts from its bottom: negative values)."""


FRACTIONAL_BOTTOM = """(el) => {
  const box = el.closest('.agentik-panel-transcript');
  const style = document.createElement('style');
  document.head.appendChild(style);
  for (let i = 1; i < 40; i++) {
    style.textContent = `.agentik-panel-transcript > :first-child { padding-bottom: ${i * 0.025}px; }`;
    box.scrollTop = box.scrollHeight;  // clamped to the bottom, read back at once
    if (box.scrollTop > 0) return box.scrollTop;
  }
  return box.scrollTop;
}"""
"""Give the conversation a fractional height, as a zoomed page or another font does, until its
bottom is at scroll offset +1 (not 0), where Chromium anchors as if the user read above."""


class Where(dict[str, Any]):
    """Geometry that is true when the element can be read where the test looks; a failed wait
    prints it, so a timeout says where the element and the box were."""

    def __init__(self, geometry: dict[str, Any], seen: bool) -> None:
        super().__init__(geometry, seen=seen)

    def __bool__(self) -> bool:
        return bool(self["seen"])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("browser_panel_live")
    root, home = tmp / "root", tmp / "home"
    root.mkdir()
    write_code_cells(root / NOTEBOOK, CELL_SOURCES)
    with (
        shared_llm(chunk_delay=CHUNK_DELAY) as srv,
        lab_server(root, home, srv, artifact="jupyterlab_panel_live") as server,
        browser_lab(srv, server, artifact="jupyterlab_panel_live", height=1000, levels=("error",)) as lab,
    ):
        yield lab


def panel(lab: Lab) -> Any:
    return lab.output(CELL_PANEL)


def look_at_panel(lab: Lab) -> None:
    """The user looks at the panel: its text box at the bottom of the window."""
    panel(lab).get_by_placeholder("Ask the agent").scroll_into_view_if_needed(timeout=5_000)


def geometry(locator: Any) -> dict[str, float]:
    """GEOMETRY of the element the locator finds now: a streaming answer re-draws its text, so the
    element found can leave the page before it is measured (then it is found again)."""
    return dict(wait_until(lambda: locator.evaluate(GEOMETRY), 10, "the element in the notebook to measure"))


def in_view(locator: Any) -> Where:
    """The element's bottom is inside the panel's conversation box (the newest line can be read there)."""
    g = geometry(locator)
    assert g["inPanel"], f"the element is not in the panel's conversation: {g}"
    return Where(g, g["boxTop"] - 1 <= g["bottom"] <= g["boxBottom"] + 1)


def in_window(locator: Any) -> Where:
    """The element's bottom is inside the notebook's window (the user sees it without scrolling)."""
    g = geometry(locator)
    return Where(g, g["windowTop"] - 1 <= g["bottom"] <= g["windowBottom"] + 1)


def last_text(lab: Lab, text: str) -> Any:
    return panel(lab).get_by_text(text, exact=False).last


def test_1_history_shows_with_the_last_reply_in_view(lab: Lab) -> None:
    page = lab.page
    page.goto(lab.server.link(f"/lab/tree/{NOTEBOOK}", reset=True), timeout=30_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=45_000)
    lab.srv.push(Reply.text(FIRST_ANSWER))
    for index in (CELL_LOAD, CELL_DATA, CELL_FIRST, CELL_PANEL):
        run_cell(lab, index)
    lab.wait(lambda: "END-FIRST" in lab.text(panel(lab)), 90, "the first answer in the panel")
    look_at_panel(lab)
    end = last_text(lab, "END-FIRST")
    g = geometry(end)
    assert g["scrollHeight"] > g["clientHeight"] + 100, g  # the conversation overflows its box
    lab.wait(lambda: in_view(end), 30, "the last reply in view")
    lab.shot("panel_live_history.png")


def test_2_a_background_cell_turn_appears_in_the_panel(lab: Lab) -> None:
    lab.srv.push(Reply.tool_calls([{"name": "describe_dataframe", "args": {"name": "sales"}}]), Reply.text(CELL_ANSWER))
    run_cell(lab, CELL_BACKGROUND)
    look_at_panel(lab)
    lab.wait(lambda: "Describe sales from a cell" in lab.text(panel(lab)), 60, "the cell's question in the panel")
    lab.wait(lambda: "Cell paragraph 3" in lab.text(panel(lab)), 60, "the cell's answer streaming in the panel")
    lab.wait(lambda: in_view(last_text(lab, "Cell paragraph")), 30, "the cell's answer in view while it streams")
    lab.wait(lambda: "END-CELL" in lab.text(panel(lab)), 60, "the cell's answer in the panel")
    text = lab.text(panel(lab))
    assert "describe_dataframe(" in text  # its tool card
    assert text.count("Describe sales from a cell") == 1
    lab.wait(lambda: "✓ Done" in lab.text(panel(lab).locator(".agentik-status")), 10, "Done in the panel")
    lab.wait(lambda: in_view(last_text(lab, "END-CELL")), 30, "the cell's reply in view")
    lab.no_widget_errors()
    lab.shot("panel_live_cell_turn.png")


def test_3_a_waited_cell_turn_appears_in_the_panel(lab: Lab) -> None:
    lab.srv.push(Reply.text(WAITED_ANSWER))
    run_cell(lab, CELL_WAITED)
    look_at_panel(lab)
    lab.wait(lambda: "END-WAITED" in lab.text(panel(lab)), 90, "the --wait cell's answer in the panel")
    assert lab.text(panel(lab)).count("A waited question from a cell") == 1
    lab.wait(lambda: in_view(last_text(lab, "END-WAITED")), 30, "the --wait cell's reply in view")


def test_4_a_stopped_cell_turn_says_stopped(lab: Lab) -> None:
    lab.srv.push(Reply.text(LONG_ANSWER))
    run_cell(lab, CELL_LONG)
    look_at_panel(lab)
    lab.wait(lambda: "essay60" in lab.text(panel(lab)), 60, "the long answer streaming in the panel")
    lab.wait(lambda: in_view(last_text(lab, "essay")), 30, "the long answer in view while it streams")
    run_cell(lab, CELL_STOP)
    look_at_panel(lab)
    lab.wait(lambda: "■ Stopped" in lab.text(panel(lab).locator(".agentik-stopped")), 10, "the Stopped mark")
    assert "END-LONG" not in lab.text(panel(lab))
    lab.wait(lambda: in_view(panel(lab).locator(".agentik-stopped").last), 5, "the Stopped mark in view")
    lab.shot("panel_live_stopped.png")


def test_5_reading_above_is_not_yanked_then_the_bottom_pins_again(lab: Lab) -> None:
    look_at_panel(lab)
    anchor = last_text(lab, "First paragraph 2:")
    anchor.evaluate(SCROLL_TO, "top")
    lab.wait(lambda: in_view(anchor), 30, "the user reading an early reply")  # the top of a long history
    before = geometry(anchor)["top"]
    lab.srv.push(Reply.text(READING_ANSWER))
    run_cell(lab, CELL_READING)
    look_at_panel(lab)
    lab.wait(lambda: "END-READING" in lab.text(panel(lab)), 90, "the answer that arrived while reading")
    after = geometry(anchor)["top"]
    assert abs(after - before) <= 2, f"the text being read moved from {before} to {after}"
    lab.shot("panel_live_reading_above.png")

    end = last_text(lab, "END-READING")
    assert end.evaluate(FRACTIONAL_BOTTOM) == 1, "no fractional height puts the bottom at offset +1"
    end.evaluate(SCROLL_TO, "bottom")
    lab.wait(lambda: in_view(end), 30, "back at the bottom")
    lab.srv.push(Reply.text(PINNED_ANSWER))
    run_cell(lab, CELL_PINNED)
    look_at_panel(lab)
    lab.wait(lambda: "Pinned paragraph 5" in lab.text(panel(lab)), 60, "the next answer streaming")
    lab.wait(lambda: in_view(last_text(lab, "Pinned paragraph")), 30, "the next answer in view while it streams")
    lab.wait(lambda: "END-PINNED" in lab.text(panel(lab)), 60, "the next answer")
    lab.wait(lambda: in_view(last_text(lab, "END-PINNED")), 30, "the newest reply in view again")


def test_6_a_resumed_session_keeps_the_stopped_mark(lab: Lab) -> None:
    run_cell(lab, CELL_NEW)
    lab.wait(lambda: "END-PINNED" not in lab.text(panel(lab)), 60, "the panel emptied by %agent new")
    run_cell(lab, CELL_RESUME)
    look_at_panel(lab)
    lab.wait(
        lambda: "END-PINNED" in lab.text(panel(lab)) and "Write a long essay from a cell" in lab.text(panel(lab)),
        60,
        "the session re-rendered from the file",
    )
    text = lab.text(panel(lab))
    marks = panel(lab).locator(".agentik-stopped")
    assert marks.count() == 1 and lab.text(marks.first).strip() == "■ Stopped", (
        text
    )  # (the words of the cell and sidebar)
    assert "Interrupted by the user" not in text
    assert "First question, before the panel" in lab.text(panel(lab).locator(".widget-html").first)  # the title
    lab.wait(lambda: in_view(last_text(lab, "END-PINNED")), 30, "the newest reply in view after the re-render")
    stopped = panel(lab).locator(".agentik-stopped").last
    stopped.evaluate("(el) => el.scrollIntoView({block: 'center'})")
    lab.shot("panel_live_resumed_stopped.png")
    lab.no_widget_errors()


def test_7_a_first_reply_in_a_fresh_panel_stays_on_screen(lab: Lab) -> None:
    """A new session: the panel is short, its text box at the bottom of the window where the
    user typed; the reply must not push itself below the window as it streams."""
    run_cell(lab, CELL_FRESH)
    lab.wait(lambda: "END-PINNED" not in lab.text(panel(lab)), 60, "the panel emptied by %agent new")
    box = panel(lab).get_by_placeholder("Ask the agent")
    box.evaluate("(el) => el.scrollIntoView({block: 'end'})")
    note = panel(lab).get_by_text("No messages yet")
    lab.wait(lambda: note.is_visible(), 30, "the empty pane's note")
    lab.shot("panel_live_empty.png")
    lab.srv.push(Reply.text(FRESH_ANSWER))
    box.click()
    box.fill(FRESH_QUESTION)
    panel(lab).get_by_role("button", name="Send").click()
    lab.wait(lambda: "Fresh paragraph 4" in lab.text(panel(lab)), 60, "the reply streaming")
    streaming = last_text(lab, "Fresh paragraph")
    assert in_window(streaming), geometry(streaming)
    lab.wait(lambda: "END-FRESH" in lab.text(panel(lab)), 60, "the whole reply")
    end = last_text(lab, "END-FRESH")
    lab.wait(lambda: in_window(end) and in_view(end), 30, "the reply's end on screen")
    assert box.evaluate("(el) => el.getBoundingClientRect().bottom") <= geometry(end)["windowBottom"] + 1
    assert lab.text(panel(lab).locator(".agentik-panel-transcript")).count(FRESH_QUESTION) == 1  # its own turn, once
    assert not note.is_visible()
    lab.shot("panel_live_fresh_reply.png")


def test_8_a_temporary_cell_does_not_cut_the_panel_off(lab: Lab) -> None:
    lab.srv.push(Reply.text("Off the record. END-TEMP"), Reply.text(AFTER_TEMP_ANSWER))
    run_cell(lab, CELL_TEMP)
    lab.wait(lambda: "END-TEMP" in lab.text(lab.output(CELL_TEMP)), 60, "the temporary answer in its cell")
    run_cell(lab, CELL_AFTER_TEMP)
    look_at_panel(lab)
    lab.wait(lambda: "END-BACK" in lab.text(panel(lab)), 60, "the next cell turn in the panel")
    assert "END-TEMP" not in lab.text(panel(lab))  # a temporary turn is not part of the session
    lab.wait(lambda: in_view(last_text(lab, "END-BACK")), 30, "the reply in view")
