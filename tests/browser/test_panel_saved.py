"""The chat panel's place after a kernel restart, in JupyterLab and Notebook 7: the session's
transcript with Resume, not "Error displaying widget: model not found".

Headless Debian Chromium + the fake LLM: a `--wait` turn, then `%agent panel` shows the live panel
with it. The notebook is saved and the kernel restarted from the Kernel menu: the panel's place shows the session's
messages from the sessions file, in the open page and in the page opened again, with no widget
error. Resume loads the agent in the new kernel (it has none yet), continues the session and runs
the `%agent panel` cell again: the live panel is back, with the session in it.
"""

from __future__ import annotations

import re

import pytest

from tests.browser.test_browser import WIDGET_ERROR, Lab  # noqa: E402  (skips without chromium)
from tests.browser.test_notebook import run_cell
from tests.browser_apps import app_page_fixture, restart_from_the_menu, shot, unsaved_changes, url_path

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "panel_saved.ipynb"
CELL_LOAD, CELL_ASK, CELL_PANEL = range(3)
SOURCES = ["%load_ext agentik_jupyter", "%%agent --wait\nFirst question.", "%agent panel"]
FIRST = "ANSWER-ONE from before the restart."
LIVE, SAVED = ".agentik-panel", ".agentik-panel-saved"
LOAD_AND_RESUME = re.compile(r"^Load it .*then resume$")


app_page = app_page_fixture(NOTEBOOK, SOURCES, "panel-saved")


def shows_saved_session(lab: Lab) -> bool:
    saved = lab.output(CELL_PANEL).locator(SAVED)
    return saved.count() == 1 and FIRST in lab.text(saved) and "First question." in lab.text(saved)


def test_the_panel_shows_its_session_after_a_restart_and_resumes(app_page: Lab) -> None:
    lab = app_page
    lab.srv.push(Reply.text(FIRST))
    run_cell(lab, CELL_LOAD)
    run_cell(lab, CELL_ASK)
    lab.wait(lambda: FIRST in lab.text(lab.output(CELL_ASK)), 60, "the turn's answer")
    run_cell(lab, CELL_PANEL)
    place = lab.output(CELL_PANEL)
    lab.wait(lambda: place.locator(LIVE).count() == 1 and FIRST in lab.text(place), 60, "the live panel")
    assert place.locator(SAVED).count() == 0
    lab.page.keyboard.press("Control+s")
    lab.wait(lambda: not unsaved_changes(lab), 30, "the notebook saved")

    restart_from_the_menu(lab)
    lab.wait(lambda: shows_saved_session(lab), 60, "the session's transcript where the panel was")
    assert WIDGET_ERROR not in lab.text(place)

    app = lab.app  # type: ignore[attr-defined]
    lab.page.goto(lab.server.link(url_path(app, NOTEBOOK), reset=app == "jupyterlab"))
    lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)
    place = lab.output(CELL_PANEL)
    lab.wait(lambda: shows_saved_session(lab), 60, "the transcript in the page opened again")
    shown = lab.text(lab.page.locator(".jp-Notebook"))
    assert WIDGET_ERROR not in shown and "Loading widget" not in shown, shown
    shot(lab, "panel_saved_after_restart.png", at=place)

    place.get_by_role("button", name="Resume", exact=True).click()
    load = place.get_by_role("button", name=LOAD_AND_RESUME)  # the new kernel has no agent yet
    load.wait_for(timeout=60_000)
    load.click()
    place = lab.output(CELL_PANEL)
    lab.wait(
        lambda: place.locator(LIVE).count() == 1 and FIRST in lab.text(place.locator(LIVE)),
        90,
        "the live panel back, with the resumed session",
    )
    assert place.locator(SAVED).count() == 0
    shot(lab, "panel_saved_resumed.png", at=place)
