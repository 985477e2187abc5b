"""A turn's status line and its Stop button as one widget (a frontend with our lab extension).

ipywidgets needs three widgets for them (an HTML, a Button, an HBox to put them side by side):
three opens of ~450 bytes and three closes a turn. `LiveStatus` is a model of our extension
(labextension/src/livetext_widget.ts) that draws the line (`value`, the status line's HTML, as
an HTML widget shows it) and a Stop button (`disabled`); a click comes back as a custom message
`{"event": "stop"}` (ipywidgets' Button click, `{"event": "click"}`, is taken too: a client that
clicks Stop as a Button works unchanged). It has the Button's `disabled` and `on_click`, so the
turn view drives it as it drives the Button. Used only after the frontend answered the
handshake (notebook/page.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from traitlets import Bool, Unicode

from agentik_jupyter.widgets.live_text import ExtensionWidget


class LiveStatus(ExtensionWidget):
    """The status line's HTML (`value`) and Stop (`disabled`, `on_click`)."""

    _model_name = Unicode("LiveStatusModel").tag(sync=True)
    _view_name = Unicode("LiveStatusView").tag(sync=True)
    value = Unicode("").tag(sync=True)
    disabled = Bool(False).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._on_click: list[Callable[[LiveStatus], Any]] = []
        self.on_msg(self._on_page_msg)

    def on_click(self, callback: Callable[[LiveStatus], Any]) -> None:
        """Call `callback(self)` when Stop is clicked on the page (as Button.on_click)."""
        self._on_click.append(callback)

    def _on_page_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("event") in ("stop", "click") and not self.disabled:
            for callback in self._on_click:
                callback(self)
