"""Pictures for the image tests: real PNGs made with Pillow, bigger than the image budget when asked."""

from __future__ import annotations

import base64
import io

from PIL import Image, ImageDraw


def png_bytes(width: int = 120, height: int = 80, colour: str = "red") -> bytes:
    """A PNG with a coloured box on white (a real picture, so fitting it is real work)."""
    picture = Image.new("RGB", (width, height), "white")
    ImageDraw.Draw(picture).rectangle((width // 4, height // 4, 3 * width // 4, 3 * height // 4), fill=colour)
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


def png_base64(width: int = 120, height: int = 80, colour: str = "red") -> str:
    return base64.b64encode(png_bytes(width, height, colour)).decode("ascii")


def png_size(data: str) -> tuple[int, int]:
    """Width and height of a base64 image."""
    with Image.open(io.BytesIO(base64.b64decode(data))) as picture:
        return picture.size
