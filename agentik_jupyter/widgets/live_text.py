"""An append-only answer widget: each piece of a streamed answer crosses to the frontend once.

ipywidgets' HTML widget re-sends its whole value on every update, so a streamed answer costs
its text several times over. `LiveText` is a model of our lab extension (labextension/src/
livetext.ts) showing `value + tail`: `value`, HTML of finished Markdown blocks, only grows;
`tail`, the unfinished block's HTML, is replaced. The full state is sent when it opens, when
a frontend asks for it and when `reset` makes the shown text exact; between those
`append(done, tail)` sends a custom message with what changed (`append`): each character crosses about once. Appends are custom messages, not
state: a runner that saves widget state (nbclient) would keep only `value`, but such runners
never get this widget (notebook/page.py: only a frontend that answered the handshake does).

The kernel keeps the text shown so far, so a frontend asking for the state later (a second
view, a reload) gets all of it, not only what was opened with.
"""

from __future__ import annotations

import os
from typing import Any

from ipywidgets import DOMWidget
from traitlets import Unicode

from agentik_jupyter._version import __version__
from agentik_jupyter.widgets.lean import Lean

MODULE = "agentik-jupyter"
VERSION = f"^{__version__}"


class ExtensionWidget(Lean, DOMWidget):
    """A widget whose model and view live in our lab extension (livetext_widget.ts), at its version."""

    _model_module = Unicode(MODULE).tag(sync=True)
    _view_module = Unicode(MODULE).tag(sync=True)
    _model_module_version = Unicode(VERSION).tag(sync=True)
    _view_module_version = Unicode(VERSION).tag(sync=True)


class LiveText(ExtensionWidget):
    """Sanitized HTML shown as `done + tail`; see the module docstring."""

    _model_name = Unicode("LiveTextModel").tag(sync=True)
    _view_name = Unicode("LiveTextView").tag(sync=True)
    value = Unicode("").tag(sync=True)
    tail = Unicode("").tag(sync=True)
    head = Unicode("").tag(sync=True)
    """HTML shown above the answer, set once (a turn's question: one widget instead of two)."""

    def __init__(self, value: str = "", tail: str = "", **kwargs: Any) -> None:
        self._done, self._tail = value, tail
        self._done_u16 = _u16(value)
        super().__init__(value=value, tail=tail, **kwargs)

    @property
    def done(self) -> str:
        """The appended HTML so far (the frontend's `value`)."""
        return self._done

    @property
    def shown(self) -> str:
        """The HTML the frontend shows now."""
        return self._done + self._tail

    def append(self, done: str, tail: str) -> int:
        """Append `done` for good and show `tail` after it; returns the message's payload size.

        The message carries only what changed: the frontend keeps the first `k` characters of
        what it shows (all of `value`, and the start the old and new tails share), adds `a`, and
        holds the first `s` characters as finished (lengths in UTF-16 code units, as JavaScript
        counts them; one-letter keys: the message is sent ~4 times a second)."""
        old_tail = self._tail
        if not done and tail == old_tail:
            return 0
        base = self._done_u16
        self._done += done
        self._done_u16 += _u16(done)
        self._tail = tail
        new = done + tail
        same = len(os.path.commonprefix([old_tail, new]))
        add = new[same:]
        self.send({"k": base + _u16(new[:same]), "a": add, "s": self._done_u16})
        return len(add) + 30

    def reset(self, html: str) -> int:
        """Show exactly `html` (one full send)."""
        self._done, self._tail = html, ""
        self._done_u16 = _u16(html)
        self.send_state(["value", "tail"])
        return len(html)

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        """The state carries everything shown so far (a frontend asking later sees it all); the
        traits themselves keep what the widget opened with (appends are not trait changes)."""
        state = super().get_state(key, drop_defaults)
        for name, text in (("value", self._done), ("tail", self._tail)):
            if name in state or (key is None and text):  # (an empty one is the page's default: lean)
                state[name] = text
        return state


def _u16(text: str) -> int:
    """`text`'s length in UTF-16 code units (JavaScript's `length`)."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2
