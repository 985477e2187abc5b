"""What the demo model can tell about the images sent with a question: their kind, pixels and bytes.

The demo is no vision model, but a newcomer who pastes a picture into the panel must see that it
arrived: the demo names each image it received from the request's image parts (both wire formats),
reading the size from the image's header (PNG, GIF, JPEG; no Pillow needed).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

TOOL_IMAGES = re.compile(r"^The \d+ image\(s\) the tool results above produced:")
"""How the OpenAI-compatible adapter introduces tool results' images (a user message, not a question)."""
_DATA_URL = re.compile(r"^data:([\w/+.-]+);base64,(.*)$", re.S)
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # JPEG start-of-frame markers


@dataclass(frozen=True)
class SeenImage:
    """One image of a question, as the demo reads it."""

    mime: str
    size: int  # bytes
    width: int | None = None
    height: int | None = None

    def describe(self) -> str:
        kind = self.mime.removeprefix("image/").upper()
        pixels = f"{self.width}×{self.height} " if self.width and self.height else ""
        return f"a {pixels}{kind} of {_bytes(self.size)}"


def _bytes(n: int) -> str:
    return f"{n:,} bytes" if n < 10_000 else f"{n / 1000:,.0f} KB"


def dimensions(raw: bytes) -> tuple[int, int] | None:
    """An image's width and height from its header (PNG, GIF, JPEG); None for another kind."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n") and len(raw) >= 24:
        return int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        return int.from_bytes(raw[6:8], "little"), int.from_bytes(raw[8:10], "little")
    if raw.startswith(b"\xff\xd8"):
        i = 2
        while i + 9 < len(raw) and raw[i] == 0xFF:
            marker, length = raw[i + 1], int.from_bytes(raw[i + 2 : i + 4], "big")
            if marker in _SOF:
                return int.from_bytes(raw[i + 7 : i + 9], "big"), int.from_bytes(raw[i + 5 : i + 7], "big")
            i += 2 + length
    return None


def seen_image(block: dict[str, Any]) -> SeenImage | None:
    """The image of an image part (`image_url` with a data URL, or Anthropic's base64 `image`)."""
    if block.get("type") == "image_url":
        url = (block.get("image_url") or {}).get("url", "")
        found = _DATA_URL.match(url if isinstance(url, str) else "")
        if found is None:
            return None
        mime, data = found.group(1), found.group(2)
    else:
        source = block.get("source") or {}
        mime, data = str(source.get("media_type") or "image"), str(source.get("data") or "")
    try:
        raw = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None
    size = dimensions(raw)
    return SeenImage(mime, len(raw), *(size or (None, None)))


def received(images: list[SeenImage]) -> str:
    """The demo's acknowledgement: how many images came, and what it can tell about each."""
    each = "; ".join(image.describe() for image in images)
    return (
        f"I received {len(images)} image(s) with your question: {each}. I am the offline demo model, "
        "not a vision model, so I cannot say what they show; a model with vision answers from them."
    )
