"""The panel's image attach control: files picked in a FileUpload, fitted to the image budget.

Plain ipywidgets (no lab extension needed): a FileUpload button that accepts PNG, JPEG, GIF and
WebP. Each file is fitted as tools/vision.py fits plots (longest side, bytes), so a question's
image costs what a plot costs; one that cannot be read or fitted is named, not sent. Fitting a
camera photo takes about a second, so it runs in a worker thread (Pillow releases the GIL) while the
kernel's loop goes on streaming; a question sent meanwhile waits for it (`reading`). The chosen
images wait under the box, as thumbnails, until Send takes them (`take`) or Clear drops them.
With the lab extension an image pasted or dropped into the panel comes in through the same
button (labextension/src/paste_images.ts).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from collections.abc import Iterable
from typing import Any

from ipywidgets import HTML, Button, FileUpload, HBox, Layout

from agentik_jupyter.core.mainloop import main_thread_callback
from agentik_jupyter.core.question_images import MAX_QUESTION_IMAGES
from agentik_jupyter.tools.vision import fit_image
from agentik_jupyter.types import ImagePart
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.shared import PLAIN_CLASSES

ACCEPT = "image/png,image/jpeg,image/gif,image/webp"
MAX_FILE_BYTES = 20_000_000
"""A picked file larger than this is refused before it is decoded (a photo is a few MB)."""
THUMB_CSS = "max-height:4em;max-width:8em;margin:2px 4px 2px 0;border-radius:3px;vertical-align:middle"


def thumbnails_html(images: Iterable[ImagePart], css: str = THUMB_CSS) -> str:
    """The images as small inline pictures (data URLs of the fitted images)."""
    return "".join(f'<img src="data:{i.mime};base64,{i.data}" style="{css}" alt="attached image"/>' for i in images)


def fitted(files: Iterable[Any]) -> tuple[list[ImagePart], list[str]]:
    """The picked files (FileUpload's value) as fitted images, and a line for each one refused."""
    images: list[ImagePart] = []
    refused: list[str] = []
    for item in files:
        name = str(_get(item, "name") or "image")
        kind = str(_get(item, "type") or "")
        content = _get(item, "content")
        raw = bytes(content) if content is not None else b""
        if kind and kind not in ACCEPT.split(","):
            refused.append(f"{name}: not an image this panel sends ({kind}); use PNG, JPEG, GIF or WebP")
        elif not raw or len(raw) > MAX_FILE_BYTES:
            refused.append(f"{name}: empty or larger than {MAX_FILE_BYTES // 1_000_000} MB")
        else:
            part = fit_image(base64.b64encode(raw).decode("ascii"))
            if part is None:
                refused.append(f"{name}: could not be read as an image or fitted to the image budget")
            else:
                images.append(part)
    return images, refused


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def stand_ins(images: list[ImagePart]) -> tuple[dict[str, Any], ...]:
    """FileUpload's label always counts the files in its value ("Image (2)"): one entry per attached
    image, without its bytes (the kernel holds the fitted image), so the button agrees with the note."""
    when = dt.datetime.fromtimestamp(0, tz=dt.UTC)
    return tuple(
        {"name": f"image {i}", "type": part.mime, "size": 0, "content": memoryview(b""), "last_modified": when}
        for i, part in enumerate(images, 1)
    )


def _copied(item: Any) -> dict[str, Any]:
    """A picked file with its bytes copied out of the widget's buffer (read later, in a thread)."""
    content = _get(item, "content")
    return {"name": _get(item, "name"), "type": _get(item, "type"), "content": bytes(content or b"")}


class ImageAttach:
    """The attach button, the chosen images' thumbnails and a Clear button; `take()` hands them to a turn."""

    def __init__(self) -> None:
        self.images: list[ImagePart] = []
        self.reading: asyncio.Task[None] | None = None  # picked files being fitted
        self._generation = 0  # Clear or Send while reading: what was being read is dropped
        self._counted: tuple[dict[str, Any], ...] = ()  # the upload's value as we set it (`stand_ins`)
        self.upload = FileUpload(
            accept=ACCEPT,
            multiple=True,
            description="Image",
            icon="image",
            tooltip="Attach images to the next question (PNG, JPEG, GIF, WebP)",
            _dom_classes=PLAIN_CLASSES,
        )
        self.upload.add_class("agentik-attach")  # the lab extension hands pasted or dropped images to it
        self.upload.observe(main_thread_callback(self._on_pick), names="value")
        self.shown = HTML(value="")
        self.clear_button = Button(
            description="Clear",
            icon="times",
            tooltip="Remove the attached images",
            layout=Layout(width="auto"),
            _dom_classes=PLAIN_CLASSES,
        )
        self.clear_button.on_click(main_thread_callback(lambda _: self.clear()))
        self.widget = HBox(children=(self.shown, self.clear_button), layout=Layout(display="none"))
        self.widget.add_class("agentik-attachments")

    @property
    def busy(self) -> bool:
        """Picked files are still being fitted."""
        return self.reading is not None and not self.reading.done()

    def _on_pick(self, change: dict[str, Any]) -> None:
        files = change.get("new") or ()
        if not files or tuple(files) == self._counted:  # (our own count)
            return
        picked = [_copied(item) for item in files]
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a script): fit here
            self._add(*fitted(picked))
            return
        self.shown.value = "<em>Reading the image…</em>"
        self.widget.layout.display = ""
        self.reading = loop.create_task(self._read(picked, self.reading, self._generation))

    async def _read(self, picked: list[dict[str, Any]], before: asyncio.Task[None] | None, generation: int) -> None:
        if before is not None:
            await asyncio.wait([before])  # picks are added in the order they were made
        images, refused = await asyncio.to_thread(fitted, picked)
        if generation == self._generation:
            self._add(images, refused)

    def _add(self, images: list[ImagePart], refused: list[str]) -> None:
        self.images = [*self.images, *images]
        notes = refused[:]
        if len(self.images) > MAX_QUESTION_IMAGES:
            notes.append(
                f"{len(self.images) - MAX_QUESTION_IMAGES} image(s) left out: a question carries at most "
                f"{MAX_QUESTION_IMAGES}"
            )
            self.images = self.images[:MAX_QUESTION_IMAGES]
        self._show(notes)

    def _show(self, notes: list[str] | None = None) -> None:
        note = "".join(f'<div class="agentik-notice"><em>{escape(n)}</em></div>' for n in notes or [])
        count = f"<em>{len(self.images)} image(s) go with the next question</em> " if self.images else ""
        self.shown.value = count + thumbnails_html(self.images) + note
        self._counted = stand_ins(self.images)
        self.upload.value = self._counted
        self.clear_button.layout.display = "" if self.images else "none"
        self.widget.layout.display = "" if self.images or notes else "none"

    def take(self) -> list[ImagePart]:
        """The chosen images, for the turn being sent; the control is emptied."""
        self._generation += 1
        images, self.images = self.images, []
        self._show()
        return images

    def clear(self) -> None:
        self.take()
