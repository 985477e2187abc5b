"""The chat panel's place after a kernel restart, in JupyterLab and Notebook 7: the session's
transcript with Resume, not "Error displaying widget: model not found".

Headless Debian Chromium + the fake LLM: a `--wait` turn, then `%agent panel` shows the live panel
with it. The notebook is saved and the kernel restarted from the Kernel menu: the panel's place shows the session's
messages from the sessions file, in the open page and in the page opened again, with no widget
error. Resume loads the agent in the new kernel (it has none yet), continues the session and runs
the `%agent panel` cell again: the live panel is back, with the session in it.

A restart asked elsewhere (here the REST API) reaches a page only as the new kernel's "starting"
status, which a page can miss (its kernel websocket reconnecting late): with the page's kernel
websocket routed through Playwright, less its restart statuses, the panel's place still turns to the
transcript when the kernel is restarted through the API, and the turn's Rewind goes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.browser.test_browser import WIDGET_ERROR, Lab  # noqa: E402  (skips without chromium)
from tests.browser.test_notebook import run_cell
from tests.browser_apps import (
    IDLE,
    app_page_fixture,
    restart_from_the_menu,
    server_api,
    shot,
    unsaved_changes,
    url_path,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from jupyter_server.services.kernels.connection.base import deserialize_msg_from_ws_v1  # noqa: E402

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "panel_saved.ipynb"
CELL_LOAD, CELL_ASK, CELL_PANEL = range(3)
SOURCES = ["%load_ext agentik_jupyter", "%%agent --wait\nFirst question.", "%agent panel"]
FIRST = "ANSWER-ONE from before the restart."
LIVE, SAVED = ".agentik-panel", ".agentik-panel-saved"
LOAD_AND_RESUME = re.compile(r"^Load it .*then resume$")
KERNEL_CHANNELS = re.compile(r"/api/kernels/[^/?]+/channels")
RESTART_STATUSES = ("starting", "restarting")


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


def kernel_status(message: str | bytes) -> str | None:
    """What a status message the server sends the page on its kernel websocket says (the binary v1
    protocol or JSON), else None."""
    if isinstance(message, bytes):
        channel, parts = deserialize_msg_from_ws_v1(message)
        header, content = json.loads(parts[0]), (json.loads(parts[3]) if len(parts) > 3 else {})
    else:
        msg = json.loads(message)
        channel, header, content = msg.get("channel"), msg.get("header", {}), msg.get("content", {})
    if channel != "iopub" or header.get("msg_type") != "status":
        return None
    return str(content.get("execution_state"))


def deaf_to_restarts(page_end: Any) -> None:
    """The page's kernel websocket, through Playwright's routing, less the statuses that say the
    kernel restarts: what a page hears when those are lost (its websocket reconnecting late)."""
    server_end = page_end.connect_to_server()

    def to_page(message: str | bytes) -> None:
        if kernel_status(message) not in RESTART_STATUSES:
            page_end.send(message)

    server_end.on_message(to_page)  # (the page's messages go to the server as they are)


def test_a_restart_the_page_does_not_hear_of_still_shows_the_transcript(app_page: Lab) -> None:
    lab = app_page
    lab.page.keyboard.press("Control+s")  # (the live panel the walk above resumed)
    lab.wait(lambda: not unsaved_changes(lab), 30, "the notebook saved")
    lab.page.route_web_socket(KERNEL_CHANNELS, deaf_to_restarts)  # (for the page opened again)
    app = lab.app  # type: ignore[attr-defined]
    lab.page.goto(lab.server.link(url_path(app, NOTEBOOK), reset=app == "jupyterlab"))
    place = lab.output(CELL_PANEL)
    lab.wait(lambda: place.locator(LIVE).count() == 1 and FIRST in lab.text(place), 60, "the live panel")
    lab.wait(lambda: lab.page.locator(IDLE).count() > 0, 60, "the kernel idle")
    rewind = lab.output(CELL_ASK).get_by_role("button", name="Rewind", exact=True)
    lab.wait(lambda: rewind.count() == 1, 60, "the turn's Rewind")
    (session,) = [s for s in server_api(lab, "/api/sessions") if s["path"].endswith(NOTEBOOK)]

    server_api(lab, f"/api/kernels/{session['kernel']['id']}/restart", method="POST")
    lab.wait(lambda: shows_saved_session(lab), 90, "the session's transcript where the panel was")
    assert place.locator(LIVE).count() == 0
    assert WIDGET_ERROR not in lab.text(place)
    lab.wait(lambda: rewind.count() == 0, 60, "the turn's Rewind gone with the kernel that held its checkpoint")
    shot(lab, "panel_saved_after_a_restart_not_heard.png", at=place)
