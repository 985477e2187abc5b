"""A saved notebook's agent cells after a kernel restart, in JupyterLab and Notebook 7: each turn's
transcript, and nothing broken under it.

Headless Debian Chromium + the fake LLM: a background `%%agent` cell and a `--wait` cell each end
with their Rewind, which works (the `--wait` turn is rewound) and follows `%agent rewind`; the notebook is saved, the kernel
restarted and the page opened again. Both rewound turns' transcripts say "↶ Rewound", live and in the
file, so the reopened page tells them from the others though the new kernel knows neither. The saved file holds no widget output for either cell (a
widget's model dies with its kernel, and JupyterLab then draws "Error displaying widget: model not
found" under the cell, or "Loading widget..." until then), and the page shows both transcripts and
neither.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.browser.test_browser import WIDGET_ERROR, Lab  # noqa: E402  (skips without chromium)
from tests.browser.test_notebook import run_cell
from tests.browser_apps import app_page_fixture, is_notebook7, server_api, shot, unsaved_changes, url_path

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from agentik_jupyter.testing import Reply  # noqa: E402
from agentik_jupyter.widgets.transcript import REWOUND_MARK, TRANSCRIPT_MIME  # noqa: E402

NOTEBOOK = "turn_rewind_saved.ipynb"
CELL_LOAD, CELL_BACKGROUND, CELL_WAIT, CELL_REWIND, CELL_AFTER = range(5)
SOURCES = [
    "%load_ext agentik_jupyter",
    "%%agent\nFirst question, in the background.",
    "%%agent --wait\nSecond question, waited for.",
    "%agent rewind",
    "print('KERNEL-' + 'BACK')",
]
FIRST, SECOND = "ANSWER-ONE in the background.", "ANSWER-TWO waited for."
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
REWIND, REWIND_NOW = re.compile(r"^\W*Rewind$"), re.compile(r"^\W*Rewind now$")  # (after the icon's glyph)


app_page = app_page_fixture(NOTEBOOK, SOURCES, "turn-rewind-saved")


def saved_outputs(lab: Lab) -> list[list[dict[str, Any]]]:
    """Each code cell's outputs as the server has the notebook on disk."""
    notebook = server_api(lab, f"/api/contents/{NOTEBOOK}")["content"]
    return [cell.get("outputs", []) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_a_saved_notebook_shows_its_turns_and_no_widget_error_after_a_restart(app_page: Lab) -> None:
    lab = app_page
    lab.srv.push(Reply.text(FIRST), Reply.text(SECOND))
    run_cell(lab, CELL_LOAD)
    lab.console.clear()  # Notebook 7.6 logs an error of its own while the page loads; only ours count
    run_cell(lab, CELL_BACKGROUND)
    background = lab.output(CELL_BACKGROUND)
    lab.wait(lambda: FIRST in lab.text(background), 60, "the background turn's answer")
    background.get_by_role("button", name=REWIND).wait_for(state="visible", timeout=60_000)
    run_cell(lab, CELL_WAIT)
    waited = lab.output(CELL_WAIT)
    lab.wait(lambda: SECOND in lab.text(waited), 60, "the --wait turn's answer")

    # before the restart the Rewind works: the --wait turn (the latest) is taken back
    rewind = waited.get_by_role("button", name=REWIND)
    rewind.wait_for(state="visible", timeout=60_000)  # once the turn ended
    rewind.click()
    lab.wait(lambda: "Rewind would take back turn 2" in lab.text(waited), 30, "the turn's preview")
    waited.get_by_role("button", name=REWIND_NOW).click()
    lab.wait(lambda: "This turn was rewound." in lab.text(waited), 30, "the rewound turn's note")
    assert background.get_by_role("button", name=REWIND).is_visible()  # turn 1 was not rewound
    run_cell(lab, CELL_REWIND)  # rewinds turn 1: its Rewind follows, as the widget did
    lab.wait(lambda: "This turn was rewound." in lab.text(background), 30, "turn 1's note after %agent rewind")
    assert not background.get_by_role("button", name=REWIND).count()
    assert "Rewound turn 2" in lab.text(waited) and "This turn was rewound." in lab.text(waited)  # (drawn again)
    for out in (background, waited):  # the transcripts, shown again, say so too
        lab.wait(lambda out=out: REWOUND_MARK in footer(out), 30, "the rewound turn's transcript marked")  # type: ignore[misc]
    shot(lab, "turn_rewind_saved_before.png", at=waited)

    lab.page.keyboard.press("Control+s")
    lab.wait(lambda: not unsaved_changes(lab), 30, "the notebook saved")
    outputs = saved_outputs(lab)
    for index in (CELL_BACKGROUND, CELL_WAIT):
        assert not [o for o in outputs[index] if WIDGET_VIEW in o.get("data", {})], outputs[index]
    assert FIRST in json.dumps(outputs[CELL_BACKGROUND]) and SECOND in json.dumps(outputs[CELL_WAIT])
    for index in (CELL_BACKGROUND, CELL_WAIT):  # saved with the mark: no kernel needs to know the turn
        (saved,) = [o["data"] for o in outputs[index] if TRANSCRIPT_MIME in o.get("data", {})]
        assert saved[TRANSCRIPT_MIME].get("rewound") is True and REWOUND_MARK in "".join(saved["text/html"])

    (session,) = [s for s in server_api(lab, "/api/sessions") if s["path"].endswith(NOTEBOOK)]
    kernel = f"/api/kernels/{session['kernel']['id']}"
    server_api(lab, f"{kernel}/restart", method="POST")
    app = lab.app  # type: ignore[attr-defined]
    lab.page.goto(lab.server.link(url_path(app, NOTEBOOK), reset=app == "jupyterlab"))
    lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)
    lab.wait(lambda: FIRST in lab.text(lab.output(CELL_BACKGROUND)), 60, "the background turn's transcript")
    lab.wait(lambda: SECOND in lab.text(lab.output(CELL_WAIT)), 60, "the --wait turn's transcript")
    run_cell(lab, CELL_AFTER)  # the page is connected to the new kernel (its widget manager restored)
    lab.wait(lambda: "KERNEL-BACK" in lab.text(lab.output(CELL_AFTER)), 60, "the new kernel's answer")
    for index in (CELL_BACKGROUND, CELL_WAIT):  # the new kernel does not know these turns: the file tells
        assert REWOUND_MARK in footer(lab.output(index)), lab.text(lab.output(index))
    shot(lab, "turn_rewind_saved_after.png", at=lab.output(CELL_WAIT))
    # no widget output is left to draw: neither its "Loading widget..." (which waits for a model no
    # kernel has) nor, once the widget manager gives up, "Error displaying widget: model not found"
    shown = lab.text(lab.page.locator(".jp-Notebook"))
    assert WIDGET_ERROR not in shown and "Loading widget" not in shown, shown
    assert not [line for line in lab.console if line.startswith("pageerror") and not notebook7_own(lab, line)]


def footer(output: Any) -> str:
    """The transcript's last line: how the turn ended (and whether it was rewound)."""
    line = output.locator(".jp-AgentikTranscript .agentik-status")
    return str(line.last.inner_text()) if line.count() else ""


def notebook7_own(lab: Lab, line: str) -> bool:
    """Notebook 7.6's own error while a page opens a notebook (its collaboration plugins), seen with
    and without our extension: only ours count."""
    return is_notebook7(lab) and line == "pageerror: Cannot read properties of undefined (reading 'schema')"
