"""Images the model sees (plots from run_code, figures in cell outputs), fitted to a pixel and byte budget.

A chart must never overflow the context: each image is downscaled so its longest
side is at most MAX_SIDE_PX and its encoding at most MAX_BYTES (PNG, or JPEG when
PNG is too big), with Pillow (which matplotlib brings). Without Pillow an image
already within the budget is sent as it is and a bigger one is left out. With
`LLM_VISION=0` (a model without vision) no image is sent: the tool's text carries a
description of the figure instead, read from the matplotlib figure object when there is one.
"""

from __future__ import annotations

import base64
import io
import os
import sys
from collections.abc import Mapping
from typing import Any

from agentik_jupyter.types import ImagePart

RASTER_TYPES = ("image/png", "image/jpeg", "image/gif")  # what fit_image reads and the cards show inline
MAX_SIDE_PX = 768
MAX_BYTES = 200_000
MAX_IMAGES_PER_RESULT = 4
FIGURE_DPI = 100
JPEG_QUALITIES = (80, 60, 40)
MIN_SIDE_PX = 64
VISION_ENV = "LLM_VISION"


def vision_enabled(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(VISION_ENV, "").strip().lower() not in {"0", "false", "no", "off"}


def _png_size(raw: bytes) -> tuple[int, int] | None:
    if raw[:8] != b"\x89PNG\r\n\x1a\n" or len(raw) < 24:
        return None
    return int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")


def fit_image(png_base64: str) -> ImagePart | None:
    """The image (base64 PNG, or JPEG/GIF with Pillow) within MAX_SIDE_PX and MAX_BYTES,
    or None when it cannot be made to fit."""
    try:
        raw = base64.b64decode("".join(png_base64.split()), validate=False)
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
    while True:  # PNG first (sharp lines), then JPEG at falling quality, then smaller: never left out for size
        encodings = [("PNG", "image/png", {"optimize": True})] + [
            ("JPEG", "image/jpeg", {"quality": q}) for q in JPEG_QUALITIES
        ]
        for fmt, mime, options in encodings:
            out = io.BytesIO()
            frame = picture.convert("RGB") if fmt == "JPEG" else picture
            frame.save(out, format=fmt, **options)
            if out.tell() <= MAX_BYTES:
                data = base64.b64encode(out.getvalue()).decode("ascii")
                return ImagePart(mime=mime, data=data, width=picture.width, height=picture.height)
        if max(picture.size) <= MIN_SIDE_PX:
            return None
        picture = picture.resize((max(1, picture.width * 3 // 4), max(1, picture.height * 3 // 4)))


def images_for_model(pngs: list[str], environ: Mapping[str, str] | None = None) -> list[ImagePart] | None:
    """The images a tool result sends to the model (None when vision is off or none fit)."""
    if not pngs or not vision_enabled(environ):
        return None
    fitted = [part for part in (fit_image(p) for p in pngs[:MAX_IMAGES_PER_RESULT]) if part is not None]
    return fitted or None


# ---- matplotlib figures: rendered for the model, or described when it has no vision ----


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_figure(value: Any) -> Any | None:
    """The matplotlib Figure a value shows: a Figure, an Axes or other artist, or a list/tuple
    starting with one (what `plt.plot(...)` or `plt.subplots()` return). Never imports matplotlib."""
    figure_module, artist_module = sys.modules.get("matplotlib.figure"), sys.modules.get("matplotlib.artist")
    if figure_module is None or artist_module is None:
        return None
    candidates = [value, value[0]] if isinstance(value, (list, tuple)) and value else [value]
    for item in candidates:
        if isinstance(item, figure_module.Figure):
            return item
        if isinstance(item, artist_module.Artist) and isinstance(item.figure, figure_module.Figure):
            return item.figure
    return None


def figure_png(fig: Any, dpi: int = FIGURE_DPI) -> str:
    """The figure as a base64 PNG (works on a figure pyplot already closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _describe_axes(ax: Any) -> str:
    """What a model without vision needs to know of one axes: titles, labels, limits, series."""
    parts = [
        f"{kind} {_clip(t, 60)!r}"
        for kind, t in (("title", ax.get_title()), ("x", ax.get_xlabel()), ("y", ax.get_ylabel()))
        if t
    ]
    try:
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        parts.append(f"x from {x0:.4g} to {x1:.4g}, y from {y0:.4g} to {y1:.4g}")
    except (TypeError, ValueError):
        pass
    names = [_clip(str(n), 40) for n in ax.get_legend_handles_labels()[1][:8]]
    if names:
        parts.append("series " + ", ".join(names))
    counts = [
        (len(ax.lines), "line(s)"),
        (len(ax.patches), "bar(s)/patch(es)"),
        (len(ax.collections), "scatter/collection(s)"),
    ]
    parts.append(", ".join(f"{n} {what}" for n, what in counts if n) or "nothing drawn")
    return "; ".join(parts)


def describe_figure(fig: Any, label: str, dpi: int = FIGURE_DPI) -> str:
    """One line a model without vision can reason about: size, then each axes' titles and series."""
    width, height = (int(v * dpi) for v in fig.get_size_inches())
    axes = [f"[{_describe_axes(ax)}]" for ax in fig.get_axes()[:6]]
    more = f" (+{len(fig.get_axes()) - 6} more axes)" if len(fig.get_axes()) > 6 else ""
    return f"{label} (~{width}×{height}px): " + (" ".join(axes) or "no axes") + more
