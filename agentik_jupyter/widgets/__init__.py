"""ipywidgets views of a session: the chat panel, one cell's turn view, and their parts.

Importing `SessionLike` is cheap; the widget classes load ipywidgets on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .protocol import ApprovalRequestLike, SessionLike

if TYPE_CHECKING:
    from .approval_card import ApprovalCard
    from .cards import ToolCard
    from .markdown import render_markdown
    from .panel import ChatPanel
    from .stream import StreamBuffer
    from .transcript import TRANSCRIPT_MIME, transcript_bundle
    from .turn_view import TurnView

__all__ = [
    "ApprovalCard", "ApprovalRequestLike", "ChatPanel", "SessionLike", "StreamBuffer", "TRANSCRIPT_MIME",
    "ToolCard", "TurnView", "render_markdown", "transcript_bundle",
]

_LAZY = {
    "ApprovalCard": "approval_card", "ChatPanel": "panel", "StreamBuffer": "stream", "ToolCard": "cards",
    "TRANSCRIPT_MIME": "transcript", "TurnView": "turn_view", "render_markdown": "markdown",
    "transcript_bundle": "transcript",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
