"""The live rendering of one turn from its events: streamed text, tool cards, approvals, errors.

Shared by TurnView (one `%%agent` cell) and ChatPanel (the conversation). It
only consumes Events; it never asks the orchestrator anything.
"""

from __future__ import annotations

import time
from typing import Callable

from ipywidgets import HTML, Accordion, VBox, Widget

from ..types import (
    AppendText,
    ErrorEvent,
    Event,
    StartReasoning,
    StartResponse,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
)
from .cards import ToolCard
from .markdown import escape
from .stream import StreamBuffer


def error_html(message: str) -> str:
    return f'<div class="agentik-error" style="color:#b00020">⚠ {escape(message)}</div>'


class TurnBody:
    """`widget` grows as the turn's events arrive; `finish()` settles the streamed text."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.widget = VBox()
        self.clock = clock
        self.cards: dict[str, ToolCard] = {}
        self.streams: list[StreamBuffer] = []
        self.errors: list[str] = []
        self.reasoning: list[StreamBuffer] = []
        self._stream: StreamBuffer | None = None
        self._thinking: StreamBuffer | None = None

    @property
    def text(self) -> str:
        """All answer text streamed in this turn."""
        return "".join(s.text for s in self.streams)

    def handle(self, event: Event) -> None:
        if isinstance(event, AppendText):
            if event.reasoning:
                self._current_thinking().append(event.text)
            else:
                self._settle_thinking()
                self._current_stream().append(event.text)
        elif isinstance(event, StartReasoning):
            self._settle()
            self._current_thinking()
        elif isinstance(event, StartResponse):
            self._settle()
        elif isinstance(event, ToolCallEvent):
            self._settle()
            card = ToolCard(event.call)
            self.cards[event.call.id] = card
            self.add(card.widget)
        elif isinstance(event, ToolResultEvent):
            existing = self.cards.get(event.result.tool_call_id)
            if existing is None:
                existing = ToolCard(ToolCall(id=event.result.tool_call_id, name=event.result.name))
                self.cards[event.result.tool_call_id] = existing
                self.add(existing.widget)
            existing.set_result(event.result)
        elif isinstance(event, ErrorEvent):
            self.handle_error(event.message)

    def handle_error(self, message: str) -> None:
        """Show an error inline (an Error event, or a turn task that crashed)."""
        self._settle()
        self.errors.append(message)
        self.add(HTML(value=error_html(message)))

    def add(self, widget: Widget) -> None:
        self.widget.children = (*self.widget.children, widget)

    def finish(self) -> None:
        self._settle()

    def _current_stream(self) -> StreamBuffer:
        if self._stream is None:
            self._stream = StreamBuffer(clock=self.clock)
            self.streams.append(self._stream)
            self.add(self._stream.widget)
        return self._stream

    def _current_thinking(self) -> StreamBuffer:
        """The model's reasoning, streamed into a collapsed "Thinking" section."""
        if self._thinking is None:
            self._thinking = StreamBuffer(clock=self.clock)
            self.reasoning.append(self._thinking)
            section = Accordion(children=(self._thinking.widget,), selected_index=None)
            section.set_title(0, "💭 Thinking")
            self.add(section)
        return self._thinking

    def _settle_thinking(self) -> None:
        if self._thinking is not None:
            self._thinking.finish()
            self._thinking = None

    def _settle(self) -> None:
        self._settle_thinking()
        if self._stream is not None:
            self._stream.finish()
            self._stream = None
