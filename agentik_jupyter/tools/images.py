"""Images a tool found (cell outputs, Out[n] figures), sent with the tool's text within the budget.

They take the same path as run_code's plots (tools/vision.py): fitted to the pixel and byte budget, at
most MAX_IMAGES_PER_RESULT per result, and with `LLM_VISION=0` a text line instead (the figure's
description when the kernel still has the figure object). The tool card shows the first one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentik_jupyter.tools.vision import MAX_IMAGES_PER_RESULT, fit_image, vision_enabled
from agentik_jupyter.types import ImagePart, ToolOutput


@dataclass
class FoundImage:
    """One image and where it came from; `note` is what a model without vision gets instead."""

    where: str
    mime: str
    data: str
    note: str = ""


def with_images(
    text: str, found: list[FoundImage], vector: int = 0, environ: Mapping[str, str] | None = None, more_hint: str = ""
) -> ToolOutput:
    """`text` plus a line per image saying whether it was sent; the fitted images for the model and the card."""
    if not found and not vector:
        return ToolOutput(text=text, display={"text/plain": text})
    vision = vision_enabled(environ)
    shown = found[:MAX_IMAGES_PER_RESULT]
    sent: list[ImagePart] = []
    card: ImagePart | None = None
    lines = []
    for i, image in enumerate(shown, 1):
        part = fit_image(image.data)
        card = card or part
        size = f" {part.width}×{part.height}" if part is not None and part.width else ""
        note = f": {image.note}" if image.note else ""
        if not vision:
            lines.append(f"[{i}] {image.where}, {image.mime}: not sent (LLM_VISION=0, no vision){note}")
        elif part is None:
            lines.append(f"[{i}] {image.where}, {image.mime}: could not be fitted to the image budget, not sent")
        else:
            sent.append(part)
            lines.append(f"[{i}] {image.where}: sent as image {len(sent)} ({part.mime}{size}){note}")
    if len(found) > len(shown):
        lines.append(
            f"{len(found) - len(shown)} more image(s) not sent (at most {MAX_IMAGES_PER_RESULT} per result)"
            + (f": {more_hint}" if more_hint else "")
        )
    if vector:
        lines.append(f"{vector} vector image(s) (image/svg+xml) not sent")
    full = text + "\n\nImages in these outputs:\n" + "\n".join(lines)
    display: dict[str, Any] = {"text/plain": full}
    if card is not None:
        display[card.mime] = card.data
    return ToolOutput(text=full, display=display, images=sent or None)
