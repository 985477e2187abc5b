"""Images the model sees (plots from run_code), fitted to a pixel and byte budget.

A chart must never overflow the context: each image is downscaled so its longest
side is at most MAX_SIDE_PX and its encoding at most MAX_BYTES (PNG, or JPEG when
PNG is too big), with Pillow (which matplotlib brings). Without Pillow an image
already within the budget is sent as it is and a bigger one is left out. With
`LLM_VISION=0` (a model without vision) no image is sent: the tool's text carries a
description of the figure instead.
"""

from __future__ import annotations

import base64
import io
import os
from typing import Mapping

from .types import ImagePart

MAX_SIDE_PX = 768
MAX_BYTES = 200_000
MAX_IMAGES_PER_RESULT = 4
VISION_ENV = "LLM_VISION"


def vision_enabled(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(VISION_ENV, "").strip().lower() not in {"0", "false", "no", "off"}


def _png_size(raw: bytes) -> tuple[int, int] | None:
    if raw[:8] != b"\x89PNG\r\n\x1a\n" or len(raw) < 24:
        return None
    return int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")


def fit_image(png_base64: str) -> ImagePart | None:
    """The image within MAX_SIDE_PX and MAX_BYTES, or None when it cannot be made to fit."""
    try:
        raw = base64.b64decode(png_base64, validate=False)
    except (ValueError, TypeError):
        return None
    size = _png_size(raw)
    if size is not None and max(size) <= MAX_SIDE_PX and len(raw) <= MAX_BYTES:
        return ImagePart(mime="image/png", data=png_base64, width=size[0], height=size[1])
    try:
        from PIL import Image
    except ImportError:
        return None
    try:
        with Image.open(io.BytesIO(raw)) as img:
            img.load()
            picture = img.convert("RGBA") if img.mode not in ("RGB", "RGBA", "L") else img.copy()
    except Exception:
        return None
    picture.thumbnail((MAX_SIDE_PX, MAX_SIDE_PX))
    for fmt, mime, options in (("PNG", "image/png", {"optimize": True}), ("JPEG", "image/jpeg", {"quality": 80})):
        out = io.BytesIO()
        frame = picture.convert("RGB") if fmt == "JPEG" else picture
        frame.save(out, format=fmt, **options)
        if out.tell() <= MAX_BYTES:
            data = base64.b64encode(out.getvalue()).decode("ascii")
            return ImagePart(mime=mime, data=data, width=picture.width, height=picture.height)
    return None


def images_for_model(pngs: list[str], environ: Mapping[str, str] | None = None) -> list[ImagePart] | None:
    """The images a tool result sends to the model (None when vision is off or none fit)."""
    if not pngs or not vision_enabled(environ):
        return None
    fitted = [part for part in (fit_image(p) for p in pngs[:MAX_IMAGES_PER_RESULT]) if part is not None]
    return fitted or None
