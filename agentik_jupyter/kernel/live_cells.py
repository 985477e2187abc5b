"""What an agent cell has shown, kept in the kernel: a page opened later shows it and follows it.

A turn runs in the kernel, not in the page: closing the tab or losing the connection does not stop
it. But what the kernel displayed meanwhile went to a page that is gone, and a notebook not saved
since holds none of it. So for each `%%agent` cell's turn (and the `%agent panel` cell), the kernel
keeps the cell's outputs as a frontend's output area builds them from the display messages whose
parent is that cell's request: a display, an update by display id, a clear, a stream. A page that
opens the notebook asks for them over the control comm (`live_cells`, kernel/control.py), puts them
in their cells and applies the messages that follow (labextension/src/reattach.ts). The live view's
widgets live in the kernel, so ipywidgets draws them as they are now: the text so far (LiveText
keeps all of it), a waiting approval card whose buttons still reach its turn.

A record stays after its turn ends, marked ended, until its cell runs again (at most `KEPT` cells):
a page opened right after the end of a turn, on a notebook not saved since, shows its transcript.
Only display messages pass through here (a few per turn); a streamed answer's pieces are widget
messages and never come this way.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

KEPT = 20
"""Cells whose outputs are kept at most (the oldest ended ones go first)."""


@dataclass
class CellShown:
    """One cell's outputs as its page would hold them, and whether its turn still runs."""

    cell_id: str
    parent: str
    outputs: list[dict[str, Any]] = field(default_factory=list)
    """`{"output": <nbformat output>, "display_id": str | None}` each, in order (a stream's text as
    `{"stream": name, "pieces": [...]}` until a page asks)."""
    ended: bool = False
    clear_at_next: bool = False

    def end(self) -> None:
        self.ended = True

    def apply(self, kind: str, content: dict[str, Any]) -> None:
        """One message of this cell's request, as an output area applies it."""
        if kind == "clear_output":
            if content.get("wait"):
                self.clear_at_next = True
            else:
                self.outputs.clear()
            return
        if kind not in ("display_data", "stream"):
            return
        if self.clear_at_next:
            self.clear_at_next = False
            self.outputs.clear()
        if kind == "stream":  # (a stream after one of the same name joins it, as in an output area)
            name, text = content.get("name"), str(content.get("text", ""))
            last = self.outputs[-1] if self.outputs else None
            if last is not None and last.get("stream") == name:
                last["pieces"].append(text)  # (joined when a page asks: a long stream costs no copies)
            else:
                self.outputs.append({"stream": name, "pieces": [text], "display_id": None})
            return
        self.outputs.append({"output": _display_output(content), "display_id": _display_id(content)})

    def update(self, display_id: str, content: dict[str, Any]) -> None:
        for shown in self.outputs:
            if shown["display_id"] == display_id:
                shown["output"] = _display_output(content)

    def answer(self) -> dict[str, Any]:
        """What the control comm sends a page."""
        return {
            "cell_id": self.cell_id,
            "parent": self.parent,
            "ended": self.ended,
            "outputs": [_answered(shown) for shown in self.outputs],
        }


def _answered(shown: dict[str, Any]) -> dict[str, Any]:
    if "pieces" in shown:
        output = {"output_type": "stream", "name": shown["stream"], "text": "".join(shown["pieces"])}
        return {"output": output, "display_id": None}
    return copy.deepcopy(shown)


def _display_output(content: dict[str, Any]) -> dict[str, Any]:
    return {"output_type": "display_data", "data": content.get("data", {}), "metadata": content.get("metadata", {})}


def _display_id(content: dict[str, Any]) -> str | None:
    display_id = (content.get("transient") or {}).get("display_id")
    return display_id if isinstance(display_id, str) else None


class LiveCells:
    """The kept cells of one kernel, fed by a hook on its display publisher."""

    def __init__(self) -> None:
        self.cells: dict[str, CellShown] = {}  # by the parent request's message id

    def follow(self, cell_id: str, parent: str) -> CellShown:
        """Keep what the request `parent` shows in the cell `cell_id` from now on (its earlier
        record goes: the cell runs again)."""
        self.forget(cell_id)
        shown = self.cells[parent] = CellShown(cell_id, parent)
        while len(self.cells) > KEPT:
            old = next((k for k, c in self.cells.items() if c.ended), next(iter(self.cells)))
            del self.cells[old]
        return shown

    def forget(self, cell_id: str) -> None:
        for parent in [p for p, c in self.cells.items() if c.cell_id == cell_id]:
            del self.cells[parent]

    def hook(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The display publisher's hook: note the message, send it on unchanged."""
        kind = msg.get("msg_type") or msg.get("header", {}).get("msg_type", "")
        content = msg.get("content") or {}
        if kind == "update_display_data":  # (by display id, whichever cell's context sent it)
            display_id = _display_id(content)
            if display_id is not None:
                for shown in self.cells.values():
                    shown.update(display_id, content)
            return msg
        mirror = self.cells.get((msg.get("parent_header") or {}).get("msg_id", ""))
        if mirror is not None:
            mirror.apply(kind, content)
        return msg

    def before_cell(self, info: Any) -> None:
        """A cell that runs again starts with no outputs (its new turn, if any, follows it again)."""
        cell_id = getattr(info, "cell_id", None)
        if cell_id:
            self.forget(cell_id)

    def answer(self) -> list[dict[str, Any]]:
        return [shown.answer() for shown in self.cells.values()]


_kept: dict[int, LiveCells] = {}


def install(shell: InteractiveShell) -> LiveCells | None:
    """Hook the kernel's display publisher and pre_run_cell once (`%load_ext`, on the main thread:
    ipykernel keeps hooks per thread, and turns display from the main loop)."""
    live = _kept.get(id(shell))
    publisher = getattr(shell, "display_pub", None)
    if live is not None or not hasattr(publisher, "register_hook"):
        return live
    live = _kept[id(shell)] = LiveCells()
    publisher.register_hook(live.hook)  # type: ignore[union-attr]
    shell.events.register("pre_run_cell", live.before_cell)
    return live


def uninstall(shell: InteractiveShell) -> None:
    live = _kept.pop(id(shell), None)
    if live is not None:
        shell.display_pub.unregister_hook(live.hook)  # type: ignore[attr-defined]
        shell.events.unregister("pre_run_cell", live.before_cell)


def follow_cell(shell: InteractiveShell, cell_id: str | None) -> CellShown | None:
    """Keep what the running cell `cell_id` shows (None: no cell id, or no kernel to keep it for)."""
    live = _kept.get(id(shell))
    parent = (getattr(getattr(shell, "display_pub", None), "parent_header", None) or {}).get("msg_id")
    if live is None or not cell_id or not isinstance(parent, str):
        return None
    return live.follow(cell_id, parent)


def shown_cells(shell: InteractiveShell) -> list[dict[str, Any]]:
    """Every kept cell's outputs, for a page that opens the notebook."""
    live = _kept.get(id(shell))
    return live.answer() if live is not None else []
