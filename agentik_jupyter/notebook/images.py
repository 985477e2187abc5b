"""Images in cell outputs, for the model when it asks for them.

`read_notebook` summarises an image as "image/png 640×480"; with `images=True` (the default
when it reads one cell in full) the images of the cells read go to the model as image content,
through tools/images.py (as `get_cell_history(images=True)` sends the figures its `Out[n]` show).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentik_jupyter.notebook.document import Cell, _joined
from agentik_jupyter.tools.images import FoundImage
from agentik_jupyter.tools.vision import RASTER_TYPES

NOTE_CHARS = 200


def _note(data: Mapping[str, Any]) -> str:
    text = _joined(data.get("text/plain")).strip()
    return text if len(text) <= NOTE_CHARS else text[:NOTE_CHARS] + "…"


def output_images(cells: Iterable[Cell]) -> tuple[list[FoundImage], int]:
    """The raster images in the cells' outputs, in order, and how many vector (SVG) images were skipped."""
    found: list[FoundImage] = []
    vector = 0
    for cell in cells:
        for output in cell.outputs:
            data = output.get("data") if isinstance(output, dict) else None
            if not isinstance(data, dict):
                continue
            mime = next((m for m in RASTER_TYPES if m in data), None)
            if mime is not None:
                found.append(FoundImage(f"cell {cell.id}", mime, _joined(data[mime]), _note(data)))
            elif "image/svg+xml" in data:
                vector += 1
    return found, vector
