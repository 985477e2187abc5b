"""One look for a turn: the live view, the transcript that replaces it and the chat panel.

In JupyterLab and in Notebook 7 (headless Debian chromium, the fake LLM streaming at a model's
pace), a `%%agent` cell's question and its answer's first paragraph have the same computed font
size, family, colour and line height, and the same place (within 2 px), mid-stream in the live
view and after the transcript replaced it: no restyle jump at the turn's end. The chat panel's
bubbles of the same turn use the same computed styles. In the dark theme the text of the live
view, the transcript and the panel is light, no background behind it is light, and no element
of the live view or the panel carries an inline colour other than a theme variable (the look they
carry for frontends without our CSS, widgets/look.py; white text on a themed button aside). Screenshots in
tests/artifacts/one_look_<app>_*.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import run_cell  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "one_look.ipynb"
QUESTION = "Describe the units by region."
DARK_QUESTION = "Describe them again, in the dark."
WAIT_QUESTION = "Describe them, and I wait for you."


def answer(tag: str) -> str:
    return (
        "FIRST-PARAGRAPH The units grow in every region, north ahead of **south**. "
        + " ".join(f"word{i}" for i in range(40))
        + "\n\n"
        + "\n\n".join(f"Paragraph {i}: the units grew again this month in region {i}." for i in range(10))
        + f"\n\n{tag}"
    )


SOURCES = [
    "%load_ext agentik_jupyter",
    "%agent panel",
    f"%%agent\n{QUESTION}",
    f"%%agent\n{DARK_QUESTION}",
    f"%%agent --wait\n{WAIT_QUESTION}",
]
CELL_LOAD, CELL_PANEL, CELL_ASK, CELL_DARK, CELL_WAIT = range(5)
APPS = {"jupyterlab": (f"/lab/tree/{NOTEBOOK}", True), "notebook7": (f"/notebooks/{NOTEBOOK}", False)}

# The question's text and the answer's first paragraph under `scope` of the output: computed
# styles, and the box relative to the cell's (null until both are there).
MEASURE = """(out, [scope, question]) => {
  const root = out.querySelector(scope);
  if (!root) return null;
  const q = [...root.querySelectorAll('.agentik-user .agentik-question')].find(e => e.textContent.includes(question));
  const a = [...root.querySelectorAll('.agentik-assistant')].find(e => e.textContent.includes('FIRST-PARAGRAPH'));
  if (!q || !a) return null;
  const cell = out.closest('.jp-Cell').getBoundingClientRect();
  const one = e => { const s = getComputedStyle(e), r = e.getBoundingClientRect();
    return {font: [s.fontSize, s.fontFamily, s.color, s.lineHeight, s.fontWeight],
            box: [r.left - cell.left, r.top - cell.top, r.width]}; };
  return {question: one(q), answer: one(a.querySelector('p') || a), answerClasses: a.className};
}"""

# Every element of `scope` that shows text, with its colour and the first non-transparent
# background behind it; and the elements with an inline colour that is not a theme variable.
COLOURS = """(out, scope) => {
  const root = out.querySelector(scope);
  if (!root) return null;
  const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = c => { const [r, g, b] = rgb(c); return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255; };
  const behind = e => { for (let n = e; n; n = n.parentElement) {
      const c = getComputedStyle(n).backgroundColor; const v = rgb(c);
      if (v.length && (v.length < 4 || v[3] > 0.1)) return c; } return 'rgb(255, 255, 255)'; };
  const shown = [...root.querySelectorAll('*')].filter(e => [...e.childNodes].some(
      n => n.nodeType === 3 && n.data.trim()) && e.getClientRects().length);
  return {
    dark_text: shown.filter(e => lum(getComputedStyle(e).color) < 0.5).map(e => e.tagName + '.' + e.className),
    light_background: shown.filter(e => lum(behind(e)) > 0.5).map(e => e.tagName + '.' + e.className),
    inline: [...root.querySelectorAll('[style*="color"], [style*="background"], [style*="border"]')]
      .map(e => e.getAttribute('style'))
      .filter(s => /#[0-9a-f]{3,8}\\b|rgba?\\(/i.test(s.replace(/var\\(--jp-[\\w-]+,\\s*[^()]*\\)/g, '')
        .replace(/(^|;)\\s*color:\\s*(#fff|rgb\\(255, 255, 255\\))\\s*(?=;|$)/g, '$1'))),
    texts: shown.length,
  };
}"""


@pytest.fixture(scope="module", params=list(APPS))
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    url_path, reset = APPS[request.param]
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact=f"{request.param}-one-look", url_path=url_path, reset=reset
    ) as lab:
        lab.app = request.param  # type: ignore[attr-defined]
        yield lab


def shot(lab: Lab, name: str, at: Any = None) -> None:
    lab.shot(f"one_look_{lab.app}_{name}.png", at=at)  # type: ignore[attr-defined]


DESCRIBE = """out => [...out.querySelectorAll('*')].filter(e => typeof e.className === 'string' && e.className)
  .map(e => e.className).slice(0, 30).join(' | ')"""


def measure(lab: Lab, cell: int, scope: str, question: str, what: str) -> dict[str, Any]:
    out = lab.output(cell)
    try:
        return dict(lab.wait(lambda: out.evaluate(MEASURE, [scope, question]), 30, what))
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the output holds: {out.evaluate(DESCRIBE)}") from None


def paced(lab: Lab, tag: str) -> None:
    lab.srv.pace = 12.0  # chunks a second, a model's pace: the live view shows for seconds
    lab.srv.push(Reply.text(answer(tag), chunks=60))


def ended(lab: Lab, cell: int, tag: str) -> Any:
    transcript = lab.output(cell).locator(".jp-AgentikTranscript")
    lab.wait(lambda: transcript.count() == 1 and tag in lab.text(transcript), 60, "the transcript")
    lab.wait(lambda: lab.output(cell).locator(".agentik-live").count() == 0, 10, "the live view gone")
    return transcript


def test_1_the_transcript_replaces_the_live_view_without_a_jump(lab: Lab) -> None:
    run_cell(lab, CELL_LOAD)
    run_cell(lab, CELL_PANEL)
    lab.wait(lambda: lab.output(CELL_PANEL).locator(".agentik-panel-transcript").count() == 1, 30, "the panel")
    paced(lab, "END-LOOK")
    run_cell(lab, CELL_ASK)
    live = measure(lab, CELL_ASK, ".agentik-live", QUESTION, "the live view's question and first paragraph")
    assert lab.output(CELL_ASK).locator(".jp-AgentikTranscript").count() == 0, "the turn ended before it was measured"
    shot(lab, "live", at=lab.output(CELL_ASK))
    transcript = ended(lab, CELL_ASK, "END-LOOK")
    after = measure(lab, CELL_ASK, ".jp-AgentikTranscript", QUESTION, "the transcript's question and first paragraph")
    shot(lab, "transcript", at=transcript)
    assert {"agentik-assistant", "jp-RenderedHTMLCommon", "jp-RenderedMarkdown"} <= set(live["answerClasses"].split())
    for name in ("question", "answer"):
        assert after[name]["font"] == live[name]["font"], (name, live[name], after[name])
        moved = [abs(a - b) for a, b in zip(after[name]["box"], live[name]["box"])]
        assert max(moved) <= 2, (name, live[name]["box"], after[name]["box"])


def start_cell(lab: Lab, index: int) -> None:
    """Shift+Enter on a cell, without waiting for its end (a `--wait` cell's number comes then)."""
    lab.cell(index).locator(".jp-InputArea-prompt").click()
    lab.page.keyboard.press("Shift+Enter")
    lab.wait(lambda: "*" in lab.text(lab.cell(index).locator(".jp-InputArea-prompt")), 10, f"cell {index} running")


def test_1b_a_waited_turns_transcript_follows_its_view_without_a_jump(lab: Lab) -> None:
    """`--wait`: the transcript is a second output under the view's place, which empties."""
    paced(lab, "END-WAIT")
    start_cell(lab, CELL_WAIT)
    live = measure(lab, CELL_WAIT, ".agentik-live", WAIT_QUESTION, "the waited turn's live view")
    shot(lab, "wait_live", at=lab.output(CELL_WAIT))
    ended(lab, CELL_WAIT, "END-WAIT")
    after = measure(lab, CELL_WAIT, ".jp-AgentikTranscript", WAIT_QUESTION, "the waited turn's transcript")
    shot(lab, "wait_transcript", at=lab.output(CELL_WAIT))
    for name in ("question", "answer"):
        assert after[name]["font"] == live[name]["font"], (name, live[name], after[name])
        moved = [abs(a - b) for a, b in zip(after[name]["box"], live[name]["box"])]
        assert max(moved) <= 2, (name, live[name]["box"], after[name]["box"])


def test_2_the_panel_shows_the_turn_in_the_same_styles(lab: Lab) -> None:
    panel = lab.output(CELL_PANEL).locator(".agentik-panel-transcript")
    lab.wait(lambda: "END-LOOK" in str(panel.text_content()), 30, "the cell's turn in the panel")
    bubbles = measure(lab, CELL_PANEL, ".agentik-panel-transcript", QUESTION, "the panel's bubbles")
    cell = measure(lab, CELL_ASK, ".jp-AgentikTranscript", QUESTION, "the transcript")
    shot(lab, "panel", at=panel)
    for name in ("question", "answer"):
        assert bubbles[name]["font"] == cell[name]["font"], (name, bubbles[name], cell[name])


def menu_item(lab: Lab, label: str) -> Any:
    return lab.page.locator(f'.lm-Menu-item:has(.lm-Menu-itemLabel:text-is("{label}"))').first


DARK_LAYOUT = """() => {
  const probe = document.createElement('div');
  probe.style.background = 'var(--jp-layout-color0)';
  document.body.appendChild(probe);
  const rgb = getComputedStyle(probe).backgroundColor.match(/[0-9.]+/g).slice(0, 3).map(Number);
  probe.remove();
  return rgb[0] + rgb[1] + rgb[2] < 3 * 96;
}"""


def dark_theme(lab: Lab) -> None:
    """Settings > Theme > JupyterLab Dark, as a user picks it (both apps have the menu)."""
    page = lab.page
    page.get_by_role("menuitem", name="Settings").click()
    menu_item(lab, "Theme").hover()
    menu_item(lab, "JupyterLab Dark").click()
    lab.wait(lambda: page.evaluate("document.body.dataset.jpThemeLight") == "false", 30, "the dark theme")
    lab.wait(lambda: page.evaluate(DARK_LAYOUT), 30, "the dark theme's stylesheet to apply")


def test_3_the_dark_theme_has_no_light_colours_on_a_turn(lab: Lab) -> None:
    dark_theme(lab)
    paced(lab, "END-DARK")
    run_cell(lab, CELL_DARK)
    measure(lab, CELL_DARK, ".agentik-live", DARK_QUESTION, "the live view in the dark")
    seen = {"live": lab.output(CELL_DARK).evaluate(COLOURS, ".agentik-live")}
    shot(lab, "dark_live", at=lab.output(CELL_DARK))
    ended(lab, CELL_DARK, "END-DARK")
    panel = lab.output(CELL_PANEL).locator(".agentik-panel-transcript")
    lab.wait(lambda: "END-DARK" in str(panel.text_content()), 30, "the dark turn in the panel")
    seen["transcript"] = lab.output(CELL_DARK).evaluate(COLOURS, ".jp-AgentikTranscript")
    seen["panel"] = lab.output(CELL_PANEL).evaluate(COLOURS, ".agentik-panel-transcript")
    shot(lab, "dark_transcript", at=lab.output(CELL_DARK))
    shot(lab, "dark_panel", at=panel)
    for where, found in seen.items():
        assert found and found["texts"] >= 3, (where, found)
        assert found["dark_text"] == [], (where, found["dark_text"])
        assert found["light_background"] == [], (where, found["light_background"])
    assert seen["live"]["inline"] == [] and seen["panel"]["inline"] == [], seen
