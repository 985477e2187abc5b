"""The quickstart as a new user first sees it: opened in JupyterLab and in Notebook 7, nothing run yet.

Its saved outputs must render (every turn's transcript, no widget errors) and opening it
must not change it: a notebook that is "modified" the moment it opens (the app rewriting the
kernelspec, the language info or the widget state) tells the user they changed something
(JupyterLab marks the tab; Notebook 7 warns when the page is left: browser_apps.unsaved_changes).
The features the quickstart names are walked live in test_demo.py.
Screenshots: tests/artifacts/<app>_quickstart_*.png.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import nbformat
import pytest

from tests.browser.test_browser import (
    QUICKSTART,
    TRANSCRIPT,
    TRANSCRIPT_MIME,
    WIDGET_ERROR,
    Lab,
    browser_lab,
    lab_server,
)
from tests.browser_apps import APPS, IDLE, is_notebook7, reset, shot, unsaved_changes, url_path
from tests.shared_servers import shared_llm

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

# the kernel is idle: the toolbar's execution indicator (both apps), Notebook 7's kernel status


@pytest.fixture(scope="module", params=APPS)
def opened(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    app = str(request.param)
    tmp = tmp_path_factory.mktemp(f"quickstart-{app}")
    root, home = tmp / "root", tmp / "home"
    root.mkdir()
    shutil.copy(QUICKSTART, root / QUICKSTART.name)
    artifact = f"{app}-quickstart"
    with (
        shared_llm() as srv,
        lab_server(root, home, srv, artifact=artifact, app=app) as server,
        browser_lab(srv, server, artifact=artifact, height=1300) as lab,
    ):
        lab.page.goto(server.link(url_path(app, QUICKSTART.name), reset=reset(app)), timeout=30_000)
        lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)
        lab.app = app  # type: ignore[attr-defined]
        assert is_notebook7(lab) == (app == "notebook7")
        yield lab


def test_the_saved_quickstart_renders_every_turn(opened: Lab) -> None:
    lab = opened
    saved = nbformat.read(QUICKSTART, as_version=4)
    expected = sum(TRANSCRIPT_MIME in o.get("data", {}) for c in saved.cells for o in c.get("outputs", []))
    lab.wait(lambda: lab.page.locator(TRANSCRIPT).count() == expected, 30, f"{expected} transcripts")
    text = lab.text(lab.page.locator(".jp-Notebook"))
    assert WIDGET_ERROR not in text
    assert "You asked" not in text and "image(s) the tool results" not in text
    # no stray line above a transcript (an untrusted notebook shows a widget's place as its text);
    # textContent: the cells out of view are not drawn, their inner text is empty
    assert "Agent turn" not in str(lab.page.locator(".jp-Notebook").text_content())
    # the Stop example, saved as what it said and that it stopped
    stopped = lab.page.locator(TRANSCRIPT).filter(has_text="Write a long essay about this data.")
    stopped.scroll_into_view_if_needed()
    lab.wait(lambda: "■ Stopped" in lab.text(stopped), 10, "the Stop example's transcript, stopped")
    assert "Paragraph 1" in lab.text(stopped)
    shot(lab, "quickstart_opened.png")


def test_a_turn_whose_tool_failed_is_not_shown_done(opened: Lab) -> None:
    failed = opened.page.locator(TRANSCRIPT).filter(
        has=opened.page.locator(".agentik-question").get_by_text("Plot the unit column of sales.", exact=True)
    )
    status = opened.text(failed.locator(".agentik-status"))
    assert "✓ Done" not in status and "Finished with 1 failed tool call" in status, status


def test_opening_the_quickstart_leaves_it_unmodified(opened: Lab) -> None:
    lab = opened
    lab.wait(lambda: lab.page.locator(IDLE).count() > 0, 60, "the kernel to start")
    # what the app does once the kernel is ready (language info, widget restore) must not modify it
    lab.stays(lambda: not unsaved_changes(lab), 3.0, "the quickstart unmodified right after opening it")
    shot(lab, "quickstart_idle.png")
