"""What else a running cell printed or displayed while its answer streamed, to show again after a clear.

A `--wait` cell without our lab extension streams its answer as the cell's own text output
(widgets/plain_stream.py), and a stream output can only go with the whole cell: at the end the
cell is cleared and shows the view's place and the transcript. Whatever else reached the cell in
the meantime must not go with it: a notice (an MCP server that failed to start, instructions not
trusted), a user tool's print or plot. `CellOutputs` records, from the cell's start (kernel/
turns.py), what this cell's context writes to `sys.stdout` and `sys.stderr` and displays from the
kernel's main thread, and `replay()` sends it again, in order, after the clear. Output that
bypasses these (a C library writing to the process's file descriptors, a display from another
thread) is not seen, and goes with the clear.
"""

from __future__ import annotations

import sys
from typing import Any

from agentik_jupyter.widgets.publish import kernel_publisher, publish_stream


class _Recording:
    """Stands in for `sys.stdout` / `sys.stderr`: writes go on as before; those of the watched
    cell are noted."""

    def __init__(self, stream: Any, name: str, outputs: CellOutputs) -> None:
        self._stream = stream
        self._name = name
        self._outputs = outputs

    def write(self, text: str) -> int:
        written: int = self._stream.write(text)
        if text and self._outputs.is_mine(getattr(self._stream, "parent_header", None)):
            self._outputs.note_stream(self._name, text)
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class CellOutputs:
    """Records the running cell's other outputs between `start()` and `stop()`."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any, Any]] = []
        self._msg_id: str | None = None
        self._publisher: Any = None
        self._streams: dict[str, _Recording] = {}

    def is_mine(self, parent: Any) -> bool:
        """Whether a message with this parent goes to the watched cell."""
        return self._msg_id is not None and isinstance(parent, dict) and parent.get("msg_id") == self._msg_id

    def note_stream(self, name: str, text: str) -> None:
        """A write to `name`; joined to the write before it when that went to the same stream
        (as the frontend joins them: one output, and one message to send again)."""
        if self.items and self.items[-1][:2] == ("stream", name):
            self.items[-1] = ("stream", name, self.items[-1][2] + text)
        else:
            self.items.append(("stream", name, text))

    def start(self) -> None:
        """Watch from now on (a kernel only: a terminal IPython has no cell outputs to clear)."""
        publisher = kernel_publisher()
        if publisher is None or self._publisher is not None:
            return
        self._publisher = publisher
        self._msg_id = (publisher.parent_header or {}).get("msg_id")
        publisher.register_hook(self._on_display)
        for name in ("stdout", "stderr"):
            recording = _Recording(getattr(sys, name), name, self)
            self._streams[name] = recording
            setattr(sys, name, recording)

    def stop(self) -> None:
        """Stop watching; a stream someone replaced since is left as they set it."""
        if self._publisher is None:
            return
        self._publisher.unregister_hook(self._on_display)
        for name, recording in self._streams.items():
            if getattr(sys, name) is recording:
                setattr(sys, name, recording._stream)
        self._streams.clear()

    def _on_display(self, msg: dict[str, Any]) -> dict[str, Any]:
        if msg["msg_type"] == "display_data" and self.is_mine(msg.get("parent_header")):
            content = msg["content"]
            self.items.append(("display", content, None))
        return msg

    def replay(self, place: str, bundle: dict[str, Any]) -> None:
        """Send the recorded outputs again, in order, to the cell that runs this; the display
        `place` (a display id) shows `bundle` where it was (first, if it came before the watch)."""
        publisher = kernel_publisher()
        if publisher is None:
            return
        pending = [("display", {"data": bundle, "transient": {"display_id": place}}, None)]
        if any(kind == "display" and _display_id(what) == place for kind, what, _ in self.items):
            pending = []
        for kind, what, text in pending + self.items:
            if kind == "stream":
                publish_stream(text, name=what)
            elif _display_id(what) == place:
                publisher.publish(bundle, {}, transient={"display_id": place})
            else:
                publisher.publish(what["data"], what.get("metadata"), transient=what.get("transient"))


def _display_id(content: dict[str, Any]) -> Any:
    return (content.get("transient") or {}).get("display_id")
