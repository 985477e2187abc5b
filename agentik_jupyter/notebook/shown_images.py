"""The images each cell showed, by execution count, as this kernel published them.

`@out[5]` in a question sends what cell [5] showed. A figure drawn by `plt.show()` or the inline
backend is a `display_data` message, not a value in `Out`, and the saved `.ipynb` may not have it
yet (nbclient, VS Code, a notebook not saved since); the kernel saw it go out. So a hook on the
shell's display publisher (installed at `%load_ext`, cheap: standard library only) keeps the raster
images of the last KEEP_CELLS cells, at most PER_CELL each and TOTAL_CHARS in all, as published (the
same strings the kernel sent: no copy; fitted only when mentioned).
A cell's images are gathered from `pre_run_cell` to `post_run_cell` (the inline backend shows its
figures in `post_execute`, between the two) and filed under the count `post_run_cell` reports.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

RASTERS = ("image/png", "image/jpeg", "image/gif", "image/webp")
KEEP_CELLS = 20
PER_CELL = 4
MAX_CHARS = 10_000_000  # base64 characters; a bigger image is left out rather than held in memory
TOTAL_CHARS = 40_000_000  # all cells' together: the oldest cells go first


class ShownImages:
    """Raster images by execution count: (mime, base64 data, text/plain) in the order shown."""

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.cells: OrderedDict[int, list[tuple[str, str, str]]] = OrderedDict()
        self.running: list[tuple[str, str, str]] | None = None  # the running cell's, until it ends

    def begin(self, *_: Any) -> None:
        self.running = []

    def end(self, result: Any) -> None:
        shown, self.running = self.running, None
        count = getattr(result, "execution_count", None)
        if not shown or not isinstance(count, int):
            return
        self.cells[count] = shown
        self.cells.move_to_end(count)
        while len(self.cells) > KEEP_CELLS or (len(self.cells) > 1 and self._chars() > TOTAL_CHARS):
            self.cells.popitem(last=False)

    def _chars(self) -> int:
        return sum(len(data) for shown in self.cells.values() for _, data, _ in shown)

    def hook(self, msg: Any) -> Any:
        """The display publisher's hook: note the message's image, hand the message on unchanged."""
        try:
            self._note(msg)
        except Exception:  # never in the way of a cell's output
            pass
        return msg

    def _note(self, msg: Any) -> None:
        if not isinstance(msg, dict) or msg.get("msg_type") != "display_data":
            return
        data = (msg.get("content") or {}).get("data") or {}
        mime = next((m for m in RASTERS if isinstance(data.get(m), str)), None)
        shown = self.running
        if mime is None or shown is None or len(shown) >= PER_CELL or len(data[mime]) > MAX_CHARS:
            return
        plain = data.get("text/plain")
        shown.append((mime, data[mime], plain if isinstance(plain, str) else ""))

    def of(self, count: int) -> list[tuple[str, str, str]]:
        return list(self.cells.get(count, ()))


_recorders: dict[int, ShownImages] = {}


def install(shell: InteractiveShell) -> ShownImages | None:
    """Hook the shell's display publisher once (ipykernel's has hooks; plain IPython's has none)."""
    found = _recorders.get(id(shell))
    if found is not None:
        return found
    register = getattr(shell.display_pub, "register_hook", None)
    if register is None:
        return None
    recorder = _recorders[id(shell)] = ShownImages(shell)
    register(recorder.hook)
    shell.events.register("pre_run_cell", recorder.begin)
    shell.events.register("post_run_cell", recorder.end)
    return recorder


def uninstall(shell: InteractiveShell) -> None:
    recorder = _recorders.pop(id(shell), None)
    unregister = getattr(shell.display_pub, "unregister_hook", None)
    if recorder is None:
        return
    for event, callback in (("pre_run_cell", recorder.begin), ("post_run_cell", recorder.end)):
        try:
            shell.events.unregister(event, callback)
        except ValueError:
            pass
    if unregister is not None:
        try:
            unregister(recorder.hook)
        except Exception:  # registered on another thread, or the publisher was replaced
            pass


def shown_images(shell: InteractiveShell, count: int) -> list[tuple[str, str, str]]:
    """What cell [count] showed, as recorded since `%load_ext` (empty when not recorded)."""
    recorder = _recorders.get(id(shell))
    return recorder.of(count) if recorder is not None else []


def image_cells(shell: InteractiveShell) -> list[tuple[int, int]]:
    """(execution count, how many images) of the cells that showed images, newest first."""
    recorder = _recorders.get(id(shell))
    return [(count, len(shown)) for count, shown in reversed(recorder.cells.items())] if recorder else []
