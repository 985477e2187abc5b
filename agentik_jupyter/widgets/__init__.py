"""ipywidgets views of a session: the chat panel, one cell's turn view, and their parts.

Importing `SessionLike` is cheap; the widget classes load ipywidgets on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentik_jupyter.widgets.protocol import ApprovalRequestLike, SessionLike

if TYPE_CHECKING:
    from agentik_jupyter.widgets.approval_card import ApprovalCard
    from agentik_jupyter.widgets.cards import ToolCard
    from agentik_jupyter.widgets.markdown import render_markdown
    from agentik_jupyter.widgets.panel import ChatPanel
    from agentik_jupyter.widgets.stream import StreamBuffer
    from agentik_jupyter.widgets.transcript import TRANSCRIPT_MIME, transcript_bundle
    from agentik_jupyter.widgets.turn_view import TurnView

__all__ = [
    "ApprovalCard",
    "ApprovalRequestLike",
    "ChatPanel",
    "SessionLike",
    "StreamBuffer",
    "TRANSCRIPT_MIME",
    "ToolCard",
    "TurnView",
    "render_markdown",
    "transcript_bundle",
]

_LAZY = {
    "ApprovalCard": "approval_card",
    "ChatPanel": "panel",
    "StreamBuffer": "stream",
    "ToolCard": "cards",
    "TRANSCRIPT_MIME": "transcript",
    "TurnView": "turn_view",
    "render_markdown": "markdown",
    "transcript_bundle": "transcript",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
