"""Streaming an answer into widgets at a bounded rate, in few widgets and linear bytes.

A widget trait update re-sends the whole value, so re-setting one HTML widget with the
full answer on every tick costs O(n²) bytes. Here the answer is shown in *parts*: the live
part (the text since the last seal, rendered) is re-set at most RATE_HZ times a second and
only once MIN_CHARS new characters arrived (or MAX_WAIT_S passed), within a byte budget
proportional to the text received. When the live part's finished Markdown blocks pass the
seal size, its widget is sealed (never sent again) and a new live part starts. The seal
size grows with the answer, so a long answer has O(log n) widgets, not one per block.
`finish()` shows the full text as one rendered widget, so the final state is exact;
`finish(exact=False)` only stops (for a view a transcript is about to replace; a LiveText
still gets its missing end when that is all it needs).

When the frontend has our lab extension (notebook/page.py), the answer streams instead into
one `LiveText` widget (widgets/live_text.py) that appends: each update carries only what
changed (finished blocks once, as HTML; of the unfinished tail, its new end), at most
APPEND_RATE_HZ times a second. Seals then move the part into the appended HTML (the widget
stays), so a long unfinished block still costs at most MAX_LIVE characters an update; the byte
budget is the same.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence

from ipywidgets import HTML, VBox, Widget

from agentik_jupyter.notebook import page as frontend
from agentik_jupyter.widgets.live_text import LiveText
from agentik_jupyter.widgets.markdown import render_markdown
from agentik_jupyter.widgets.shared import box, html, layout

RATE_HZ = 12.0
APPEND_RATE_HZ = 4.0
"""The rate into a LiveText: an update there carries only the new characters, so its ~110 bytes
of message (comm id, method, offsets) are most of what it costs beyond the text (a fast model:
~250 characters an update, 0.4x the text at 12 a second, 0.1x at 4)."""
MIN_CHARS = 72
MAX_WAIT_S = 0.5
SEAL_CHARS = 1_500
SEAL_GROWTH = 0.25
MAX_LIVE = 4_000
BUDGET_RATIO = 3.0
MSG_OVERHEAD = 80
BUDGET_BASE = 4096
SETTLE_S = 0.25

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")

Clock = Callable[[], float]
Place = Callable[[Sequence[Widget], Sequence[Widget]], None]


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
    """Throttled, byte-frugal Markdown stream.

    Its widgets go where `place(old, new)` puts them (a TurnBody's list); without `place`
    they live in its own VBox, `widget`.
    """

    def __init__(
        self,
        *,
        rate_hz: float = RATE_HZ,
        min_chars: int = MIN_CHARS,
        seal_chars: int = SEAL_CHARS,
        clock: Clock = time.monotonic,
        place: Place | None = None,
        append_only: bool | None = None,
        live: LiveText | None = None,
    ) -> None:
        """`live`: an empty LiveText already shown (the turn's question's) to stream into."""
        self.seal_chars = seal_chars
        self.clock = clock
        self.widget: VBox | None = None
        if place is None:
            self.widget = box(VBox)
            place = self._place_in_box
        self._place = place
        self.append_only = frontend.live_text() if append_only is None else append_only
        """Stream into one LiveText (the frontend has our extension), not into HTML parts."""
        self.min_interval = 1.0 / (min(rate_hz, APPEND_RATE_HZ) if self.append_only else rate_hz)
        self.min_chars = min_chars
        self.widgets: list[HTML | LiveText] = []
        self._live: HTML | LiveText | None = live if self.append_only else None
        self._part_sent = ""  # (append-only: the HTML of this part's finished blocks, sent)
        self._sealed_unsent = ""  # (append-only: sealed HTML that goes with the next update)
        self._all: list[str] = []
        self._pending: list[str] = []
        self._src = ""
        self._carry = ""
        self._head = ""  # the live part's finished blocks so far, and their HTML
        self._head_html = ""
        self._fence: str | None = None
        self._received = 0
        self._sealed = 0
        self._unshown = 0
        self._sent_bytes = 0
        self._html_ratio = 1.0
        self._last_flush = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        self.updates = 0
        self.finished = False
        self.rendered: str | None = None  # the whole text's HTML, once `finish` rendered it

    @property
    def text(self) -> str:
        """Everything appended so far."""
        return "".join(self._all)

    @property
    def sent_bytes(self) -> int:
        """What the live parts cost so far (values and message overhead, as estimated)."""
        return self._sent_bytes

    def append(self, delta: str) -> None:
        """Add streamed text; the frontend sees it within MAX_WAIT_S (sooner when it flows)."""
        if self.finished or not delta:
            return
        self._all.append(delta)
        self._pending.append(delta)
        self._received += len(delta)
        self._unshown += len(delta)
        now = self.clock()
        since = now - self._last_flush
        if since >= MAX_WAIT_S or (since >= self.min_interval and self._unshown >= self.min_chars):
            self.flush()
        elif self._timer is None:  # (a flush already due stays: the next delta may come first)
            wait = self.min_interval if self._unshown >= self.min_chars else MAX_WAIT_S
            self._schedule(self._last_flush + wait - now)

    def flush(self, force: bool = False) -> None:
        """Seal finished parts and re-set the live part, if the byte budget allows."""
        self._cancel_timer()
        if self._pending:
            self._src += "".join(self._pending)
            self._pending.clear()
            self._seal()
        source = self._carry + self._src if self._src else ""
        if not source or self._unshown == 0:
            self._send_sealed()
            return
        budget = BUDGET_RATIO * self._received + BUDGET_BASE
        unsent = len(source) - (len(self._head) if self.append_only and source.startswith(self._head) else 0)
        cost = unsent * self._html_ratio + MSG_OVERHEAD
        if not force and self._sent_bytes + cost > budget:
            self._send_sealed()
            self._schedule(SETTLE_S, force=True)
            return
        head_html, tail_html = self._render_live(source)
        self._html_ratio = (len(head_html) + len(tail_html)) / len(source)
        self._show(head_html, tail_html)
        self._last_flush = self.clock()
        self._unshown = 0

    def _render_live(self, source: str) -> tuple[str, str]:
        """The live part rendered, as (its finished blocks' HTML, its tail's): its finished
        Markdown blocks once each, as they finish (kept as HTML), and its unfinished tail anew.
        Rendered apart, a block renders as it does in the whole but for what spans blocks (a
        list loosened by a later blank line, a link defined further down), as the sealed parts
        already do; `finish` renders the whole."""
        if not source.startswith(self._head):  # (a seal cut the part: it starts again)
            self._head, self._head_html = "", ""
        done = len(self._head)
        block_end = done + _scan(source[done:])[0]  # (the head ends outside any code fence)
        if block_end > done:
            self._head_html += render_markdown(source[done:block_end])
            self._head = source[:block_end]
        tail = source[block_end:]
        return self._head_html, render_markdown(tail) if tail else ""

    def _render_part(self, source: str) -> str:
        """A part being sealed, rendered; append-only, from the finished blocks already sent,
        so the part's HTML continues what the frontend has."""
        if self.append_only and self._head and source.startswith(self._head):
            rest = source[len(self._head) :]
            return self._head_html + (render_markdown(rest) if rest else "")
        return render_markdown(source)

    def finish(self, exact: bool = True) -> str:
        """Stop streaming; with `exact`, show the full text as one rendered widget. Returns the text."""
        if self.finished:
            return self.text
        self.finished = True
        self._cancel_timer()
        text = self.text
        if self.append_only:
            self._finish_live(text, exact)
        elif exact:
            old = list(self.widgets)
            final = self._live if self._live is not None else None
            rendered = self.rendered = render_markdown(text) if text else ""
            if final is None and text:
                final = html(rendered, "tight")
            elif final is not None:
                final.value = rendered
            self.widgets = [final] if final is not None and text else []
            self._place(old, self.widgets)
            for w in old:
                if w is not final:
                    w.close()
            self.updates += 1
        return text

    def _finish_live(self, text: str, exact: bool) -> None:
        """The LiveText shows exactly the whole text rendered: the missing end appended when
        what it shows is a start of it (cheap: so even a view a transcript replaces ends on
        the same text), else, with `exact`, the whole re-sent."""
        self._sealed_unsent = ""  # (the end appended below includes it)
        live = self._live
        if (live is None or not isinstance(live, LiveText)) and not (text and exact):
            return
        rendered = self.rendered = render_markdown(text) if text else ""
        if live is None or not isinstance(live, LiveText):
            if text and exact:
                self._live = LiveText(rendered, layout=layout("tight"))
                self._place([], [self._live])
                self.widgets = [self._live]
                self.updates += 1
            return
        if live.shown == rendered:
            return
        if rendered.startswith(live.done):
            sent = live.append(rendered[len(live.done) :], "")
        elif exact:
            sent = live.reset(rendered)
        else:
            return
        self._sent_bytes += sent + MSG_OVERHEAD
        self.updates += 1

    # ---- parts ----

    def _show(self, done: str, tail: str, sealed: bool = False) -> None:
        """Show the live part (its finished blocks' HTML, its tail's); `sealed`: for good."""
        if self.append_only:
            self._show_appended(done, tail, sealed)
            return
        rendered = done + tail
        self._sent_bytes += len(rendered) + MSG_OVERHEAD
        self.updates += 1
        if self._live is None:
            self._live = html(rendered, "tight")
            old = list(self.widgets)
            self.widgets.append(self._live)
            self._place(old, self.widgets)
        else:
            self._live.value = rendered
        if sealed:
            self._live = None

    def _show_appended(self, done: str, tail: str, sealed: bool) -> None:
        """Append what is new of the part's finished blocks, replace the tail. A sealed part's
        HTML goes to the appended HTML whole, and the next part continues the same widget."""
        if sealed:
            done, tail = done + tail, ""
        live = self._live
        if sealed and isinstance(live, LiveText) and done.startswith(self._part_sent):
            self._sealed_unsent += done[len(self._part_sent) :]  # (sent with the next tail: one message)
            self._part_sent = ""
            return
        self.updates += 1
        if not isinstance(live, LiveText):
            self._live = LiveText(done, tail, layout=layout("tight"))
            old = list(self.widgets)
            self.widgets.append(self._live)
            self._place(old, self.widgets)
            sent = len(done) + len(tail)
        elif done.startswith(self._part_sent):
            sent = live.append(self._sealed_unsent + done[len(self._part_sent) :], tail)
        else:  # (the part renders differently than its start did: show it exactly)
            sent = live.reset(live.done[: len(live.done) - len(self._part_sent)] + self._sealed_unsent + done + tail)
        self._sealed_unsent = ""
        self._sent_bytes += sent + MSG_OVERHEAD
        self._part_sent = "" if sealed else done

    def _send_sealed(self) -> None:
        """Send sealed HTML that no tail followed in the same flush."""
        live = self._live
        if self._sealed_unsent and isinstance(live, LiveText):
            sent = live.append(self._sealed_unsent, "")
            self._sealed_unsent = ""
            self.updates += 1
            self._sent_bytes += sent + MSG_OVERHEAD

    def _seal_size(self) -> int:
        return max(self.seal_chars, int(self._sealed * SEAL_GROWTH))

    def _seal(self) -> None:
        """Cut the live part where the Markdown allows once it is big enough, and seal it."""
        while True:
            size = self._seal_size()
            if len(self._carry) + len(self._src) < size:
                return  # (no cut can be due: skip the scan, ~30 times a second while text flows)
            block_end, line_end, fence_at_line, opener = _scan(self._carry + self._src)
            offset = len(self._carry)
            block_end, line_end = block_end - offset, line_end - offset
            if block_end >= size:
                cut, fence, opener_line = block_end, None, ""
            elif len(self._src) <= max(size, MAX_LIVE):
                return
            elif block_end > 0:
                cut, fence, opener_line = block_end, None, ""
            elif line_end > 0:
                cut, fence, opener_line = line_end, fence_at_line, opener
            else:
                space = self._src.rfind(" ", 0, size)
                cut = space + 1 if space > 0 else size
                fence, opener_line = self._fence, self._carry
            closing = f"\n{fence}\n" if fence else ""
            part = self._render_part(self._carry + self._src[:cut] + closing)
            self._show(part, "", sealed=True)
            self._sealed += cut
            self._src = self._src[cut:]
            self._fence, self._carry = fence, opener_line if fence else ""
            self._unshown = len(self._src)

    def _place_in_box(self, old: Sequence[Widget], new: Sequence[Widget]) -> None:
        assert self.widget is not None
        self.widget.children = tuple(new)

    # ---- timers ----

    def _schedule(self, delay: float, force: bool = False) -> None:
        """A flush after `delay` seconds (an earlier one already due stays)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        due = loop.time() + max(0.0, delay)
        if self._timer is not None:
            if self._timer.when() <= due:
                return
            self._timer.cancel()
        self._timer = loop.call_at(due, self._on_timer, force)

    def _on_timer(self, force: bool) -> None:
        self._timer = None
        if not self.finished:
            self.flush(force=force)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
