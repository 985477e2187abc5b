"""The view of one `%%agent` cell's turn, and the transcript it leaves behind.

Live: the question, the streamed answer, tool cards, approval cards, a status
line and Stop, as few widgets as that takes (one box holds them all; layouts and
styles are shared). When the turn ends the live parts give way to a static
transcript (`transcript_bundle`) so the notebook still shows the conversation
without a kernel: in `wait` mode `finish()` displays it as a real cell output (the
cell is still running, so nbclient records it); otherwise it goes into an Output
widget. The live widgets are then closed: a finished turn holds only its Rewind control
(widgets/turn_rewind.py), which takes the view's place (`--wait`) or `rewind_at` (a place the
magic displayed below the view, whose own place the transcript takes). When our lab extension
draws it (notebook/page.py `rewind_output`), that Rewind is a plain output (widgets/rewind_output.py)
and a `--wait` view's place holds no widget at the end either: a saved notebook then has no
widget under its agent cells to show as "model not found" after a kernel restart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ipywidgets import Box, HBox, Output, VBox, Widget

from agentik_jupyter.core.mainloop import main_thread_callback
from agentik_jupyter.core.store import ChatState
from agentik_jupyter.notebook import page as frontend
from agentik_jupyter.tools.modes import label
from agentik_jupyter.types import (
    AppendText,
    ChatMessage,
    End,
    EndReason,
    ErrorEvent,
    Event,
    StartResponse,
    ToolCallEvent,
    Usage,
)
from agentik_jupyter.widgets.approval_card import ApprovalCard
from agentik_jupyter.widgets.body import TurnBody, question_html
from agentik_jupyter.widgets.cards import Joined
from agentik_jupyter.widgets.cell_outputs import CellOutputs
from agentik_jupyter.widgets.live_status import LiveStatus
from agentik_jupyter.widgets.live_text import LiveText
from agentik_jupyter.widgets.plain_stream import HOLD_S
from agentik_jupyter.widgets.plan_card import PlanCard, card_for
from agentik_jupyter.widgets.protocol import ApprovalRequestLike, SessionLike
from agentik_jupyter.widgets.publish import clear_outputs_at_next, display_now, publish_stream, update_now
from agentik_jupyter.widgets.rewind_output import REWIND_MIME, rewind_bundle
from agentik_jupyter.widgets.rewound import at_handle, in_output, show_when_rewound
from agentik_jupyter.widgets.shared import (
    LIVE_CLASSES,
    box,
    button,
    html,
    layout,
    placeholder,
    retire,
    view_bundle,
)
from agentik_jupyter.widgets.status import StatusLine
from agentik_jupyter.widgets.transcript import TRANSCRIPT_MIME, transcript_bundle
from agentik_jupyter.widgets.turn_rewind import TurnRewind, rewind_control

__all__ = ["TurnView", "transcript_bundle", "TRANSCRIPT_MIME", "VIEW_TEXT", "PLACE_TEXT"]

VIEW_TEXT = "Agent turn (live view; a transcript replaces it when the turn ends)"
"""The text form of a background cell's view: under nbclient it is the cell's only saved output."""
PLACE_TEXT = ""
"""The text form of a `--wait` cell's view place: none. Its transcript follows it in the cell, and
where widgets don't render (an untrusted notebook, GitHub, nbviewer) any text here would be a stray
line above the transcript; without one the place shows nothing there."""
LIVE_AFTER_S = 0.1
"""A view shown by `show` builds its widgets only if its turn still runs this long after its
answer was requested, or `FIRST_WORDS_S` after its first words (or at once when something
needs them first: a call of a tool that may hold the kernel's loop, an approval, a turn
queued behind others). A turn that ends sooner
would show a live view for less time than anyone can see (0.1 s is the usual bound for
"instant"), so its widgets are never opened and closed: its place in the output is the
kernel's one shared empty box (displayed at once, so the cell's outputs are the same either
way, as nbval compares them), which a view that is built replaces in place."""
FIRST_WORDS_S = 0.005
FIRST_WORDS_MAX_CHARS = 100
"""A view not built yet is built `FIRST_WORDS_S` after its answer's first words if the turn
still runs then and no more than FIRST_WORDS_MAX_CHARS of answer came by then (the adapter
hands over every arrival of the first words' `FREE_S`, so the count is what was read): a model
that starts answering at once but streams at its pace (a few tokens in that time) shows its
first words at once instead of `LIVE_AFTER_S` after the request, while an answer read in a
burst (hundreds of characters in milliseconds) is about to end, and is left to `LIVE_AFTER_S`
(its turn opens no widget)."""
Displayer = Callable[[dict[str, Any]], None]


def _display_bundle(bundle: dict[str, Any]) -> None:
    display_now(bundle, raw=True)


def bare(widget: Widget) -> dict[str, Any]:
    """A widget's bundle without text: a viewer without widgets shows nothing, and the cell's text
    outputs (what nbval compares) are those of a cell without it."""
    return view_bundle(widget)


def close_tree(widget: Widget) -> None:
    """Close a widget and the boxes under it (frees the kernel-side models)."""
    if isinstance(widget, Box):
        for child in widget.children:
            close_tree(child)
    widget.close()


class TurnView:
    """One turn's live view. Display it before the cell returns; it follows its own turn only.

    It starts following events at once if the session is idle; if another turn is
    running it waits for `attach()` (the turn's `on_start`), or else for a user message
    equal to `question`. The turn's messages are those after its own user message, found
    by id when the answer starts.

    With `show`, the view displays itself through it at once (the handle `show` returns
    updates that place), and a view of a turn that starts at once is built only if the turn
    still runs `LIVE_AFTER_S` after its answer was requested, or a moment after its first
    words come at a model's pace (`FIRST_WORDS_S`; the events before that are handed to it
    then); a `wait` view renders its transcript while the session writes the
    turn to its file.
    """

    def __init__(
        self,
        session: SessionLike,
        question: str,
        *,
        wait: bool = False,
        display: Displayer | None = None,
        show: Callable[[TurnView], Any] | None = None,
        rewind_at: Displayer | None = None,
        clock: Callable[[], float] = time.monotonic,
        outputs: CellOutputs | None = None,
        mode: str | None = None,
    ) -> None:
        """`rewind_at` shows the turn's Rewind (a bundle) when the turn ends (by default: in the
        view's place, for a `show` view, or below the transcript in the view's own box).
        `outputs`: a running cell's other outputs, watched: a `wait` view given them streams its
        answer as the cell's text output (frontends without our extension) and, at the end,
        clears the cell and shows them again above its transcript (widgets/plain_stream.py)."""
        self.session = session
        self.question = question
        self.mode = mode  # the turn's mode as the header says it (Ask, Agent, Auto, Plan)
        self.wait = wait
        self.clock = clock
        self._display = display or _display_bundle
        self._display_given = display is not None
        self._transcript_at: Any = None  # the transcript's display handle (a `--wait` cell's)
        self._show = show
        self._rewind_at = rewind_at
        self._outputs = outputs
        self.rewind: TurnRewind | None = None
        self._rewind_shown = False  # the Rewind output (rewind_output.py) was shown
        self._built = False
        self._started_at: float | None = None
        self.output: Output | None = None
        self.armed = False
        self.started = False
        self.ended = False
        self.reason: EndReason | None = None
        self.usage: Usage | None = None
        self.bundle: dict[str, Any] | None = None
        self._displayed = False
        self._baseline: set[str] = {m.id for m in session.chat_store.messages}
        self._user_id: str | None = None
        self.task: asyncio.Future[Any] | None = None
        self._ending: tuple[list[ChatMessage], str | None, float | None] | None = None
        self._early: list[Event] = []  # the events before a deferred build
        self._early_chars = 0  # answer text that came before the build
        self.errors: list[str] = []
        self.widget: Box | None = None
        self._joined: Joined | None = None  # the header's widget with the cards after it (no extension)
        self._place: Any = None  # where `show` put the view (a display handle)
        self._text = PLACE_TEXT if show is not None else VIEW_TEXT
        waiting = bool(session.busy or session.queued)
        if show is None or waiting:
            self.build()
        if show is not None:  # the cell's output has the view's place from the start, filled or not
            self._place = show(self)
        self._unsubscribe = [session.on_event(self._on_event), session.chat_store.subscribe(self._on_chat)]
        if waiting:
            self.status.waiting()
        else:
            self.attach()

    def _bundle(self, widget: Widget) -> dict[str, Any]:
        bundle = view_bundle(widget)
        if self._text:
            bundle["text/plain"] = self._text
        return bundle

    def build(self) -> None:
        """Create the widgets (once) in the view's box; a started turn's line counts from its start."""
        if self._built:
            return
        self._built = True
        begun = (self.clock() if self._started_at is None else self._started_at) if self.started else None
        if frontend.live_text():  # our extension: the line with Stop, the question with the answer: a widget each
            self.status = StatusLine(
                self.session.agent_store,
                clock=self.clock,
                begun=begun,
                make=lambda value: LiveStatus(value=value, disabled=not self.armed, layout=layout("plain")),
                inline=False,  # (our extension's CSS styles it)
            )
            self.stop_button = self.footer = self.status.widget
            live: LiveText | None = LiveText(
                head=question_html(self.question, inline=False, mode=self.mode), layout=layout("tight")
            )
            self.header = live
        else:
            self.status = StatusLine(self.session.agent_store, clock=self.clock, begun=begun)
            self.stop_button = button("Stop", icon="stop", disabled=not self.armed, tooltip="Stop this turn")
            self.footer = box(HBox, (self.status.widget, self.stop_button))
            live = None
            self.header = html(question_html(self.question, mode=self.mode))
            self._joined = Joined(self.header, self.header.value)  # (the first tool cards go in it)
        # A running `--wait` cell without our extension: the answer as the cell's text output.
        plain = publish_stream if self._deferred and self._outputs is not None and not frontend.live_text() else None
        self.stop_button.on_click(main_thread_callback(lambda _: self.stop()))
        self.widget = root = box(VBox, (self.header, self.footer), layout_name="live", classes=LIVE_CLASSES)
        self.body = TurnBody(
            clock=self.clock,
            frame=(root, (self.header,), (self.footer,)),
            live=live,
            agent_store=self.session.agent_store,
            plain=plain,
            joined=self._joined,
        )
        if self._place is not None:  # shown as the placeholder so far: the view takes its place
            update_now(self._place, self._bundle(root))
        if self.started:  # (the line opened showing it)
            self.body.handle(StartResponse())
        self.body.plain_hold_s = 0.0  # (text that came before the view: the turn runs on, show it)
        for event in self._early:
            self.body.handle(event)
        self._early = []
        self.body.plain_hold_s = HOLD_S

    def _build_later(self) -> None:
        try:
            asyncio.get_running_loop().call_later(LIVE_AFTER_S, self._build_if_running)
        except RuntimeError:
            self.build()

    def _early_text_timer(self) -> None:
        try:
            asyncio.get_running_loop().call_later(FIRST_WORDS_S, self._build_if_streaming)
        except RuntimeError:
            pass

    def _build_if_streaming(self) -> None:
        if self._early_chars <= FIRST_WORDS_MAX_CHARS:
            self._build_if_running()

    def _build_if_running(self) -> None:
        if not self.ended:
            self.build()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The built view, or for a `show` view not built yet the shared empty box: a `--wait`
        cell's outputs are then the same (for nbval) whether or not its view was built."""
        if self._show is None:
            self.build()
        return self._bundle(self.widget if self.widget is not None else placeholder())

    # ---- wiring ----

    def attach(self) -> None:
        """Follow the session's events from now on (the magic may call it right before the turn)."""
        if not self.armed and not self.ended:
            self.armed = True
            self._baseline = {m.id for m in self.session.chat_store.messages}
            if self._built:
                self.stop_button.disabled = False

    def track(self, task: asyncio.Future[Any]) -> None:
        """Follow this turn's task: its place in the queue, and its end without an End event."""
        self.task = task
        task.add_done_callback(self._task_done)
        self._unsubscribe.append(self.session.on_queue(self._on_queue))
        self._on_queue()

    def stop(self) -> bool:
        """Stop this turn: take it out of the queue, or stop it if it runs."""
        if self.ended:
            return False
        if self.task is not None:
            return self.session.cancel(self.task)
        return self.session.stop() if self.armed else False

    def _on_queue(self) -> None:
        ahead = self.session.ahead_of(self.task) if self.task is not None else None
        if ahead is not None and not self.ended and (ahead or (self._built and self.status.queued)):
            self.build()  # (none ahead: it starts now)
            self.status.waiting(ahead)
            self.stop_button.disabled = False

    def present_approval(self, request: ApprovalRequestLike) -> ApprovalCard | PlanCard:
        """Show an approval card in this turn (the session's approval_presenter)."""
        card = card_for(request)  # an approval's, or a plan's (tools/plan.py)
        self.build()
        self.body.add(card.widget)
        return card

    def _on_chat(self, state: ChatState) -> None:
        if self.started or self.task is not None:  # its turn is known: no question to look for
            return
        for m in state.messages:
            if m.id in self._baseline:
                continue
            self._baseline.add(m.id)
            if m.role == "user" and not self.started and self.task is None:
                # No queue to follow (a view made by hand): the question's text tells its turn.
                if m.content == self.question or m.content.startswith(self.question + "\n\n"):  # + @mentions
                    self.attach()
                elif self.armed:
                    self.armed = False
                    self.build()  # (another turn runs first: this one shows that it waits)
                    self.stop_button.disabled = True
                    self.status.waiting()

    def _on_event(self, event: Event) -> None:
        if not self.armed or self.ended:
            return
        if isinstance(event, StartResponse) and self.mode is not None:
            self._sync_mode()
        if isinstance(event, StartResponse) and not self.started:
            self.started = True
            # This turn's user message is the newest one now (a resume inside the turn's
            # `prepare` loaded earlier turns before it): its messages are the ones after it.
            users = [m.id for m in self.session.chat_store.messages if m.role == "user"]
            self._user_id = users[-1] if users else None
            if not self._built:  # built only if the turn is still running a moment later
                self._started_at = self.clock()
                self._build_later()
                return
            self.status.begin()
        if isinstance(event, ErrorEvent):
            self.errors.append(event.message)
        if self._built or not self._can_wait(event):
            self.build()
            self.body.handle(event)
            if type(event) is AppendText and not event.reasoning:
                self.status.moved()  # the streaming answer is the progress: no elapsed-time tick
        else:
            if type(event) is AppendText and not event.reasoning:
                if not self._early_chars:
                    self._early_text_timer()
                self._early_chars += len(event.text)
            self._early.append(event)
        if isinstance(event, End):
            self._conclude(event.reason, event.usage)

    def _sync_mode(self) -> None:
        """The header says the mode the turn asks in: a resumed session's (known once the turn began),
        or the plan's once the user ran it."""
        mode = getattr(getattr(self.session, "orchestrator", None), "mode", None)
        if mode is None or label(mode) == self.mode:
            return
        self.mode = label(mode)
        if not self._built:
            return  # (built later with it)
        header: Any = self.header  # (a LiveText with our extension, else an HTML)
        if isinstance(header, LiveText):
            header.head = question_html(self.question, inline=False, mode=self.mode)
        elif self._joined is not None:
            self._joined.head = question_html(self.question, mode=self.mode)
            self._joined.render()

    @property
    def _deferred(self) -> bool:
        """A shown `wait` view: its widgets may be built late, or never."""
        return self.wait and self._show is not None

    def _can_wait(self, event: Event) -> bool:
        """Whether the live view may still be left unbuilt: not once a tool that may hold the
        kernel's loop is called (the deferred build could not run while it works)."""
        if not self._deferred:
            return False
        if isinstance(event, ToolCallEvent):
            return not self.session.tool_holds_loop(event.call.name)
        return True

    def _task_done(self, task: asyncio.Future[Any]) -> None:
        if self.ended:
            return
        if task.cancelled():
            self._conclude("interrupted", None)
            return
        exc = task.exception()
        if exc is not None:
            message = f"{type(exc).__name__}: {exc}"
            self.errors.append(message)
            if self._built:
                self.body.handle_error(message)
            self._conclude("error", None)
        else:
            # a turn taken out of the queue never started: its outcome says how it ended
            reason = getattr(task.result(), "reason", None)
            self._conclude(self.reason or reason or "complete", None)

    # ---- the end ----

    def _conclude(self, reason: EndReason, usage: Usage | None) -> None:
        if not self._deferred:  # (a deferred view may end unbuilt)
            self.build()
        self.ended = True
        self.reason, self.usage = reason, usage
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        elapsed: float | None = None
        if self._built:
            self.body.finish(exact=False)  # the transcript shows the exact text; no re-render here
            self.status.end(reason, usage, failed_tools=self.body.failed_tools)
            self.status.close()
            elapsed = self.status.elapsed_s
        elif self._started_at is not None:
            elapsed = self.clock() - self._started_at
        self._ending = (
            self._turn_messages(),
            self.errors[-1] if self.errors else None,
            elapsed if self.started else None,
        )
        if not self.wait:  # (a waiting view is closed by `finish()` right after)
            self.stop_button.disabled = True
            self._show_in_output(self._make_bundle())
        elif self._deferred:
            try:  # rendered while the session writes the turn to its file; `finish()` takes it
                asyncio.get_running_loop().call_soon(self._make_bundle)
            except RuntimeError:
                self._make_bundle()
        else:
            self._make_bundle()

    def _turn_messages(self) -> list[ChatMessage]:
        if not self.started:
            return []
        messages = list(self.session.chat_store.messages)
        ids = [m.id for m in messages]
        start = ids.index(self._user_id) + 1 if self._user_id in ids else len(messages)
        return [m for m in messages[start:] if m.role != "user"]

    def _make_bundle(self) -> dict[str, Any]:
        """The transcript of the turn as it ended (once)."""
        if self.bundle is None:
            assert self._ending is not None
            messages, error, elapsed = self._ending
            self.bundle = transcript_bundle(
                messages,
                question=self.question,
                status=self.reason,
                usage=self.usage,
                error=error,
                elapsed_s=elapsed,
                mode=self.mode,  # as the header said it: the transcript takes its place without a jump
                rendered=self.body.rendered if self._built else None,
            )
        return self.bundle

    def _show_in_output(self, bundle: dict[str, Any]) -> None:
        root = self.widget
        assert root is not None  # (a view that does not wait is built at once)
        live = list(root.children)
        self.output = Output(layout=layout("plain"))
        self.output.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)
        root.children = (self.output,)
        root.remove_class(LIVE_CLASSES[0])  # the transcript inside has the same frame
        root.layout = layout("plain")
        for w in live:
            retire(w)
        self._watch_rewind()
        self._add_rewind()

    def _show_transcript(self, bundle: dict[str, Any]) -> None:
        """The transcript as the cell's output: where `display` puts it, else with a display id."""
        if self._display_given:
            self._display(bundle)
        else:
            self._transcript_at = display_now(bundle, raw=True, display_id=True)
        self._watch_rewind()

    def _watch_rewind(self) -> None:
        """This turn's transcript, shown again marked when the turn is rewound (widgets/rewound.py)."""
        if self.output is not None:
            show: Any = in_output(self.output)
        elif self._transcript_at is not None:
            show = at_handle(self._transcript_at)
        else:
            show = self._display if self._display_given else None
        if show is not None and self.started and self._ending is not None:
            messages, error, elapsed = self._ending
            kept = dict(question=self.question, status=self.reason, usage=self.usage, error=error, elapsed_s=elapsed)
            show_when_rewound(self.session, self._user_id, show, messages, **kept)

    def _add_rewind(self) -> None:
        """The turn's Rewind control, once it ended (a turn never saved or never started has none)."""
        if frontend.rewind_output() and (self._rewind_at is not None or self._place is not None):
            self._add_rewind_output()
            return
        if self.rewind is not None or not self.started:
            return
        shows_html = self._rewind_at is not None or self._place is not None
        self.rewind = rewind_control(
            self.session,
            self._user_id,
            lambda _old, new: self._show_rewind(new),
            note_at=self._show_rewind_note if shows_html else None,
        )
        if self.rewind is not None:
            self._show_rewind(self.rewind.widget)

    def _add_rewind_output(self) -> None:
        """The Rewind our extension draws, below the transcript (once). A turn without one (never
        started, never saved) leaves its place empty: no widget in it."""
        if self._rewind_shown:
            return
        self._rewind_shown = True
        saved = self.started and not getattr(self.session, "temporary", False)
        conversation = getattr(self.session, "conversation_id", None) if saved else None
        bundle = rewind_bundle(conversation, self._user_id)
        if self._rewind_at is not None:
            self._rewind_at(bundle)
            return
        # a `--wait` view (the cell still runs): its place now holds nothing, and the Rewind follows
        # the transcript, at the end of the turn as in a background cell
        update_now(self._place, rewind_bundle())
        if bundle[REWIND_MIME]:
            self._display(bundle)

    def _show_rewind(self, widget: Widget) -> None:
        if self._rewind_at is not None:
            self._rewind_at(bare(widget))
        elif self._place is not None:
            update_now(self._place, self._bundle(widget))
        elif self.widget is not None and self.output is not None:
            self.widget.children = (self.output, widget)

    def _show_rewind_note(self, note: str) -> None:
        """Why the turn can no longer be rewound, as plain HTML where its Rewind was (no widget)."""
        bundle = {"text/html": note} if note else {}
        if self._rewind_at is not None:
            self._rewind_at(bundle)
        elif self._place is not None:
            update_now(self._place, bundle)

    def finish(self) -> dict[str, Any]:
        """Display the transcript as a cell output (call it while the cell still runs) and
        hide the live view. Idempotent; concludes the view first if the turn never ended."""
        if not self.ended:
            self.wait = True
            self._conclude(self.reason or "interrupted", None)
        bundle = self._make_bundle()
        if not self._displayed:
            self._displayed = True
            outputs, self._outputs = self._outputs, None
            if outputs is not None:
                outputs.stop()
            cleared = self._built and self.body.streamed_plain and self._place is not None and outputs is not None
            if cleared and outputs is not None:
                # the answer's text output goes; the place (empty) and the cell's other outputs come back
                clear_outputs_at_next()
                outputs.replay(self._place.display_id, self._bundle(placeholder()))
            self._show_transcript(bundle)
            if self.widget is not None:
                if not cleared:  # (a cleared view is no longer shown)
                    self.widget.layout = layout("hidden")
                retire(self.widget)
            self._add_rewind()
        return bundle
