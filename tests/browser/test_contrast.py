"""Every text of ours is legible (WCAG AA, contrast ≥ 4.5:1) in JupyterLab's light and dark themes.

JupyterLab + headless Debian Chromium + the fake LLM, once per theme: a notebook shows what the
extension and the widgets draw — a turn waiting on its on-cell diff (the diff's lines, title and
buttons, the status line), **Fix with agent** under a failed cell, the chat panel, a saved
transcript (question, tool card with its diff, answer, error, a rewound turn's mark) and the **Agent sessions** sidebar.
Each visible element of ours that holds text is measured from its computed colours: the text
colour (with the opacity above it) over the backgrounds below it, composited as the browser
paints them. Screenshots and the measurements land in tests/artifacts/contrast_<theme>_*.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import nbformat
import pytest

from tests.browser.test_browser import TRANSCRIPT_MIME, Lab  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import PROPOSAL, run_cell
from tests.browser_apps import open_sessions_sidebar
from tests.browser_themes import AA, THEMES, measure, themed_lab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from agentik_jupyter.notebook.edits import diff_html, unified_diff  # noqa: E402
from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "contrast.ipynb"
SOURCES = [
    "%load_ext agentik_jupyter",
    "rate = 1",
    "%%agent\nLook at my notebook.",
    "scaled = rate * factor",
    "%agent panel",
    "%%agent --wait\nA saved turn",
]
CELL_LOAD, CELL_DATA, CELL_ASK, CELL_BROKEN, CELL_PANEL, CELL_SAVED = range(6)

SAVED_TRANSCRIPT = {
    "version": 1,
    "title": None,
    "status": "complete",
    "usage": {"input_tokens": 10, "output_tokens": 5},
    "elapsed_s": 0.25,
    "entries": [
        {"role": "user", "content": "Change the rate."},
        {
            "role": "tool",
            "id": "call_1",
            "name": "edit_cell",
            "args": {"cell_id": "c1", "new_source": "rate = 2"},
            "result": "The user accepted the edit: cell c1 now holds the new source (not run).",
            "truncated": 0,
            "error": None,
            "duration_ms": 3.0,
            "display": {"text/html": diff_html(unified_diff("rate = 1\nkept = 0", "rate = 2\nkept = 0", "c1"))},
        },
        {
            "role": "tool",
            "id": "call_2",
            "name": "edit_cell",
            "args": {"cell_id": "c2", "new_source": "kept = 1"},
            "result": "The user rejected the edit: cell c2 is unchanged. Ask what they want instead; do not retry the same edit.",
            "truncated": 0,
            "error": None,
            "duration_ms": 2.0,
            "display": None,
        },
        {"role": "assistant", "content": "The rate is **2** now. END-SAVED"},
        {"role": "error", "message": "A saved error line."},
        {"role": "error", "message": "Rewound turn 2 (back to before turn 2).", "code": "rewound"},
    ],
}


def contrast_lab(tmp: Path, theme: str) -> contextlib.AbstractContextManager[Lab]:
    """The contrast notebook, a saved transcript in its last cell, in JupyterLab in `theme`."""
    saved = nbformat.v4.new_output("display_data", data={"text/plain": "saved", TRANSCRIPT_MIME: SAVED_TRANSCRIPT})
    return themed_lab(
        tmp, theme, NOTEBOOK, SOURCES, outputs={CELL_SAVED: [saved]}, artifact=f"contrast-{theme}", height=1400
    )


def show_everything(lab: Lab) -> None:
    """What a user sees in a working session: each of our texts on screen at least once."""
    run_cell(lab, CELL_LOAD)
    run_cell(lab, CELL_DATA)
    run_cell(lab, CELL_BROKEN)  # NameError: Fix with agent appears under it
    lab.cell(CELL_BROKEN).get_by_role("button", name="Fix with agent").wait_for(timeout=30_000)
    run_cell(lab, CELL_PANEL)
    lab.output(CELL_PANEL).locator("input").first.wait_for(timeout=30_000)
    target = nbformat.read(lab.server.root / NOTEBOOK, as_version=4).cells[CELL_DATA].id
    lab.srv.push(
        Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
        Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": target, "new_source": "rate = 2\nextra = 1"}}]),
        Reply.text("Changed. END-EDIT"),
    )
    run_cell(lab, CELL_ASK)
    diff = lab.cell(CELL_DATA).locator(PROPOSAL)
    lab.wait(lambda: diff.count() == 1 and diff.is_visible(), 45, "the diff on the cell")
    lab.wait(lambda: "waiting" in lab.text(lab.output(CELL_ASK)).lower(), 30, "the status line waiting on the diff")
    lab.cell(CELL_SAVED).locator(".jp-AgentikTranscript").first.wait_for(timeout=30_000)
    card = lab.cell(CELL_SAVED).locator("details.agentik-tool").first
    card.locator("summary").first.click()  # open the tool card: its diff
    card.locator(".agentik-diff-added").first.wait_for(timeout=10_000)
    open_sessions_sidebar(lab)
    lab.page.locator(".jp-AgentikSidebar li, .jp-AgentikSidebar .agentik-session").first.wait_for(timeout=30_000)


@pytest.mark.parametrize("theme", list(THEMES))
def test_every_text_of_ours_meets_wcag_aa(tmp_path: Path, theme: str) -> None:
    with contrast_lab(tmp_path, theme) as lab:
        show_everything(lab)
        lab.shot(f"contrast_{theme}_diff.png", at=lab.cell(CELL_DATA))
        lab.shot(f"contrast_{theme}_saved.png", at=lab.cell(CELL_SAVED))
        found = measure(lab, f"contrast_{theme}")
        kinds = {f["cls"].split()[0] if f["cls"] else f["parent"].split()[0] for f in found}
        for expected in (
            "agentik-diff-added",
            "agentik-proposal-title",
            "agentik-proposal-accepted",
            "agentik-refresh",
            "agentik-rewound",
        ):
            assert any(expected in f["cls"] for f in found), (expected, sorted(kinds))
        low = [f for f in found if f["ratio"] < AA]
        assert not low, json.dumps(low, indent=1)
        assert sum("agentik-diff-added" in f["cls"] for f in found) >= 3  # on the cell and in the tool card
