"""Images in the chat panel, in real JupyterLab and headless Debian Chromium: a file picked with
the panel's Image button, and an image pasted into its box or dropped on the panel (our lab
extension), go with the next question: thumbnails under the box, then with the question, and image
parts in the request the fake provider receives (Notebook 7: test_panel_images_nb7.py).

Screenshots in tests/artifacts/panel_images_*.png.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import Lab, browser_lab, lab_server, run_cell, write_code_cells

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from agentik_jupyter.testing import FakeLLMServer, Reply  # noqa: E402
from tests.image_support import png_bytes, png_size  # noqa: E402

NOTEBOOK = "panel_images.ipynb"
CELL_LOAD, CELL_PANEL = range(2)

PASTE = """(box, data) => {
  const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], 'pasted.png', {type: 'image/png'}));
  box.focus();
  box.dispatchEvent(new ClipboardEvent('paste', {clipboardData: transfer, bubbles: true, cancelable: true}));
}"""
DROP = """(panel, data) => {
  const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], 'dropped.png', {type: 'image/png'}));
  for (const type of ['dragenter', 'dragover', 'drop']) {
    panel.dispatchEvent(new DragEvent(type, {dataTransfer: transfer, bubbles: true, cancelable: true}));
  }
}"""
"""What the browser does when the user drags a picture from the desktop and drops it on the panel."""

"""What the browser does when the user pastes a copied picture into the box (a screenshot, an image copied from a page)."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("browser_panel_images")
    root, home = tmp / "root", tmp / "home"
    root.mkdir()
    write_code_cells(root / NOTEBOOK, ["%load_ext agentik_jupyter", "%agent panel"])
    with (
        FakeLLMServer() as srv,
        lab_server(
            root, home, srv, artifact="jupyterlab_panel_images", AGENTIK_DB_PATH=str(tmp / "s.agentik.db")
        ) as server,
        browser_lab(srv, server, artifact="jupyterlab_panel_images", levels=("error",)) as lab,
    ):
        yield lab


def panel(lab: Lab) -> Any:
    return lab.output(CELL_PANEL)


def ask(lab: Lab, question: str) -> None:
    box = panel(lab).get_by_placeholder("Ask the agent")
    box.fill(question)
    box.press("Enter")


def test_1_a_picked_file_goes_with_the_question(lab: Lab, tmp_path: Any) -> None:
    page = lab.page
    page.goto(f"{lab.server.url}/lab/tree/{NOTEBOOK}?reset&token={lab.server.token}", timeout=30_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=45_000)
    for index in (CELL_LOAD, CELL_PANEL):
        run_cell(lab, index)
    button = panel(lab).locator(".agentik-attach")
    button.wait_for(timeout=60_000)
    picture = tmp_path / "chart.png"
    picture.write_bytes(png_bytes(1200, 600, "green"))
    with page.expect_file_chooser(timeout=30_000) as chooser:
        button.click()
    chooser.value.set_files(str(picture))
    attached = panel(lab).locator(".agentik-attachments img")
    lab.wait(lambda: attached.count() == 1, 60, "the picked image's thumbnail under the box")
    lab.shot("panel_images_picked.png", at=button)
    lab.srv.push(Reply.text("A green box. END-PICKED"))
    ask(lab, "What is in this picture?")
    lab.wait(lambda: "END-PICKED" in lab.text(panel(lab)), 90, "the answer")
    ((mime, data),) = lab.srv.requests[-1].user_images()
    assert mime == "image/png" and max(png_size(data)) == 768
    asked = panel(lab).locator(".agentik-question-images img")
    assert asked.count() == 1 and data in (asked.first.get_attribute("src") or "")
    lab.wait(lambda: attached.count() == 0, 10, "the box emptied of the sent image")
    lab.shot("panel_images_sent.png", at=asked.first)
    lab.no_widget_errors()


def test_2_a_pasted_image_goes_with_the_question(lab: Lab) -> None:
    box = panel(lab).get_by_placeholder("Ask the agent")
    box.evaluate(PASTE, base64.b64encode(png_bytes(300, 200, "orange")).decode())
    attached = panel(lab).locator(".agentik-attachments img")
    lab.wait(lambda: attached.count() == 1, 60, "the pasted image's thumbnail under the box")
    assert box.input_value() == ""  # the image was taken, not its file name typed
    lab.srv.push(Reply.text("An orange box. END-PASTED"))
    ask(lab, "And this one?")
    lab.wait(lambda: "END-PASTED" in lab.text(panel(lab)), 90, "the answer")
    ((mime, data),) = lab.srv.requests[-1].user_images()
    assert mime == "image/png" and png_size(data) == (300, 200)
    lab.shot("panel_images_pasted.png", at=panel(lab).locator(".agentik-question-images img").last)
    lab.no_widget_errors()


def test_3_a_dropped_image_goes_with_the_question(lab: Lab) -> None:
    history = panel(lab).locator(".agentik-panel-transcript")
    history.evaluate(DROP, base64.b64encode(png_bytes(200, 100, "purple")).decode())
    attached = panel(lab).locator(".agentik-attachments img")
    lab.wait(lambda: attached.count() == 1, 60, "the dropped image's thumbnail under the box")
    lab.srv.push(Reply.text("A purple box. END-DROPPED"))
    ask(lab, "And the dropped one?")
    lab.wait(lambda: "END-DROPPED" in lab.text(panel(lab)), 90, "the answer")
    ((mime, data),) = lab.srv.requests[-1].user_images()
    assert mime == "image/png" and png_size(data) == (200, 100)
    lab.no_widget_errors()
