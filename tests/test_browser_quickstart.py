"""The quickstart as a new user first sees it: opened in JupyterLab, nothing run yet.

Its saved outputs must render (every turn's transcript, no widget errors) and opening it
must not change it: a tab that is "modified" the moment it opens (JupyterLab rewriting the
kernelspec, the language info or the widget state) tells the user they changed something.
Screenshots land in tests/artifacts/.
"""

from __future__ import annotations

import shutil
import time
from typing import Iterator

import nbformat
import pytest

from .test_browser import (
    QUICKSTART,
    TRANSCRIPT,
    TRANSCRIPT_MIME,
    WIDGET_ERROR,
    Lab,
    browser_lab,
    lab_server,
)
from agentik_jupyter.testing import FakeLLMServer

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

DIRTY_TAB = ".lm-TabBar-tab.jp-mod-dirty"


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("quickstart")
    root, home = tmp / "root", tmp / "home"
    root.mkdir()
    shutil.copy(QUICKSTART, root / QUICKSTART.name)
    with FakeLLMServer() as srv, \
            lab_server(root, home, srv, artifact="quickstart", AGENTIK_DB_PATH=str(tmp / "q.agentik.db")) as server, \
            browser_lab(srv, server, artifact="quickstart", height=1300) as lab:
        lab.page.goto(f"{server.url}/lab/tree/{QUICKSTART.name}?reset&token={server.token}", timeout=30_000)
        lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)
        yield lab


def test_the_saved_quickstart_renders_every_turn(opened: Lab) -> None:
    lab = opened
    saved = nbformat.read(QUICKSTART, as_version=4)
    expected = sum(TRANSCRIPT_MIME in o.get("data", {}) for c in saved.cells for o in c.get("outputs", []))
    lab.wait(lambda: lab.page.locator(TRANSCRIPT).count() == expected, 30, f"{expected} transcripts")
    text = lab.text(lab.page.locator(".jp-Notebook"))
    assert WIDGET_ERROR not in text
    assert "You asked" not in text and "image(s) the tool results" not in text
    lab.shot("quickstart_opened.png")


def test_a_turn_whose_tool_failed_is_not_shown_done(opened: Lab) -> None:
    failed = opened.page.locator(TRANSCRIPT).filter(
        has=opened.page.locator(".agentik-question").get_by_text("Plot the unit column of sales.", exact=True))
    status = opened.text(failed.locator(".agentik-status"))
    assert "✓ Done" not in status and "Finished with 1 failed tool call" in status, status


def test_opening_the_quickstart_leaves_it_unmodified(opened: Lab) -> None:
    lab = opened
    lab.wait(lambda: lab.page.get_by_text("| Idle").count() > 0, 60, "the kernel to start")
    time.sleep(3)  # what JupyterLab does once the kernel is ready (language info, widget restore) has happened
    dirty = lab.page.locator(DIRTY_TAB).count()
    if dirty:
        lab.shot("quickstart_dirty.png")
    assert dirty == 0, "the quickstart's tab is marked modified right after opening it"
