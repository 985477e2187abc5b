"""One look for a turn (#22): the live view, the transcript that replaces it and the chat panel.

In JupyterLab (headless Debian chromium, the fake LLM streaming at a model's
pace), a `%%agent` cell's question and its answer's first paragraph have the same computed font
size, family and colour, and the same place (within 2 px), mid-stream in the live view and after
the transcript replaced it: no restyle jump at the turn's end. Screenshots in tests/artifacts/one_look_<app>_*.png.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from .test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from .test_browser_notebook import run_cell  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "one_look.ipynb"
QUESTION = "Describe the units by region."
ANSWER = ("FIRST-PARAGRAPH The units grow in every region, north ahead of south. "
          + " ".join(f"word{i}" for i in range(60)) + "\n\n"
          + "\n\n".join(f"Paragraph {i}: the units grew again this month in region {i}." for i in range(12))
          + "\n\nEND-LOOK")
SOURCES = ["%load_ext agentik_jupyter", f"%%agent\n{QUESTION}"]
CELL_LOAD, CELL_ASK = range(2)
APPS = {"jupyterlab": (f"/lab/tree/{NOTEBOOK}", True)}
"""Notebook 7 (`/notebooks/`) is not here yet: its live answer was not found under `.agentik-live`."""
STYLE = """el => { const s = getComputedStyle(el); const r = el.getBoundingClientRect();
  const cell = el.closest('.jp-Cell').getBoundingClientRect();
  return {font: [s.fontSize, s.fontFamily, s.color, s.lineHeight, s.fontWeight],
          box: [r.left - cell.left, r.top - cell.top, r.width]}; }"""


@pytest.fixture(scope="module", params=list(APPS))
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    url_path, reset = APPS[request.param]
    with notebook_page(tmp_path_factory, NOTEBOOK, SOURCES, artifact=f"{request.param}-one-look",
                       url_path=url_path, reset=reset) as lab:
        lab.app = request.param  # type: ignore[attr-defined]
        yield lab


def measured(locator: Any) -> dict[str, Any]:
    return dict(locator.evaluate(STYLE))


def parts(scope: Any) -> tuple[Any, Any]:
    """The question's text and the answer (from its first paragraph) under `scope`."""
    question = scope.locator(".agentik-user .agentik-question").filter(has_text=QUESTION).first
    first = scope.locator(".agentik-assistant").filter(has_text="FIRST-PARAGRAPH").first
    return question, first


def test_the_transcript_replaces_the_live_view_without_a_jump(lab: Lab) -> None:
    app = lab.app  # type: ignore[attr-defined]
    run_cell(lab, CELL_LOAD)
    lab.srv.pace = 12.0  # chunks a second: a model's pace, the live view shows for seconds
    lab.srv.push(Reply.text(ANSWER, chunks=60))
    run_cell(lab, CELL_ASK)
    out = lab.output(CELL_ASK)
    live = out.locator(".agentik-live")
    lab.wait(lambda: live.count() == 1 and "FIRST-PARAGRAPH" in lab.text(live), 30, "the live view's first words")
    question, first = parts(live)
    before = {"question": measured(question), "answer": measured(first)}
    assert out.locator(".jp-AgentikTranscript").count() == 0, "the turn ended before it was measured"
    lab.shot(f"one_look_{app}_live.png", at=live)
    transcript = out.locator(".jp-AgentikTranscript")
    lab.wait(lambda: transcript.count() == 1 and "END-LOOK" in lab.text(transcript), 60, "the transcript")
    lab.wait(lambda: live.count() == 0, 10, "the live view gone")
    question, first = parts(transcript)
    after = {"question": measured(question), "answer": measured(first)}
    lab.shot(f"one_look_{app}_transcript.png", at=transcript)
    for name in ("question", "answer"):
        assert after[name]["font"] == before[name]["font"], (name, before[name], after[name])
        moved = [abs(a - b) for a, b in zip(after[name]["box"], before[name]["box"])]
        assert max(moved) <= 2, (name, before[name]["box"], after[name]["box"])
