"""The widgets keep their look where our lab extension is not (VS Code, Colab, a lab without it).

JupyterLab with the `agentik-jupyter` lab extension disabled in the test's own config (as
`jupyter labextension disable agentik-jupyter` writes it: labconfig/page_config.json), headless
Debian chromium, the fake LLM. No extension answers the kernel's hello, so turns stream into
ipywidgets' own widgets and saved transcripts show as their text/html. Each of these is readable
and styled from what the widget carries (widgets/look.py), checked on computed styles:

1. a turn waiting on an approval card: the live view's left border, the card's border, the
   question's "You" in the theme's brand colour, Approve in JupyterLab's accept blue;
2. a proposed edit (no extension: its diff in the tool card): the card's border, the diff's added
   and removed lines green and red, live and in the transcript;
3. a failed tool and a failed turn: the error texts red, the tool card framed;
4. every text of ours on screen has contrast ≥ 4.5:1 against what is behind it;
5. a `--wait` turn streams its answer as the cell's text output, which its transcript replaces.

In JupyterLab's light and dark themes. Screenshots in tests/artifacts/no_extension_<theme>_*.png.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import nbformat
import pytest

from tests.browser.test_browser import Lab, watch  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import run_cell
from tests.browser_themes import AA, THEMES, measure, themed_lab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "no_extension.ipynb"
SOURCES = [
    "%load_ext agentik_jupyter",
    "rate = 1",
    "%%agent\nWhat is the total? Run code.",
    "%%agent\nChange the rate to 2.",
    "%%agent\nLook at a variable that is not there.",
    "%%agent --wait\nSummarise the rate.",
]
CELL_LOAD, CELL_DATA, CELL_APPROVE, CELL_EDIT, CELL_ERROR, CELL_WAIT = range(6)
SLOW_ANSWER = " ".join(["The rate is 2 now."] * 30) + " END-EDIT"

# Computed look of the first element matching `selector` inside `out` (null when there is none).
LOOK = """(out, selector) => {
  const el = out.querySelector(selector);
  if (!el || !el.getClientRects().length) return null;
  const s = getComputedStyle(el);
  const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
  return {
    color: rgb(s.color), background: rgb(s.backgroundColor),
    border_left: [parseFloat(s.borderLeftWidth), s.borderLeftStyle, rgb(s.borderLeftColor)],
    border_top: [parseFloat(s.borderTopWidth), s.borderTopStyle, rgb(s.borderTopColor)],
    text: el.textContent.slice(0, 80),
  };
}"""


@pytest.fixture(scope="module", params=list(THEMES))
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("no-extension")
    with themed_lab(
        tmp, request.param, NOTEBOOK, SOURCES, artifact="no-extension", height=1300, extension=False
    ) as lab:
        yield lab


def shot(lab: Lab, name: str, at: Any = None) -> None:
    lab.shot(f"no_extension_{lab.theme}_{name}.png", at=at)  # type: ignore[attr-defined]


def look(lab: Lab, cell: int, selector: str, what: str) -> dict[str, Any]:
    out = lab.output(cell)
    return dict(lab.wait(lambda: out.evaluate(LOOK, selector), 60, what))


def framed(found: dict[str, Any], side: str = "border_top", width: float = 1) -> bool:
    size, style, _ = found[side]
    return bool(size >= width and style == "solid")


def reddish(rgb: list[float]) -> bool:
    r, g, b = rgb[:3]
    return r >= 150 and r - g >= 60 and r - b >= 60


def test_0_the_extension_is_off(lab: Lab) -> None:
    run_cell(lab, CELL_LOAD)
    assert lab.page.locator('.jp-SideBar [data-id="agentik-sessions"]').count() == 0  # (its sidebar is ours)
    run_cell(lab, CELL_DATA)


def test_1_a_turn_waiting_on_its_approval_card(lab: Lab) -> None:
    lab.srv.push(
        Reply.tool_calls([{"name": "run_code", "args": {"code": "print('TOTAL', rate + 1)"}}]),
        Reply.text("The total is **2**. END-APPROVED"),
    )
    run_cell(lab, CELL_APPROVE)
    out = lab.output(CELL_APPROVE)
    approve = out.get_by_role("button", name="Approve")
    approve.wait_for(timeout=90_000)
    shot(lab, "approval", at=approve)
    live = look(lab, CELL_APPROVE, ".agentik-live", "the live view")
    assert framed(live, "border_left", 3), live
    card = look(lab, CELL_APPROVE, ".agentik-approval", "the approval card")
    assert framed(card, "border_top", 2), card
    who = look(lab, CELL_APPROVE, ".agentik-who", "the question's You")
    assert who["color"][2] > who["color"][0] + 60, who  # the brand blue, not the text's black
    assert "var(--jp-accept-color-normal" in str(approve.get_attribute("style"))
    colour = approve.evaluate("el => getComputedStyle(el).backgroundColor")
    assert colour == lab.page.evaluate(
        "() => { const d = document.createElement('div'); d.style.background = 'var(--jp-accept-color-normal)';"
        " document.body.appendChild(d); const c = getComputedStyle(d).backgroundColor; d.remove(); return c; }"
    )
    approve.click()
    lab.wait(lambda: "END-APPROVED" in lab.text(out), 90, "the approved turn's answer")
    saved = look(lab, CELL_APPROVE, ".agentik-transcript details.agentik-tool", "the transcript's tool card")
    assert framed(saved), saved
    shot(lab, "approved", at=out)


def test_2_a_proposed_edit_shows_its_diff_in_colour(lab: Lab) -> None:
    target = nbformat.read(lab.server.root / NOTEBOOK, as_version=4).cells[CELL_DATA].id
    lab.srv.push(
        Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
        Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": target, "new_source": "rate = 2"}}]),
        Reply.text(SLOW_ANSWER, chunks=60),
    )
    lab.srv.pace = 4.0  # chunks a second: the live view stays for ~15 s
    run_cell(lab, CELL_EDIT)
    out = lab.output(CELL_EDIT)
    card = out.locator(".agentik-live details.agentik-tool", has_text="edit_cell")
    lab.wait(lambda: card.count() == 1 and "✓" in lab.text(card.locator("summary").first), 90, "the edit's card, done")
    card.locator("summary").first.click()
    added = look(lab, CELL_EDIT, ".agentik-live .agentik-diff-added", "the live card's added line")
    removed = look(lab, CELL_EDIT, ".agentik-live .agentik-diff-removed", "the live card's removed line")
    shot(lab, "diff_live", at=card)
    assert lab.output(CELL_EDIT).locator(".agentik-transcript").count() == 0, "the turn ended before the check"
    assert framed(look(lab, CELL_EDIT, ".agentik-live details.agentik-tool", "the live card")), "no card border"
    assert added["background"][1] > max(added["background"][0], added["background"][2]), added  # green
    assert removed["background"][0] > max(removed["background"][1], removed["background"][2]), removed  # red
    lab.wait(lambda: "END-EDIT" in lab.text(out.locator(".agentik-transcript")), 120, "the transcript")
    lab.srv.pace = 0.0
    saved = out.locator(".agentik-transcript details.agentik-tool", has_text="edit_cell")
    saved.locator("summary").first.click()
    after = look(lab, CELL_EDIT, ".agentik-transcript .agentik-diff-added", "the transcript's added line")
    assert after["background"] == added["background"], (after, added)
    shot(lab, "diff_transcript", at=saved)


def test_3_errors_are_red(lab: Lab) -> None:
    lab.srv.push(
        Reply.tool_calls([{"name": "inspect_variable", "args": {"name": "missing"}}]),
        Reply.fault(401, message="Invalid API key (a test)"),
    )
    run_cell(lab, CELL_ERROR)
    out = lab.output(CELL_ERROR)
    transcript = out.locator(".agentik-transcript")
    lab.wait(lambda: transcript.locator(":scope > .agentik-error").count() == 1, 90, "the failed turn's transcript")
    out.locator(".agentik-transcript details.agentik-tool summary").first.click()
    card_error = look(lab, CELL_ERROR, ".agentik-transcript pre.agentik-error", "the tool's error")
    turn_error = look(lab, CELL_ERROR, ".agentik-transcript > .agentik-error", "the turn's error")
    shot(lab, "errors", at=out)
    assert reddish(card_error["color"]), card_error
    assert reddish(turn_error["color"]), turn_error
    assert framed(look(lab, CELL_ERROR, ".agentik-transcript details.agentik-tool", "the tool card")), "no border"


def test_4_every_text_of_ours_is_legible(lab: Lab) -> None:
    found = measure(lab, f"no_extension_{lab.theme}_contrast")  # type: ignore[attr-defined]
    shot(lab, "whole", at=lab.cell(CELL_EDIT))
    assert len(found) >= 10, found  # the cards, questions, answers and status lines measured
    low = [f for f in found if f["ratio"] < AA]
    assert not low, json.dumps(low, indent=1)


STREAMED = " ".join(f"Rate point {i} is **{i}**." for i in range(40)) + " END-WAIT"
STDOUT = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']"


def test_5_a_waiting_turn_streams_its_answer_as_text_then_shows_it_rendered(lab: Lab) -> None:
    lab.srv.push(Reply.text(STREAMED, chunks=40, first_byte_after=0.5))
    lab.srv.pace = 8.0  # chunks a second: ~5 s of answer
    streamed = watch(lab, CELL_WAIT, STDOUT)
    try:
        run_cell(lab, CELL_WAIT)
        seen = [t for t in streamed.seen() if t]
    finally:
        streamed.stop()
        lab.srv.pace = 0.0
    out = lab.output(CELL_WAIT)
    lab.wait(lambda: "END-WAIT" in lab.text(out.locator(".agentik-transcript")), 60, "the transcript")
    assert len(seen) >= 3, seen  # the answer grew on screen, as it came
    assert all(STREAMED.startswith(t.strip()) for t in seen), seen  # the model's text, piece after piece
    assert "END-WAIT" not in seen[0]
    assert out.locator(STDOUT).count() == 0  # the streamed text went; the transcript shows the answer
    assert out.locator(".agentik-transcript strong", has_text="39").count() == 1  # rendered
    assert "Error" not in lab.text(out)
    shot(lab, "wait_transcript", at=out)
