"""Images in the chat panel, in real JupyterLab and headless Debian Chromium: a file picked with
the panel's Image button, and an image pasted into its box or dropped on the panel (our lab
extension), go with the next question: thumbnails under the box, then with the question, and image
parts in the request the fake provider receives (Notebook 7: test_panel_images_nb7.py). The Image
button counts the images the note under the box says go with the question, and the demo model
says it received them.

Screenshots in tests/artifacts/panel_images_*.png.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import Lab, browser_lab, lab_server, run_cell, write_code_cells

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from agentik_jupyter.testing import Reply  # noqa: E402
from agentik_jupyter.testing.demo import demo_responder  # noqa: E402
from tests.image_support import png_bytes, png_size  # noqa: E402
from tests.shared_servers import shared_llm  # noqa: E402

NOTEBOOK = "panel_images.ipynb"
CELL_LOAD, CELL_PANEL = range(2)
PRICES = '{"fake-model": {"input": 1.0, "output": 4.0}}'  # the fake model's price, so the panel can say the cost
SOURCES = [f"import os\nos.environ['AGENTIK_PRICES'] = {PRICES!r}\n%load_ext agentik_jupyter", "%agent panel"]

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
    write_code_cells(root / NOTEBOOK, SOURCES)
    with (
        shared_llm() as srv,
        lab_server(root, home, srv, artifact="jupyterlab_panel_images") as server,
        browser_lab(srv, server, artifact="jupyterlab_panel_images", levels=("error",)) as lab,
    ):
        yield lab


def panel(lab: Lab) -> Any:
    return lab.output(CELL_PANEL)


def latest_rewind(lab: Lab) -> Any:
    """Rewind beside Send (each turn above ends with its own Rewind too)."""
    return panel(lab).get_by_title(re.compile(r"^Take back the latest turn"))


def an_empty_panel_says_how_to_start(lab: Lab) -> None:
    """A new session's panel: its box says how to start, in its middle, and Rewind is not offered."""
    note = panel(lab).get_by_text("No messages yet.")
    lab.wait(lambda: note.is_visible(), 30, "the empty panel's note")
    box = panel(lab).locator(".agentik-panel-transcript").bounding_box()
    shown = note.bounding_box()
    assert (
        box
        and shown
        and box["y"] + box["height"] / 4 < shown["y"] + shown["height"] / 2 < box["y"] + box["height"] * 3 / 4
    )
    assert "Ask below" in lab.text(panel(lab).locator(".agentik-empty"))
    assert latest_rewind(lab).is_disabled()  # nothing to rewind
    lab.shot("panel_images_empty.png", at=panel(lab).locator(".agentik-panel-transcript"))


def says_the_cost(lab: Lab) -> None:
    """With the model's price known, the panel's session line says what the session cost."""
    line = panel(lab).locator(".agentik-totals")
    lab.wait(lambda: re.search(r"tokens in.* out · \$\d+\.\d{4} at list prices", lab.text(line)), 30, "the cost")


def counted(lab: Lab) -> tuple[int, str]:
    """What the Image button counts ("Image (n)") and what the note under the box says goes."""
    button = lab.text(panel(lab).locator(".agentik-attach"))
    found = re.search(r"Image \((\d+)\)", button)
    note = re.search(r"\d+ image\(s\)", lab.text(panel(lab).locator(".agentik-attachments")))
    return (int(found.group(1)) if found else -1), (note.group(0) if note else "")


def two_images_to_the_demo(lab: Lab) -> None:
    """Paste two pictures: the Image button says 2 as the note does; the demo model answers that it
    received 2 images, with their sizes; once sent, the button says 0."""
    lab.srv.set_responder(demo_responder)
    box = panel(lab).get_by_placeholder("Ask the agent")
    box.wait_for(timeout=60_000)
    attached = panel(lab).locator(".agentik-attachments img")
    for n, (width, height) in enumerate(((300, 200), (120, 80)), 1):
        box.evaluate(PASTE, base64.b64encode(png_bytes(width, height, "teal")).decode())
        lab.wait(lambda n=n: attached.count() == n, 60, f"{n} pasted thumbnail(s) under the box")  # type: ignore[misc]
    lab.wait(lambda: counted(lab) == (2, "2 image(s)"), 30, "the Image button and the note to agree")
    lab.shot("panel_images_two.png", at=panel(lab).locator(".agentik-attach"))
    ask(lab, "What is in these?")
    said = "I received 2 image(s) with your question: a 300×200 PNG"
    lab.wait(lambda: said in lab.text(panel(lab)), 90, "the demo's answer naming the images")
    assert "a 120×80 PNG" in lab.text(panel(lab))
    lab.wait(lambda: counted(lab)[0] == 0, 30, "the Image button to count none once they went")
    lab.shot("panel_images_demo.png", at=panel(lab).get_by_text(said).last)
    lab.srv.set_responder(None)


def ask(lab: Lab, question: str) -> None:
    box = panel(lab).get_by_placeholder("Ask the agent")
    box.fill(question)
    box.press("Enter")


def test_1_a_picked_file_goes_with_the_question(lab: Lab, tmp_path: Any) -> None:
    page = lab.page
    page.goto(lab.server.link(f"/lab/tree/{NOTEBOOK}", reset=True), timeout=30_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=45_000)
    for index in (CELL_LOAD, CELL_PANEL):
        run_cell(lab, index)
    button = panel(lab).locator(".agentik-attach")
    button.wait_for(timeout=60_000)
    an_empty_panel_says_how_to_start(lab)
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
    lab.wait(lambda: latest_rewind(lab).is_enabled(), 30, "Rewind offered once there is a turn")
    says_the_cost(lab)
    lab.shot("panel_images_sent.png", at=asked.first)
    lab.no_widget_errors()


def test_2_a_pasted_image_goes_with_the_question(lab: Lab) -> None:
    box = panel(lab).get_by_placeholder("Ask the agent")
    box.evaluate(PASTE, base64.b64encode(png_bytes(300, 200, "orange")).decode())
    attached = panel(lab).locator(".agentik-attachments img")
    lab.wait(lambda: attached.count() == 1, 60, "the pasted image's thumbnail under the box")
    assert box.input_value() == ""  # the image was taken, not its file name typed
    lab.wait(lambda: counted(lab) == (1, "1 image(s)"), 30, "the Image button and the note to agree")
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


def test_4_two_images_are_counted_alike_and_the_demo_says_it_got_them(lab: Lab) -> None:
    two_images_to_the_demo(lab)
    lab.no_widget_errors()
