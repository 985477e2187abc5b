"""The live rendering of one turn from its events: streamed text, tool cards, approvals, errors.

Shared by TurnView (one `%%agent` cell) and ChatPanel (the conversation). It
only consumes Events; it never asks the orchestrator anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ipywidgets import Accordion, Box, VBox, Widget

from agentik_jupyter.core.store import AgentState, AgentStore
from agentik_jupyter.types import (
    AppendText,
    ErrorEvent,
    Event,
    StartReasoning,
    StartResponse,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
)
from agentik_jupyter.widgets import look
from agentik_jupyter.widgets.cards import Joined, ToolCard
from agentik_jupyter.widgets.live_text import LiveText
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.plain_stream import HOLD_S, PlainStream, Write
from agentik_jupyter.widgets.shared import box, html
from agentik_jupyter.widgets.status import is_failure, running_tool
from agentik_jupyter.widgets.stream import StreamBuffer


def error_html(message: str) -> str:
    """An error in a live view or the panel, in the theme's error colour (inline too: widgets/look.py)."""
    return f'<div class="agentik-error" style="{look.ERROR_TEXT}">⚠ {escape(message)}</div>'


def question_html(text: str, *, inline: bool = True, mode: str | None = None) -> str:
    """The question, built as the transcript renderer builds it (renderer.ts): one look; its
    style inline too, for a frontend without our CSS (widgets/look.py). `inline=False` for a
    widget of our extension (its CSS is there, and its allow-list drops `var()` styles).
    `mode`: the turn's mode (Ask, Auto, Plan), said beside "You"; Agent, the default, is not said."""
    user, who, question = (
        (f' style="{look.USER}"', f' style="{look.WHO}"', f' style="{look.QUESTION}"') if inline else ("", "", "")
    )
    badge = f' <span class="agentik-mode">· {escape(mode)}</span>' if mode and mode != "Agent" else ""
    return (
        f'<div class="agentik-user"{user}><span class="agentik-who"{who}>You{badge}</span>'
        f'<div class="agentik-question"{question}>{escape(text)}</div></div>'
    )


class TurnBody:
    """`widget` grows as the turn's events arrive; `finish()` settles the streamed text.

    With `frame=(box, before, after)` the turn's widgets go straight into `box`, between the
    widgets `before` and `after` (a turn view's header and footer): one box fewer per turn.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        frame: tuple[Box, Sequence[Widget], Sequence[Widget]] | None = None,
        live: LiveText | None = None,
        agent_store: AgentStore | None = None,
        plain: Write | None = None,
        joined: Joined | None = None,
    ) -> None:
        """`live`: the LiveText that shows the question (append-only views): the answer streams
        into it, below the question, when nothing came between them (a tool card, reasoning).
        `plain`: the answer goes out as the cell's text output through it (widgets/plain_stream.py)
        instead of into widgets.
        `joined`: the header's HTML widget, which holds the tool cards that come right after it.
        `agent_store`: followed so that a tool card waiting for the user (an approval, a diff to
        decide) says so, not "running…", until `finish()`."""
        if frame is None:
            self.widget: Box = box(VBox)
            self._before: tuple[Widget, ...] = ()
            self._after: tuple[Widget, ...] = ()
        else:
            self.widget, before, after = frame
            self._before, self._after = tuple(before), tuple(after)
        self.items: list[Widget] = []
        self.clock = clock
        self.cards: dict[str, ToolCard] = {}
        self.streams: list[StreamBuffer | PlainStream] = []
        self.errors: list[str] = []
        self.reasoning: list[StreamBuffer] = []
        self._stream: StreamBuffer | PlainStream | None = None
        self._plain = plain
        self.plain_hold_s = HOLD_S
        """How long a `plain` answer's first write waits (0 for text that came before the view)."""
        self._thinking: StreamBuffer | None = None
        self._live = live
        self._joined = joined
        self._agent = agent_store
        self._unfollow = agent_store.subscribe(self._on_agent) if agent_store is not None else None

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
            card = self._card(event.call)
            self.cards[event.call.id] = card
            if self._agent is not None:  # (a view built late meets a call already waiting)
                self._on_agent(self._agent.get())
        elif isinstance(event, ToolResultEvent):
            existing = self.cards.get(event.result.tool_call_id)
            if existing is None:
                existing = self._card(ToolCall(id=event.result.tool_call_id, name=event.result.name))
                self.cards[event.result.tool_call_id] = existing
            existing.set_result(event.result)
        elif isinstance(event, ErrorEvent):
            self.handle_error(event.message)

    def _card(self, call: ToolCall) -> ToolCard:
        """A new card: in the header's widget while nothing came between them, else a widget of its own."""
        right_after = not self.items and not any(isinstance(s, StreamBuffer) for s in self.streams)
        card = ToolCard(call, into=self._joined if right_after else None)
        if card.own:
            self.add(card.widget)
        return card

    def _on_agent(self, state: AgentState) -> None:
        """The first card without a result is the call that runs (they run in order): it says
        what it waits for from the user, if anything."""
        wait = running_tool(state)
        current = next((c for c in self.cards.values() if c.result is None), None)
        for card in self.cards.values():
            mine = card is current and wait is not None and wait.tool == card.call.name
            card.set_waiting(wait.card_text if mine and wait is not None else None)

    def handle_error(self, message: str) -> None:
        """Show an error inline (an Error event, or a turn task that crashed)."""
        self._settle()
        self.errors.append(message)
        self.add(html(error_html(message)))

    @property
    def rendered(self) -> dict[str, str]:
        """The HTML its finished streams rendered, by their text: a transcript of the same text
        takes it instead of rendering the answer's Markdown a second time."""
        return {s.text: s.rendered for s in self.streams if isinstance(s, StreamBuffer) and s.rendered is not None}

    @property
    def streamed_plain(self) -> bool:
        """Whether some answer text went out as the cell's text output (`plain`)."""
        return any(isinstance(s, PlainStream) and s.updates for s in self.streams)

    @property
    def failed_tools(self) -> int:
        """Tool calls of this turn that failed (a denied call did not): its status line says so."""
        return sum(1 for card in self.cards.values() if card.result is not None and is_failure(card.result.error))

    def add(self, widget: Widget) -> None:
        self.items.append(widget)
        self._sync()

    def place(self, old: Sequence[Widget], new: Sequence[Widget]) -> None:
        """Put `new` where `old` was (at the end when `old` is empty)."""
        at = self.items.index(old[0]) if old and old[0] in self.items else len(self.items)
        gone = set(map(id, old))
        self.items = (
            [w for w in self.items[:at] if id(w) not in gone]
            + list(new)
            + [w for w in self.items[at:] if id(w) not in gone]
        )
        self._sync()

    def finish(self, exact: bool = True) -> None:
        """Settle the streams; `exact=False` skips re-rendering the full text (for a view that
        a transcript replaces at once)."""
        if self._unfollow is not None:
            self._unfollow()
            self._unfollow = None
        self._settle(exact)

    def _sync(self) -> None:
        self.widget.children = (*self._before, *self.items, *self._after)

    def _current_stream(self) -> StreamBuffer | PlainStream:
        if self._stream is None and self._plain is not None:
            self._stream = PlainStream(
                self._plain, clock=self.clock, after=any(s.text for s in self.streams), hold_s=self.plain_hold_s
            )
            self.streams.append(self._stream)
        if self._stream is None:
            live, self._live = (self._live if not self.items and not self.streams else None), None
            self._stream = StreamBuffer(clock=self.clock, place=self.place, live=live)
            self.streams.append(self._stream)
        return self._stream

    def _current_thinking(self) -> StreamBuffer:
        """The model's reasoning, streamed into a collapsed "Thinking" section."""
        if self._thinking is None:
            self._thinking = StreamBuffer(clock=self.clock)
            self.reasoning.append(self._thinking)
            section = Accordion(children=(self._thinking.widget,), selected_index=None, titles=("Thinking",))
            self.add(section)
        return self._thinking

    def _settle_thinking(self, exact: bool = True) -> None:
        if self._thinking is not None:
            self._thinking.finish(exact)
            self._thinking = None

    def _settle(self, exact: bool = True) -> None:
        self._settle_thinking(exact)
        if self._stream is not None:
            self._stream.finish(exact)
            self._stream = None
