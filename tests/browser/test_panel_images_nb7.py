"""An image pasted into the chat panel's box goes with the next question in Notebook 7 too (our lab
extension loads there): in headless Debian Chromium, it reaches the fake provider as an image part.

Screenshot in tests/artifacts/panel_images_notebook7.png.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from tests.browser.test_browser import Lab, notebook_page, run_cell
from tests.browser.test_panel_images import (
    CELL_LOAD,
    CELL_PANEL,
    NOTEBOOK,
    PASTE,
    SOURCES,
    an_empty_panel_says_how_to_start,
    ask,
    latest_rewind,
    panel,
    says_the_cost,
    two_images_to_the_demo,
)
from tests.browser_apps import is_notebook7, url_path

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from agentik_jupyter.testing import Reply  # noqa: E402
from tests.image_support import png_bytes, png_size  # noqa: E402


@pytest.fixture(scope="module")
def nb7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with notebook_page(
        tmp_path_factory,
        NOTEBOOK,
        SOURCES,
        artifact="notebook7_panel_images",
        url_path=url_path("notebook7", NOTEBOOK),
        reset=False,
    ) as lab:
        yield lab


def test_4_notebook7_a_pasted_image_goes_with_the_question(nb7: Lab) -> None:
    assert is_notebook7(nb7)
    for index in (CELL_LOAD, CELL_PANEL):
        run_cell(nb7, index)
    box = panel(nb7).get_by_placeholder("Ask the agent")
    box.wait_for(timeout=60_000)
    an_empty_panel_says_how_to_start(nb7)
    box.evaluate(PASTE, base64.b64encode(png_bytes(300, 200, "orange")).decode())
    attached = panel(nb7).locator(".agentik-attachments img")
    nb7.wait(lambda: attached.count() == 1, 60, "the pasted image's thumbnail under the box")
    nb7.srv.push(Reply.text("An orange box. END-NB7"))
    ask(nb7, "What is this?")
    nb7.wait(lambda: "END-NB7" in nb7.text(panel(nb7)), 90, "the answer")
    ((mime, data),) = nb7.srv.requests[-1].user_images()
    assert mime == "image/png" and png_size(data) == (300, 200)
    nb7.wait(lambda: latest_rewind(nb7).is_enabled(), 30, "Rewind offered once there is a turn")
    says_the_cost(nb7)
    nb7.shot("panel_images_notebook7.png", at=panel(nb7).locator(".agentik-question-images img").last)
    nb7.no_widget_errors()


def test_5_notebook7_two_images_are_counted_alike_and_the_demo_says_it_got_them(nb7: Lab) -> None:
    two_images_to_the_demo(nb7)
    nb7.no_widget_errors()
