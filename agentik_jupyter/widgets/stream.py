"""Streaming an answer into widgets at a bounded rate and in linear bytes.

A widget trait update re-sends the whole value, so re-setting one HTML widget
with the full answer on every tick costs O(n²) bytes. Here the answer is shown
as frozen *parts* (finished Markdown blocks, each a small HTML widget sent once)
plus a short live *tail* (the block in progress, re-set at most ~25 times a
second and never longer than `max_tail` characters). Tail updates are also held
to a byte budget proportional to the text received. `finish()` replaces the
parts with one widget rendering the full text, so the final state is exact.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Callable

from ipywidgets import HTML, Layout, VBox
from ipywidgets.widgets.widget_string import HTMLStyle

from .markdown import render_markdown

RATE_HZ = 25.0
MAX_TAIL = 500
MIN_PART = 300
GROUP_SIZE = 12
BUDGET_RATIO = 10.0
MSG_OVERHEAD = 80
BUDGET_BASE = 4096
SETTLE_S = 0.25

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")

Clock = Callable[[], float]


def _scan(src: str) -> tuple[int, int, str | None, str]:
    """Where `src` may be cut: (after the last safe block end, after the last newline,
    the code fence still open at that newline, and its opener line)."""
    block_end = line_end = 0
    fence: str | None = None
    opener = opener_at_line = ""
    fence_at_line: str | None = None
    pos = 0
    for line in src.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        pos += len(line)
        match = _FENCE.match(line)
        if fence is None and match:
            fence, opener = match.group(1), line
        elif fence is not None and match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
            if not line.strip().strip(fence[0]):
                fence, opener = None, ""
                block_end = pos
        elif fence is None and not line.strip():
            block_end = pos
        line_end, fence_at_line, opener_at_line = pos, fence, opener
    return block_end, line_end, fence_at_line, opener_at_line


class StreamBuffer:
    """Throttled, byte-frugal Markdown stream; `widget` is what to display."""

    def __init__(
        self,
        *,
        rate_hz: float = RATE_HZ,
        max_tail: int = MAX_TAIL,
        min_part: int = MIN_PART,
        clock: Clock = time.monotonic,
    ) -> None:
        self.min_interval = 1.0 / rate_hz
        self.max_tail = max_tail
        self.min_part = min_part
        self.clock = clock
        self._layout = Layout(margin="0")
        self._style = HTMLStyle()
        self._tail = HTML(layout=self._layout, style=self._style)
        self._groups: list[VBox] = []
        self.widget = VBox(children=(self._tail,), layout=Layout(margin="0"))
        self._all: list[str] = []
        self._pending: list[str] = []
        self._src = ""
        self._carry = ""
        self._fence: str | None = None
        self._received = 0
        self._tail_bytes = 0
        self._html_ratio = 1.0
        self._last_flush = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        self.updates = 0
        self.finished = False

    @property
    def text(self) -> str:
        """Everything appended so far."""
        return "".join(self._all)

    def append(self, delta: str) -> None:
        """Add streamed text; the frontend sees it within 1/rate seconds."""
        if self.finished or not delta:
            return
        self._all.append(delta)
        self._pending.append(delta)
        self._received += len(delta)
        if self.clock() - self._last_flush >= self.min_interval:
            self.flush()
        else:
            self._schedule(self._last_flush + self.min_interval - self.clock())

    def flush(self, force: bool = False) -> None:
        """Commit finished blocks and re-set the tail if the rate and byte budget allow."""
        self._cancel_timer()
        if self._pending:
            self._src += "".join(self._pending)
            self._pending.clear()
            self._commit()
        budget = BUDGET_RATIO * self._received + BUDGET_BASE
        source = self._carry + self._src if self._src else ""
        estimate = len(source) * self._html_ratio + MSG_OVERHEAD
        if not force and self._tail_bytes + estimate > budget:
            self._schedule(SETTLE_S, force=True)
            return
        rendered = render_markdown(source) if source else ""
        if source:
            self._html_ratio = len(rendered) / len(source)
        if rendered == self._tail.value:
            return
        cost = len(rendered) + MSG_OVERHEAD
        if not force and self._tail_bytes + cost > budget:
            self._schedule(SETTLE_S, force=True)
            return
        self._tail.value = rendered
        self._tail_bytes += cost
        self._last_flush = self.clock()
        self.updates += 1

    def finish(self) -> str:
        """Show the full text as one rendered widget; returns the text."""
        if self.finished:
            return self.text
        self.finished = True
        self._cancel_timer()
        text = self.text
        final = HTML(value=render_markdown(text), layout=self._layout, style=self._style)
        old = [self._tail, *self._groups]
        parts = [w for g in self._groups for w in g.children]
        self.widget.children = (final,) if text else ()
        for w in [*parts, *old]:
            w.close()
        self._groups.clear()
        self.updates += 1
        return text

    def _commit(self) -> None:
        while True:
            block_end, line_end, fence_at_line, opener = _scan(self._carry + self._src)
            offset = len(self._carry)
            block_end, line_end = block_end - offset, line_end - offset
            if block_end >= self.min_part:
                cut, fence, opener_line = block_end, None, ""
            elif len(self._src) <= self.max_tail:
                return
            elif block_end > 0:
                cut, fence, opener_line = block_end, None, ""
            elif line_end > 0:
                cut, fence, opener_line = line_end, fence_at_line, opener
            else:
                space = self._src.rfind(" ", 0, self.max_tail)
                cut = space + 1 if space > 0 else self.max_tail
                fence, opener_line = self._fence, self._carry
            self._freeze(self._carry + self._src[:cut], fence)
            self._src = self._src[cut:]
            self._fence, self._carry = fence, opener_line if fence else ""

    def _freeze(self, src: str, open_fence: str | None) -> None:
        closing = f"\n{open_fence}\n" if open_fence else ""
        part = HTML(value=render_markdown(src + closing), layout=self._layout, style=self._style)
        if not self._groups or len(self._groups[-1].children) >= GROUP_SIZE:
            self._groups.append(VBox(layout=self._layout))
            self.widget.children = (*self._groups, self._tail)
        group = self._groups[-1]
        group.children = (*group.children, part)
        self.updates += 1

    def _schedule(self, delay: float, force: bool = False) -> None:
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(max(0.0, delay), self._on_timer, force)

    def _on_timer(self, force: bool) -> None:
        self._timer = None
        if not self.finished:
            self.flush(force=force)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
