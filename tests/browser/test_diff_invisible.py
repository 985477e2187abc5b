"""Trojan Source in JupyterLab: hidden characters show as badges where the user decides.

JupyterLab + headless Debian Chromium + the fake LLM:
1. an `edit_cell` proposal whose new source hides a zero-width space shows a badge in its place,
   a warning above the diff and both sides' line counts; no raw U+200B is on the page;
2. a run_code approval card whose code hides a right-to-left override shows badges and the
   warning, styled (the JupyterLab theme's colours resolve in the card's inline styles);
3. a saved transcript (the lab extension's renderer, no kernel) shows a tool card's hidden
   characters, in its arguments, result and HTML preview, as badges under the warning.

Screenshots go to the test's tmp dir (and tests/artifacts/).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.browser.test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import run_cell  # noqa: E402  (Shift+Enter, again if the kernel was not ready)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

from agentik_jupyter.testing import Reply  # noqa: E402
from tests.browser.test_browser import TRANSCRIPT_MIME  # noqa: E402

NOTEBOOK = "invisible_demo.ipynb"
CELL_LOAD, CELL_DATA, CELL_ASK = range(3)
SOURCES = ["%load_ext agentik_jupyter", "total = 1 + 1", "%%agent\nTidy my notebook."]
HIDDEN_EDIT = "total = 1 + 1\nimport o\u200bs"
TROJAN = 'ok = True\nif ok != "no\u202e \u2066# only a comment\u2069 \u2066":\n    print("RAN-HIDDEN")'
HIDDEN_TEXT = (
    "el => [...el.innerText].filter(c => /[\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2069\\ufeff]/.test(c)).length"
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact="jupyterlab-invisible", url_path=f"/lab/tree/{NOTEBOOK}"
    ) as lab:
        yield lab


def edit_responder(request: Any) -> Reply:
    """Read the notebook, propose the hidden edit on cell 1, then end."""
    last = request.messages[-1]
    if last.get("role") == "user":
        return Reply.tool_calls([{"name": "read_notebook", "args": {}}])
    found = re.search(r"\[1\] id=(\S+) code", last.get("content", ""))
    if found:
        return Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": found.group(1), "new_source": HIDDEN_EDIT}}])
    return Reply.text("Done. END-EDIT")


def save_shot(lab: Lab, at: Any, folder: Path, name: str) -> Path:
    at.scroll_into_view_if_needed(timeout=5_000)
    path = folder / name
    at.screenshot(path=str(path), timeout=10_000)
    lab.shot(name, at=at)
    assert path.stat().st_size > 1000
    return path


def test_1_edit_diff_shows_a_zero_width_space_as_a_badge(lab: Lab, tmp_path: Path) -> None:
    run_cell(lab, CELL_LOAD)
    lab.srv.set_responder(edit_responder)
    run_cell(lab, CELL_ASK)
    proposal = lab.cell(CELL_DATA).locator(".agentik-proposal")
    lab.wait(lambda: proposal.count() == 1 and proposal.is_visible(), 60, "the diff on the cell")
    badge = proposal.locator(".agentik-invisible")
    assert badge.count() == 1 and lab.text(badge) == "<U+200B ZWSP>"
    assert badge.get_attribute("title") == "ZERO WIDTH SPACE"
    warning = lab.text(proposal.locator(".agentik-invisible-warning"))
    assert "This change contains 1 invisible or direction-changing character" in warning
    text = lab.text(proposal)
    assert "+ import o<U+200B ZWSP>s" in text and "1 line → 2 lines" in text
    assert proposal.evaluate(HIDDEN_TEXT) == 0  # the raw character is not on the page
    colour = badge.evaluate("el => getComputedStyle(el).borderTopStyle")
    assert colour == "solid"  # styled by the extension's CSS, not bare text
    save_shot(lab, proposal, tmp_path, "diff_invisible.png")
    proposal.get_by_role("button", name="Reject").click()
    lab.wait(lambda: "END-EDIT" in lab.text(lab.output(CELL_ASK)), 30, "the answer after Reject")
    lab.srv.set_responder(None)


def test_2_approval_card_shows_a_right_to_left_override_as_a_badge(lab: Lab, tmp_path: Path) -> None:
    lab.srv.push(Reply.tool_calls([{"name": "run_code", "args": {"code": TROJAN}}]), Reply.text("Denied. END-DENY"))
    run_cell(lab, CELL_ASK)
    card = lab.output(CELL_ASK)
    deny = card.get_by_role("button", name="Deny")
    deny.wait_for(timeout=30_000)
    warning = card.locator(".agentik-invisible-warning:visible")  # the tool card below is folded
    assert "This code contains 4 invisible or direction-changing characters" in lab.text(warning)
    badges = card.locator(".agentik-invisible:visible")
    assert [lab.text(badges.nth(i)) for i in range(badges.count())] == [
        "<U+202E RLO>",
        "<U+2066 LRI>",
        "<U+2069 PDI>",
        "<U+2066 LRI>",
    ]
    assert "3 lines" in lab.text(card)
    assert card.evaluate(HIDDEN_TEXT) == 0
    assert badges.first.evaluate("el => getComputedStyle(el).borderTopStyle") == "solid"
    save_shot(lab, card, tmp_path, "approval_invisible.png")
    deny.click()
    lab.wait(lambda: "END-DENY" in lab.text(lab.output(CELL_ASK)), 30, "the answer after Deny")
    shown = lab.text(lab.output(CELL_ASK))
    # the denied card may still show the code (until the transcript folds it), never what it prints
    assert "RAN-HIDDEN" not in shown.replace('print("RAN-HIDDEN")', ""), shown


def saved_transcript_notebook(path: Path) -> None:
    entries = [
        {"role": "user", "content": "Clean it"},
        {
            "role": "tool",
            "id": "c1",
            "name": "run_code",
            "args": {"code": TROJAN},
            "result": "done\u200b",
            "truncated": 0,
            "error": None,
            "duration_ms": 1.0,
            "display": {"text/html": "<table><tr><td>pass\u202eword</td></tr></table>"},
        },
        {"role": "assistant", "content": "Done. END-SAVED"},
    ]
    transcript = {
        "version": 1,
        "title": None,
        "status": "complete",
        "usage": None,
        "elapsed_s": 0.1,
        "entries": entries,
    }
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    cell = nbformat.v4.new_code_cell("%%agent\nClean it")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": "saved", TRANSCRIPT_MIME: transcript})]
    nb.cells = [cell]
    nbformat.write(nb, path)


def test_3_saved_transcript_tool_card_shows_badges(lab: Lab, tmp_path: Path) -> None:
    saved_transcript_notebook(lab.server.root / "saved_invisible.ipynb")
    # ?reset: only this notebook open (the earlier notebook, restored, shows its live turn again)
    lab.page.goto(lab.server.link("/lab/tree/saved_invisible.ipynb", reset=True), timeout=30_000)
    card = lab.page.locator(".jp-AgentikTranscript .agentik-tool").first
    card.wait_for(timeout=45_000)
    assert "<U+202E RLO>" in lab.text(card.locator("summary").first)  # the title too, as plain text
    card.locator("summary").first.click()
    assert "This tool call contains 5 invisible or direction-changing characters" in lab.text(
        card.locator(".agentik-invisible-warning")
    )
    badges = [lab.text(b) for b in card.locator(".agentik-invisible:visible").all()]
    assert badges == ["<U+202E RLO>", "<U+2066 LRI>", "<U+2069 PDI>", "<U+2066 LRI>", "<U+202E RLO>"]
    assert "pass<U+202E RLO>word" in lab.text(card.locator(".agentik-preview"))
    assert card.evaluate(HIDDEN_TEXT) == 0
    card.locator(".agentik-sent summary").click()
    assert "done<U+200B ZWSP>" in lab.text(card.locator(".agentik-sent"))
    save_shot(lab, card, tmp_path, "transcript_invisible.png")
