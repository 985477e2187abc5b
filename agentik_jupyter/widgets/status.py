"""The status line (what the agent is doing, for how long, at what token cost) and the error banner."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ipywidgets import HTML, Button, HBox, Layout

from agentik_jupyter.core.mainloop import main_thread_callback
from agentik_jupyter.core.orchestrator import AWAITING_APPROVAL, DENIED, STOPPED_CALL
from agentik_jupyter.core.store import AgentState, AgentStore, ChatState, ChatStore
from agentik_jupyter.providers.prices import PricesError, cost_of
from agentik_jupyter.tools.status import split as split_label
from agentik_jupyter.types import EndReason, Usage
from agentik_jupyter.widgets import look
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.shared import html

TICK_S = 1.0
"""The elapsed time moves once a second while nothing else on the view does (see `moved`)."""
MIN_RENDER_INTERVAL_S = 0.1
"""What the agent does is re-shown at most ten times a second: the steps of a fast turn (sending,
running a tool, sending again, responding) would otherwise each send an update nobody sees."""
STOPPED = "■ Stopped"
"""A stopped turn, in the same words wherever it shows: its cell's line and transcript, the panel, the
sidebar (labextension/src/renderer.ts STOPPED)."""
ENDINGS: dict[str, str] = {
    "complete": "✓ Done",
    "max_iterations": "■ Stopped at the tool-call limit",
    "interrupted": STOPPED,
    "error": "⚠ Failed",
}


def is_failure(error: str | None) -> bool:
    """Whether a tool result's error means the tool failed (not that the user said no or stopped it)."""
    return error is not None and not error.startswith(DENIED) and error != STOPPED_CALL


def ending_text(reason: str | None, failed_tools: int = 0) -> str:
    """How a turn ended, in words. A turn that answered after a tool call failed is not simply
    "Done": the answer was written without what that call should have given."""
    if reason == "complete" and failed_tools:
        return f"⚠ Finished with {failed_tools} failed tool call{'s' if failed_tools > 1 else ''}"
    return ENDINGS.get(reason or "", "")


def usage_text(usage: Usage | None) -> str:
    if usage is None or (usage.input_tokens is None and usage.output_tokens is None):
        return ""
    cached = "" if usage.cached_tokens is None else f", {usage.cached_tokens:,} from cache"
    return f"{usage.input_tokens or 0:,} tokens in{cached}, {usage.output_tokens or 0:,} out"


def totals_text(turns: Sequence[Any]) -> str:
    """The session's running total (turns with `model`, `input_tokens`, `cached_tokens`,
    `cache_write_tokens`, `output_tokens`), and what it cost when every model's price is known (as
    `%agent usage` says it, which also says why a cost is unknown)."""
    if not turns:
        return ""
    tokens = sum(t.input_tokens for t in turns)
    cached = sum(t.cached_tokens for t in turns)
    share = f" ({cached / tokens:.0%} from cache)" if tokens else ""
    try:
        cost = cost_of(turns)
    except PricesError:
        cost = None
    spent = f" · ${cost:,.4f} at list prices" if cost is not None else ""
    return f"Session: {tokens:,} tokens in{share}, {sum(t.output_tokens for t in turns):,} out{spent}"


@dataclass(frozen=True)
class ToolWait:
    """The running tool, decoded once from `AgentState.active_tool` (its name with the
    orchestrator's AWAITING_APPROVAL suffix, or a tool_status label saying where it waits)."""

    tool: str
    approval: bool = False
    """It waits for the user's approval to run."""
    where: str | None = None
    """Where it waits for the user's answer (edit_cell: the diff on a cell), if it does."""

    @property
    def waits_for_user(self) -> bool:
        return self.approval or self.where is not None

    @property
    def card_text(self) -> str | None:
        """What the tool's card says while it waits for the user (None: it runs)."""
        if self.approval:
            return "waiting for your approval"
        return None if self.where is None else f"waiting for your answer on {self.where}"


def running_tool(state: AgentState) -> ToolWait | None:
    """The tool the agent runs now (None when it runs none)."""
    tool = state.active_tool or ""
    if state.status != "processing" or not tool:
        return None
    if tool.endswith(AWAITING_APPROVAL):
        return ToolWait(tool[: -len(AWAITING_APPROVAL)], approval=True)
    name, where = split_label(tool)
    return ToolWait(name, where=where)


def tool_text(wait: ToolWait | None, caller: str | None = None) -> str:
    """What the line says while a tool runs or waits for the user; `caller`: the outside agent (an MCP
    client) whose call it is, named so the user knows the call is not our agent's."""
    if wait is not None and wait.approval:
        return f"◷ Waiting for your approval to run {wait.tool}{f' ({caller})' if caller else ''}…"
    if wait is not None and wait.where is not None:
        return f"◷ {wait.tool}{f' ({caller})' if caller else ''}: waiting for your answer on {wait.where}…"
    running = "a tool" if wait is None else wait.tool
    return f"⚙ {caller}: running {running}…" if caller else f"⚙ Running {running}…"


GOTO_LABELS = {"approval": "Go to the approval", "answer": "Show it"}
GOTO_CLASS = "agentik-goto"
"""The control that takes the user to what the agent waits for: the lab extension
(labextension/src/goto.ts) shows it and acts on its click. Hidden without the extension, where
nothing would act on it (the line says where in words)."""


def goto_html(kind: str) -> str:
    """The go-to control for `kind` ("approval": an approval or trust card; "answer": a diff on a cell)."""
    return (
        f' <button type="button" class="{GOTO_CLASS} jp-Button jp-mod-styled" data-agentik-goto="{kind}"'
        f' title="Scroll to it and put the keyboard on its first button" style="display:none">'
        f"{GOTO_LABELS[kind]}</button>"
    )


class StatusLine:
    """Follows AgentStore.status while a turn is active; elapsed time ticks once a second
    while the answer does not visibly move (`moved`)."""

    def __init__(
        self,
        agent_store: AgentStore,
        *,
        clock: Callable[[], float] = time.monotonic,
        begun: float | None = None,
        make: Callable[[str], Any] | None = None,
        inline: bool = True,
    ) -> None:
        """`begun`: the turn already started then (on `clock`): the widget opens showing it,
        instead of opening empty and being updated at once. `make(html)`: the widget that
        shows the line (anything with a `value`; an HTML widget by default). `inline=False`:
        the line's HTML without its inline look (a widget of our extension, whose CSS styles it)."""
        self.clock = clock
        self._style = f' style="{look.STATUS}"' if inline else ""
        self._store = agent_store
        self._started: float | None = None
        self._ended: float | None = None
        self._reason: EndReason | None = None
        self._usage: Usage | None = None
        self._failed_tools = 0
        self._waiting = False
        self._ahead: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._pending: asyncio.TimerHandle | None = None
        self._rendered_at = float("-inf")
        self._doing: tuple[str, str | None, str | None] | None = None
        self._moved_at = float("-inf")
        if begun is not None:
            self._started = begun
        self.widget = (make or _line_widget)(self._value() if begun is not None else "")
        self._unsubscribe = agent_store.subscribe(self._on_state)
        if begun is not None:
            self._rendered_at = time.monotonic()
            self._schedule()

    @property
    def active(self) -> bool:
        return self._started is not None and self._ended is None

    @property
    def queued(self) -> bool:
        """Showing that the turn waits for others."""
        return self._waiting and self._started is None

    @property
    def elapsed_s(self) -> float | None:
        """Seconds from begin to end (or to now while active); None before begin."""
        if self._started is None:
            return None
        return (self._ended or self.clock()) - self._started

    def waiting(self, ahead: int | None = None) -> None:
        """Queued behind other turns (`ahead` of them, when known)."""
        self._waiting, self._ahead = True, ahead
        self._render()

    def begin(self, at: float | None = None) -> None:
        """The turn started (`at`, on this line's clock, when it started before the line existed)."""
        started = self.clock() if at is None else at
        self._started, self._ended, self._reason, self._usage, self._waiting = started, None, None, None, False
        self._render()
        self._schedule()

    def end(self, reason: EndReason, usage: Usage | None, *, failed_tools: int = 0) -> None:
        """The turn ended; `failed_tools`: its tool calls that failed (the line then says so)."""
        if self._started is None:
            self._started = self.clock()
        self._ended, self._reason, self._usage = self.clock(), reason, usage
        self._failed_tools = failed_tools
        self._cancel()
        self._render()

    def moved(self) -> None:
        """The answer's text moved on screen: while it keeps moving it is the progress, and the
        elapsed-time tick is skipped (each tick is an update of the whole line to the frontend;
        at a model's pace they cost ~0.4x the answer's bytes). What the agent does still shows."""
        self._moved_at = self.clock()

    def text(self) -> str:
        """The line as plain text (what the widget shows)."""
        return self._line()[0]

    def _line(self) -> tuple[str, ToolWait | None]:
        """The line's text, and what the agent waits for the user to answer (None: nothing)."""
        wait = running_tool(self._store.get())
        waits = wait if wait is not None and wait.waits_for_user else None
        if self._started is None:
            if not self._waiting:
                return "", None
            queued = f"◷ Queued ({self._ahead} ahead)" if self._ahead else "◷ Waiting for the previous turn…"
            if waits is None:
                return queued, None
            caller = self._store.get().caller  # an outside agent's call is in no cell
            ahead, where = (
                ("the turn ahead", ", in its cell above") if caller is None else (f"{caller}'s call ahead", "")
            )
            blocker = (
                f"{ahead} waits for your approval to run {waits.tool}{where}"
                if waits.approval
                else f"{ahead} waits for your answer on {waits.where}"
            )
            return f"{queued}: {blocker}", waits
        elapsed = f"{(self._ended or self.clock()) - self._started:.1f} s"
        if self._ended is not None:
            parts = [ending_text(self._reason or "complete", self._failed_tools), elapsed, usage_text(self._usage)]
            return " · ".join(p for p in parts if p), None
        state = self._store.get()
        status = state.status
        if status == "processing":
            doing = tool_text(wait, state.caller)
        elif status == "responding":
            doing = "✎ Responding…"
        elif status == "error":
            doing = "⚠ Error"
        else:
            doing = "◷ Sending…"
        return f"{doing} {elapsed}", waits

    def close(self) -> None:
        self._cancel()
        self._unsubscribe()

    def _on_state(self, state: AgentState) -> None:
        # Only what the agent is doing changes the line here; the elapsed time moves on the tick.
        doing = (state.status, state.active_tool, state.caller)
        if state.status == "idle" and self.active:
            return  # the turn is finishing: its end is shown next (it is not "Sending…")
        if (self.active or self.queued) and doing != self._doing:  # queued: what the turn ahead waits for
            self._doing = doing
            self._render_soon()

    def _render_soon(self) -> None:
        """Render now, or once `MIN_RENDER_INTERVAL_S` has passed since the last render."""
        if self._pending is not None:
            return  # already due: it shows the state of its time
        wait = self._rendered_at + MIN_RENDER_INTERVAL_S - time.monotonic()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            wait = 0.0
        if wait <= 0:
            self._render()
        else:
            self._pending = loop.call_later(wait, self._render_due)

    def _render_due(self) -> None:
        self._pending = None
        if self.active or self.queued:  # queued: what the turn ahead waits for came within the interval
            self._render()

    def _render(self) -> None:
        self._rendered_at = time.monotonic()
        value = self._value()
        if value != self.widget.value:
            self.widget.value = value

    def _value(self) -> str:
        """The widget's HTML for the line now."""
        text, waits = self._line()
        value = f'<span class="agentik-status"{self._style}>{escape(text)}</span>'
        if waits is not None:
            value += goto_html("approval" if waits.approval else "answer")
        return value

    def _schedule(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(TICK_S, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self.active:
            if self.clock() - self._moved_at >= TICK_S:
                self._render()
            self._schedule()

    def _cancel(self) -> None:
        for timer in (self._timer, self._pending):
            if timer is not None:
                timer.cancel()
        self._timer = self._pending = None


def _line_widget(value: str) -> HTML:
    return html(value, "flex")


class ErrorBanner:
    """Shows chat_store.error until it is cleared; Dismiss clears it."""

    def __init__(self, chat_store: ChatStore) -> None:
        self._store = chat_store
        self.message = HTML(value="", layout=Layout(flex="1 1 auto"))
        self.dismiss = Button(description="Dismiss", tooltip="Clear the error", layout=Layout(width="auto"))
        self.dismiss.on_click(main_thread_callback(lambda _: self._store.set_error(None)))
        self.widget = HBox(
            children=(self.message, self.dismiss),
            layout=Layout(display="none", **look.ERROR_BANNER_FRAME),
        )
        self.widget.add_class("agentik-error-banner")  # the theme's error look (labextension/style/index.css)
        self._unsubscribe = chat_store.subscribe(self._on_state)
        self._show(chat_store.error)

    @property
    def visible(self) -> bool:
        return self.widget.layout.display != "none"

    def close(self) -> None:
        self._unsubscribe()

    def _on_state(self, state: ChatState) -> None:
        self._show(state.error)

    def _show(self, error: str | None) -> None:
        text = (
            "" if error is None else f'<span class="agentik-error" style="{look.ERROR_TEXT}">⚠ {escape(error)}</span>'
        )
        if self.message.value != text:
            self.message.value = text
        display = "none" if error is None else "flex"
        if self.widget.layout.display != display:
            self.widget.layout.display = display
