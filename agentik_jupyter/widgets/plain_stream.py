"""An answer streamed as the cell's own text output, for a `--wait` view without our lab extension.

Without our extension (VS Code, Colab, a JupyterLab where it is off) the only widgets are
ipywidgets', and each update of one re-sends its whole value: even sealed into parts
(widgets/stream.py) a streamed answer cost the frontend about four times its size before its
transcript. A stream output is the one channel every frontend appends to: each message carries
only the new characters (~40 bytes of message). So a `--wait` cell, which is still running while
its answer streams, shows the answer as plain text below its live view: its first words at once,
the rest of its first FIRST_CHARS characters as soon as they came, then RATE_HZ times a second; its transcript replaces it at the end (`TurnView.finish`
clears the cell's outputs first). The text is the model's Markdown as it came, each hidden
character shown as its badge (security/invisible.py): an escape sequence in a stream output would
otherwise colour or hide what follows it.

A background cell has ended when its answer streams, and its outputs take no more messages: it
keeps the widget parts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from agentik_jupyter.security.invisible import plain_visible

HOLD_S = 0.01
"""The first write waits this long after the view's first text: an answer read in a burst (a model
that thought, then sent everything at once) has ended by then and writes nothing, so its cell's
outputs are those of a turn whose view was never built (what nbval compares: it ignores
`clear_output`). A model at its pace is still streaming, and shows its first words then."""
RATE_HZ = 10.0
"""Messages a second once the first words are out: each costs ~40 bytes beyond its text (a 4 KB
answer streamed over 4 s: ~1.6 KB), and text that moves ten times a second reads as it comes (at
four, it came in visible steps of a quarter second)."""
FIRST_CHARS = 24
"""The answer's first characters are written as soon as they came, not at the rate: the first words
(what the user waits for, bench/ `first_chars`) are on screen as soon as the model sent them."""
SEPARATOR = "\n\n"
"""Between two answer segments (a tool call came between them): one stream output holds both."""

Clock = Callable[[], float]
Write = Callable[[str], None]


class PlainStream:
    """Streams text through `write` (a stream output) at a bounded rate; the surface TurnBody
    uses of a StreamBuffer (`append`, `finish`, `text`, `updates`)."""

    def __init__(
        self, write: Write, *, clock: Clock = time.monotonic, after: bool = False, hold_s: float = 0.0
    ) -> None:
        """`after`: a segment that follows another in the same output (it starts on a new paragraph).
        `hold_s`: the first write waits that long (HOLD_S), while a loop runs."""
        self._write = write
        self._hold_s = hold_s
        self.clock = clock
        self._all: list[str] = []
        self._pending: list[str] = [SEPARATOR] if after else []
        self._has_text = False
        self._last = float("-inf")
        self._written = 0  # characters written so far
        self._waiting = 0  # characters appended since the last write
        self._timer: asyncio.TimerHandle | None = None
        self.updates = 0
        self.sent_bytes = 0
        self.finished = False

    @property
    def text(self) -> str:
        """Everything appended so far."""
        return "".join(self._all)

    def append(self, delta: str) -> None:
        """Add streamed text; it is written at once when it completes the first FIRST_CHARS characters
        or when the last write is 1/RATE_HZ old, else then."""
        if self.finished or not delta:
            return
        self._all.append(delta)
        self._pending.append(delta)
        self._waiting += len(delta)
        self._has_text = True
        if self._hold_s > 0:
            if self._timer is None:
                self._schedule(self._hold_s)
            return
        wait = self._last + 1.0 / RATE_HZ - self.clock()
        if self._written < FIRST_CHARS <= self._written + self._waiting:
            wait = 0.0  # the first words are complete: out now, not at the rate
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            self._schedule(wait)

    def _schedule(self, delay: float) -> None:
        try:
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)
        except RuntimeError:  # (no loop: written at the next append or at the end)
            self._hold_s = 0.0

    def flush(self) -> None:
        """Write what came since the last write."""
        self._cancel_timer()
        if not self._has_text:
            return
        text = plain_visible("".join(self._pending))
        self._pending.clear()
        self._waiting = 0
        self._has_text = False
        self._last = self.clock()
        self._write(text)
        self._written += len(text)
        self.updates += 1
        self.sent_bytes += len(text.encode())

    def finish(self, exact: bool = True) -> str:
        """Stop; write the rest only if the text is to stay (`exact`): a view whose transcript
        replaces it at once does not need it. Returns the text."""
        if not self.finished:
            self.finished = True
            if exact:
                self.flush()
            self._cancel_timer()
        return self.text

    def _on_timer(self) -> None:
        self._timer = None
        self._hold_s = 0.0
        if not self.finished:
            self.flush()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
