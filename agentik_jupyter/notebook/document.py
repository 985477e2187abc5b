"""The notebook as the agent reads it: cells in order, each with a bounded view of its outputs.

A notebook can hold megabytes of outputs (images, long logs, HTML tables); the
model needs to know *what* a cell produced, not its bytes. So outputs are
summarised: text clipped, images as "image/png 640×480", errors as `ename: evalue`.
The source may be the live document (sent by the lab extension) or the saved
`.ipynb` on disk, which can be stale; `NotebookDoc.origin` says which.
"""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentik_jupyter.errors import NotebookReadError

OUTPUT_TEXT_CHARS = 300
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")
_TEXT_TYPES = ("text/plain", "text/markdown")

Origin = Literal["live", "saved"]


@dataclass
class Cell:
    """One cell: what the model may cite (`id`) and what it needs to know about it."""

    id: str
    cell_type: str
    source: str
    execution_count: int | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)

    def output_summaries(self, text_chars: int = OUTPUT_TEXT_CHARS) -> list[str]:
        return [summarize_output(o, text_chars) for o in self.outputs]


@dataclass
class NotebookDoc:
    path: str | None
    origin: Origin
    cells: list[Cell]

    def find(self, cell_id: str) -> tuple[int, Cell] | None:
        """The cell with this id (or a unique id prefix), with its index."""
        exact = [(i, c) for i, c in enumerate(self.cells) if c.id == cell_id]
        if exact:
            return exact[0]
        prefixed = [(i, c) for i, c in enumerate(self.cells) if cell_id and c.id.startswith(cell_id)]
        return prefixed[0] if len(prefixed) == 1 else None


def _joined(value: Any) -> str:
    """nbformat stores multi-line strings as lists of lines."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more chars]"


def image_size(mime: str, data: str) -> tuple[int, int] | None:
    """Width and height from a base64 PNG/GIF/JPEG header, without decoding the whole image."""
    try:
        head = base64.b64decode(data[:4096] + "=" * (-len(data[:4096]) % 4), validate=False)
    except (ValueError, TypeError):
        return None
    if mime == "image/png" and head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        return struct.unpack(">II", head[16:24])
    if mime == "image/gif" and head[:4] == b"GIF8" and len(head) >= 10:
        return struct.unpack("<HH", head[6:10])
    if mime == "image/jpeg":
        return _jpeg_size(head)
    return None


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(head):
        if head[i] != 0xFF:
            return None
        marker, length = head[i + 1], struct.unpack(">H", head[i + 2 : i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", head[i + 5 : i + 9])
            return w, h
        i += 2 + length
    return None


def summarize_output(output: dict[str, Any], text_chars: int = OUTPUT_TEXT_CHARS) -> str:
    """One output as a short line: stream text, a result's text, an image's size, an error's name."""
    kind = output.get("output_type")
    if kind == "stream":
        return f"{output.get('name', 'stdout')}: {_clip(_joined(output.get('text')), text_chars)}"
    if kind == "error":
        return f"error {output.get('ename', '?')}: {_clip(str(output.get('evalue', '')), text_chars)}"
    data = output.get("data") or {}
    parts: list[str] = []
    for mime in IMAGE_TYPES:
        if mime in data:
            size = image_size(mime, _joined(data[mime]))
            parts.append(f"{mime} {size[0]}×{size[1]}" if size else mime)
    if "application/vnd.agentik.transcript+json" in data:
        parts.append("an agent transcript")
    for mime in _TEXT_TYPES:
        if mime in data:
            parts.append(_clip(_joined(data[mime]), text_chars))
            break
    else:
        if "text/html" in data:
            parts.append(f"text/html ({len(_joined(data['text/html']))} chars)")
    label = "result" if kind == "execute_result" else "display"
    return f"{label}: " + ("; ".join(parts) if parts else ", ".join(sorted(data)) or "empty")


def cells_from_json(nb: dict[str, Any]) -> list[Cell]:
    """Cells of an nbformat-4 document (a saved file or the lab extension's live copy)."""
    cells = []
    for i, raw in enumerate(nb.get("cells") or []):
        cells.append(
            Cell(
                id=str(raw.get("id") or f"cell-{i}"),
                cell_type=str(raw.get("cell_type", "code")),
                source=_joined(raw.get("source")),
                execution_count=raw.get("execution_count"),
                outputs=list(raw.get("outputs") or []),
            )
        )
    return cells


def load_saved(path: Path) -> NotebookDoc:
    """The notebook as last saved on disk (read-only; the agent never writes it)."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotebookReadError(f"the notebook {path} has not been saved yet") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotebookReadError(f"could not read {path}: {exc}") from None
    if not isinstance(nb, dict):
        raise NotebookReadError(f"{path} is not a notebook (no JSON object)")
    return NotebookDoc(path=str(path), origin="saved", cells=cells_from_json(nb))
