"""The panel's Image button: picked files are fitted (in a worker thread), shown as thumbnails and
sent with the next question (only with it; a question sent while they are read waits for them); a
file that is no image is named, not sent; Clear drops them."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

import pytest

from agentik_jupyter.core.session import Session
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.tools.vision import MAX_SIDE_PX
from agentik_jupyter.widgets import ChatPanel
from tests.image_support import png_bytes, png_size
from tests.widgets.test_views import html_of


def picked(name: str, data: bytes, mime: str) -> dict[str, Any]:
    """One file as ipywidgets' FileUpload holds it after the browser sent it."""
    return {
        "name": name,
        "type": mime,
        "size": len(data),
        "content": memoryview(data),
        "last_modified": datetime.fromtimestamp(time.time()),
    }


async def test_picked_images_go_with_the_next_question_only() -> None:
    transport = ScriptedTransport([Step.say("A red box."), Step.say("Plain text.")])
    session = Session(transport, ToolRegistry(), temporary=True)
    panel = ChatPanel(session)
    panel.attach.upload.value = (
        picked("big.png", png_bytes(2000, 1000), "image/png"),
        picked("notes.txt", b"hello", "text/plain"),
    )
    assert panel.attach.busy and "Reading the image" in panel.attach.shown.value
    await panel.attach.reading
    # the button counts what goes with the question ("Image (1)" beside "1 image(s)"), holding no bytes
    (counted,) = panel.attach.upload.value
    assert len(panel.attach.images) == 1 and bytes(counted["content"]) == b""
    shown = panel.attach.shown.value
    assert "1 image(s) go with the next question" in shown and '<img src="data:image/png;base64,' in shown
    assert "notes.txt: not an image this panel sends (text/plain)" in shown
    image = panel.attach.images[0]
    assert max(png_size(image.data)) == MAX_SIDE_PX

    await panel.send("")  # an image alone is a question too
    first = transport.requests[0].messages[-1]
    assert first.images == [image]
    assert panel.attach.images == [] and panel.attach.widget.layout.display == "none"
    assert panel.attach.upload.value == ()  # "Image (0)" once they went
    assert image.data in html_of(panel.history)  # the question's thumbnail

    await panel.send("And this?")
    assert not transport.requests[1].messages[-1].images  # only the question it was attached to


async def test_clear_drops_the_picked_images() -> None:
    panel = ChatPanel(Session(ScriptedTransport([]), ToolRegistry(), temporary=True))
    for _ in range(2):  # the same file picked twice: two images, and the button says so
        panel.attach.upload.value = (picked("a.png", png_bytes(), "image/png"),)
        await panel.attach.reading
    assert len(panel.attach.images) == len(panel.attach.upload.value) == 2
    assert "2 image(s) go with the next question" in panel.attach.shown.value
    assert panel.attach.clear_button.layout.display == ""
    panel.attach.clear_button.click()
    assert panel.attach.images == [] and panel.attach.shown.value == "" and panel.attach.upload.value == ()


async def test_without_vision_the_panel_says_the_image_was_not_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_VISION", "0")
    transport = ScriptedTransport([Step.say("I only read text.")])
    panel = ChatPanel(Session(transport, ToolRegistry(), temporary=True))
    panel.attach.upload.value = (picked("a.png", png_bytes(), "image/png"),)
    await panel.attach.reading
    await panel.send("What is this?")
    assert not transport.requests[0].messages[-1].images
    text = html_of(panel.history)
    assert "1 image(s) not sent: this model has no vision (LLM_VISION=0)" in text and "I only read text." in text


async def test_a_question_sent_while_the_image_is_read_waits_for_it() -> None:
    transport = ScriptedTransport([Step.say("A photo.")])
    session = Session(transport, ToolRegistry(), temporary=True)
    panel = ChatPanel(session)
    panel.attach.upload.value = (picked("photo.png", png_bytes(3000, 2000), "image/png"),)
    panel.input.value = "What is in this photo?"
    assert panel.attach.busy and panel.send() is None  # Enter pressed at once
    assert panel.input.value == ""
    await panel.attach.reading
    await asyncio.sleep(0)  # the send the reading held
    assert panel.last_task is not None
    await panel.last_task
    (asked,) = [m for m in transport.requests[0].messages if m.role == "user"]
    assert asked.content == "What is in this photo?" and asked.images and len(asked.images) == 1
