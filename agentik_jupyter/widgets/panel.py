"""The chat panel: the whole conversation, a text box to continue it, Stop, status, errors.

History is rendered from chat_store.messages (so a resumed session shows at
once); a running turn is rendered from its events (streamed, throttled). A resumed
long session shows its latest page; "Show older" puts the page before it on top,
rendering only the new messages. Typing `@` in the box suggests the kernel's variables;
the Image button attaches images to the next question (shown as thumbnails with it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ipywidgets import HTML, Box, Button, HBox, Layout, Text, VBox, Widget

from agentik_jupyter.core.compaction import is_compaction
from agentik_jupyter.core.mainloop import main_thread_callback
from agentik_jupyter.core.rewind import REWOUND_PREFIX
from agentik_jupyter.core.store import ChatState
from agentik_jupyter.notebook import page as frontend
from agentik_jupyter.notebook.attachments import shown_text
from agentik_jupyter.notebook.cells import CellAnchor, anchored
from agentik_jupyter.notebook.requests import asked_from, asking_page
from agentik_jupyter.persistence import INTERRUPTED_MESSAGE
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.tools.modes import PLAN_TOOL, STEP_TOOL
from agentik_jupyter.types import (
    ChatMessage,
    End,
    Event,
    ImagePart,
    StartResponse,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    ToolResultEvent,
)
from agentik_jupyter.widgets.approval_card import ApprovalCard
from agentik_jupyter.widgets.attach_images import ImageAttach, thumbnails_html
from agentik_jupyter.widgets.body import TurnBody, error_html, question_html
from agentik_jupyter.widgets.cards import ToolCard
from agentik_jupyter.widgets.markdown import escape, render_markdown
from agentik_jupyter.widgets.mode_picker import ModePicker
from agentik_jupyter.widgets.plan_card import PlanCard, SavedPlan, card_for, saved_plan_html
from agentik_jupyter.widgets.protocol import ApprovalRequestLike, SessionLike
from agentik_jupyter.widgets.rewind_control import RewindControl
from agentik_jupyter.widgets.shared import ACCEPT_CLASSES, ANSWER_CLASSES, PLAIN_CLASSES, button_style
from agentik_jupyter.widgets.status import STOPPED, ErrorBanner, StatusLine, totals_text
from agentik_jupyter.widgets.suggestions import MentionSuggestions
from agentik_jupyter.widgets.turn_rewind import TurnRewind, rewind_control
from agentik_jupyter.widgets.turn_view import close_tree

PANEL_TEXT = "Agent chat panel"
PANEL_MIME = "application/vnd.agentik.panel+json"
"""Beside the panel's widget in its output, when our extension draws it (notebook/page.py): the
session shown. Once the widget's model is gone (a kernel restart, the notebook opened again later)
the extension draws that session's transcript from the sessions file there, with Resume, instead of
"Error displaying widget: model not found" (labextension/src/panel.ts)."""
SCROLLER_HEIGHT = "min(40em, 60vh)"  # the whole panel fits a laptop's notebook window
SUBMIT_SETTLE_S = 0.5


QUESTION_THUMB_CSS = "max-height:8em;max-width:16em;margin:4px 4px 0 0;border-radius:3px"


def user_html(text: str, images: list[ImagePart] | None = None) -> str:
    """The user's bubble: what they asked, without what was attached for the model (@mentions, a fix's
    details), with the images sent with it as thumbnails."""
    bubble = question_html(shown_text(text))
    if not images:
        return bubble
    return bubble + f'<div class="agentik-question-images">{thumbnails_html(images, QUESTION_THUMB_CSS)}</div>'


STOPPED_HTML = f'<div class="agentik-stopped">{STOPPED}</div>'
EMPTY_HTML = (
    '<div class="agentik-empty" style="opacity:0.8;text-align:center;padding:1em">'
    "<b>No messages yet.</b> Ask below (Enter sends), or in a <code>%%agent</code> cell: this session's "
    "cell turns show here too.<br>Image sends pictures with your question; each turn ends with its own "
    "Rewind, and Rewind beside Send takes back the latest.</div>"
)
"""The error a stopped turn leaves in the audit log (`SessionDB.interrupt_turn`, code "interrupted"):
a resumed transcript shows it as the same mark the live turn got, not as a failure."""


log = logging.getLogger(__name__)


def any_turn_left(messages: tuple[ChatMessage, ...]) -> bool:
    """Whether a turn among `messages` was not rewound: each rewound turn left one record (in the
    order the rewinds were made, not always right after its turn)."""
    turns = sum(1 for m in messages if m.role == "user")
    rewound = sum(1 for m in messages if m.error is not None and m.error.startswith(REWOUND_PREFIX))
    return turns > rewound


class ChatPanel:
    """`display(ChatPanel(session))`; set `session.approval_presenter = panel.present_approval`."""

    def __init__(self, session: SessionLike, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.session = session
        self.clock = clock
        self.title = HTML(value=self._title_html())
        self.older_button = Button(description="Show older", icon="history", layout=Layout(display="none"))
        self.older_button.on_click(main_thread_callback(lambda _: self.show_older()))
        # The transcript scrolls inside a box of fixed height, as a chat pane does: a reply
        # that grew the box would push itself and the text box below the window where the
        # user typed. `history` (the messages, top to bottom) must not be a flex child that
        # shrinks: inside a height-capped flex column its items were squeezed and overlapped
        # instead of scrolling. The reversed column starts at the bottom, so the view stays
        # pinned to the newest message as the answer streams, while a user who scrolled up to
        # read keeps their place (the browser anchors it); no JavaScript needed.
        self.history = VBox(layout=Layout(flex="0 0 auto"))
        # what the pane says before the first message, in its middle: the box keeps its height (a first
        # answer that grew it would push the text box below the window), so it must not stand blank
        self._empty = HTML(value=EMPTY_HTML, layout=Layout(margin="auto"))
        self.scroller = Box(
            children=(self.history, self._empty),
            layout=Layout(display="flex", flex_flow="column-reverse", height=SCROLLER_HEIGHT, overflow="auto"),
        )
        self.scroller.add_class("agentik-panel-transcript")
        self.banner = ErrorBanner(session.chat_store)
        self.status = StatusLine(session.agent_store, clock=clock)
        self.notice = HTML(value="")
        self.totals = HTML(value="")  # the session's running total of tokens
        self.totals.add_class("agentik-totals")
        self.input = Text(
            placeholder="Ask the agent… (Enter sends)", continuous_update=True, layout=Layout(flex="1 1 auto")
        )
        # Widget messages may arrive on a kernel subshell's thread: hand them to the main loop.
        self.input.on_msg(main_thread_callback(self._on_input_msg))
        self.input.observe(main_thread_callback(self._on_input_value), names="value")
        self.suggestions = MentionSuggestions(self.input, lambda: session.name_suggester)
        self._submit_due = False
        self._submit_timer: asyncio.TimerHandle | None = None
        # JupyterLab's accept / plain buttons (index.css), as the cards', not ipywidgets' own colours
        self.send_button = Button(
            description="Send", icon="paper-plane", _dom_classes=ACCEPT_CLASSES, style=button_style("accept")
        )
        self.send_button.on_click(main_thread_callback(lambda _: self._on_send_click()))
        self.stop_button = Button(
            description="Stop", icon="stop", disabled=not session.busy, _dom_classes=PLAIN_CLASSES
        )
        self.stop_button.on_click(main_thread_callback(lambda _: self.session.stop()))
        self.rewind = RewindControl(session)
        self.mode = ModePicker(session)
        self.attach = ImageAttach()
        self.widget = VBox(
            children=(
                self.title,
                self.older_button,
                self.scroller,
                self.banner.widget,
                HBox(
                    children=(
                        self.input,
                        self.attach.upload,
                        self.mode.picker,
                        self.send_button,
                        self.stop_button,
                        self.rewind.button,
                    )
                ),
                self.attach.widget,
                self.rewind.widget,
                self.suggestions.widget,
                HBox(children=(self.mode.label, self.status.widget, self.notice, self.totals)),
            )
        )
        self.widget.add_class("agentik-panel")  # where the lab extension takes pasted or dropped images
        self._usage_off = session.on_usage(self.refresh_totals) if hasattr(session, "on_usage") else None
        self.totals_task: asyncio.Task[Any] | None = None
        self.refresh_totals()
        self.older_task: asyncio.Task[Any] | None = None
        self.last_task: asyncio.Task[Any] | None = None
        self._body: TurnBody | None = None
        self._rendered: list[str] = []
        self._cards: dict[str, ToolCard] = {}
        self._plan: tuple[SavedPlan, HTML] | None = None  # the plan a turn shown ran, ticked by plan_step
        self._plan_copies: dict[str, HTML] = {}  # a running turn's plans drawn at their call, by its id
        self._turn_rewinds: dict[str, TurnRewind] = {}  # a Rewind at the end of each turn, by its question's id
        self._last_question: str | None = None  # the newest turn's question shown (its Rewind comes at its end)
        self._render_all(session.chat_store.messages)
        self._sync_older()
        self._unsubscribe = [session.chat_store.subscribe(self._on_chat), session.on_event(self._on_event)]

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = PANEL_TEXT
        if frontend.panel_output():
            shown = None if self.session.temporary else self.session.conversation_id
            bundle[PANEL_MIME] = {"session": shown}
        return bundle

    # ---- user actions ----

    def send(self, text: str | None = None) -> asyncio.Task[Any] | None:
        """Start a turn with `text` (default: the text box) and the attached images; the box is cleared
        once it starts."""
        message = (self.input.value if text is None else text).strip()
        if self.attach.busy and self.attach.reading is not None:  # a picked image is still being fitted
            self.attach.reading.add_done_callback(lambda _: self.send(message))
            self.notice.value = "<em>Reading the image…</em>"
            if text is None:
                self.input.value = ""
            return None
        if not message and not self.attach.images:
            return None
        images = self.attach.take()
        # insert_cell proposals go below the active cell of the page whose Send this is
        with anchored(CellAnchor()), asked_from(asking_page()):
            self.last_task = self.session.start_turn(message, on_start=self._on_turn_start, images=images or None)
        ahead = self.session.ahead_of(self.last_task)
        self.notice.value = f"<em>Queued ({ahead} ahead)</em>" if ahead else ""
        if text is None:
            self.input.value = ""
        return self.last_task

    def show_older(self) -> asyncio.Task[Any] | None:
        """Load the page of history before the first message shown; it appears on top."""
        if self.older_task is not None and not self.older_task.done():
            return None
        self.older_button.disabled = True
        self.older_task = asyncio.get_running_loop().create_task(self.session.load_older())
        self.older_task.add_done_callback(self._older_loaded)
        return self.older_task

    def _older_loaded(self, task: asyncio.Task[Any]) -> None:
        self.older_button.disabled = False
        if not task.cancelled() and task.exception() is not None:
            self.notice.value = f"<em>Could not load older messages: {escape(scrub(str(task.exception())))}</em>"
        self._sync_older()

    def _sync_older(self) -> None:
        self.older_button.layout.display = "" if self.session.has_older else "none"

    def _on_turn_start(self) -> None:
        # This turn's approvals belong in this panel, not in the view of the last `%%agent`
        # cell (which set itself as the presenter for its own turn and has since ended).
        self.session.approval_presenter = self.present_approval
        self.notice.value = ""

    def _on_input_msg(self, widget: Any, content: dict[str, Any], buffers: Any) -> None:
        """Enter: send once the box has settled.

        The frontend sends one value update per widget at a time and holds the rest, but
        sends the submit event at once, so on a slow link the submit overtakes the last
        keystrokes. Waiting until no value update has arrived for SUBMIT_SETTLE_S sends
        what the user typed, not a stale prefix.
        """
        if content.get("event") == "submit":
            self._submit_due = True
            self._settle_submit()

    def _on_send_click(self) -> None:
        """Send: at once when the box holds the question. An empty box may mean the click overtook
        it (as Enter's submit can, below): then send once the box has settled, as Enter does."""
        if self.input.value.strip():
            self.send()
        else:
            self._submit_due = True
            self._settle_submit()

    def _on_input_value(self, change: dict[str, Any]) -> None:
        if self._submit_due:
            self._settle_submit()
        self.suggestions.update(str(change.get("new") or ""))

    def _settle_submit(self) -> None:
        if self._submit_timer is not None:
            self._submit_timer.cancel()
        self._submit_timer = asyncio.get_running_loop().call_later(SUBMIT_SETTLE_S, self._submit_now)

    def _submit_now(self) -> None:
        self._submit_due = False
        self._submit_timer = None
        self.send()

    def present_approval(self, request: ApprovalRequestLike) -> ApprovalCard | PlanCard:
        card = card_for(request)  # an approval's, or a plan's (tools/plan.py)
        (self._body.add if self._body is not None else self._add)(card.widget)
        return card

    def close(self) -> None:
        self.mode.close()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        if self._usage_off is not None:
            self._usage_off()
        self.banner.close()
        self.status.close()
        close_tree(self.widget)

    def refresh_totals(self) -> None:
        """Read the session's recorded tokens again (after each turn, and for a resumed session)."""
        usage = getattr(self.session, "usage", None)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if usage is not None:
            self.totals_task = loop.create_task(self._show_totals(usage))

    async def _show_totals(self, usage: Callable[[], Awaitable[list[Any]]]) -> None:
        try:
            self.totals.value = escape(totals_text(await usage()))
        except Exception:
            log.exception("could not read the session's usage")

    # ---- rendering ----

    def _title_html(self) -> str:
        title = self.session.title
        return f"<b>Agent chat</b>{' — ' + escape(title) if title else ''}"

    def _add(self, widget: Widget) -> None:
        self.history.children = (*self.history.children, widget)
        self._empty.layout.display = "none"

    def _render_all(self, messages: tuple[ChatMessage, ...]) -> None:
        old = list(self.history.children)
        self._cards = {}
        self._plan = None
        self._turn_rewinds = {}
        self._last_question = None
        self._rendered = [m.id for m in messages]
        self.history.children = tuple(self._widgets(messages, ended=not self.session.busy))
        self._empty.layout.display = "none" if self.history.children else ""
        self._sync_rewind()
        for w in old:
            close_tree(w)

    def _sync_rewind(self) -> None:
        """Rewind beside Send is offered only while a turn can be taken back (not in an empty panel)."""
        temporary = bool(getattr(self.session, "temporary", False))
        can = not temporary and (self.session.has_older or any_turn_left(self.session.chat_store.messages))
        self.rewind.button.disabled = not can

    def _widgets(self, messages: tuple[ChatMessage, ...] | list[ChatMessage], ended: bool = False) -> list[Widget]:
        """The messages' widgets, each turn followed by its Rewind (the last one's too if `ended`)."""
        out: list[Widget] = []
        question: str | None = None
        for m in messages:
            if m.role == "user":
                if question is not None:
                    self._rewind_after(question, out)
                question = m.id
            self._render_message(m, out)
        if question is not None and ended:
            self._rewind_after(question, out)
        elif question is not None and self._last_question is None:
            self._last_question = question
        return out

    def _rewind_after(self, question: str, out: list[Widget]) -> None:
        """The Rewind of the turn asked by `question`, once (a turn never saved has none)."""
        if question in self._turn_rewinds:
            return
        # a rewound turn says so once, in the line its record left (`_render_message`)
        control = rewind_control(self.session, question, self._swap, quiet_rewound=True)
        if control is not None:
            self._turn_rewinds[question] = control
            out.append(control.widget)

    def _render_message(self, m: ChatMessage, out: list[Widget]) -> None:
        if m.role == "user":
            out.append(HTML(value=user_html(m.content, m.images)))
        elif m.role == "assistant":
            if m.error == INTERRUPTED_MESSAGE:
                out.append(HTML(value=STOPPED_HTML))
            elif m.error is not None and is_compaction(m.error):
                out.append(HTML(value=f'<div class="agentik-notice" style="opacity:0.75">{escape(m.error)}</div>'))
            elif m.error is not None and m.error.startswith(REWOUND_PREFIX):
                out.append(HTML(value=f'<div class="agentik-rewound" style="margin:4px 0">↶ {escape(m.error)}</div>'))
            elif m.error is not None:
                out.append(HTML(value=error_html(m.error)))
            elif m.notice is not None:
                out.append(HTML(value=f'<div class="agentik-notice"><em>{escape(m.notice)}</em></div>'))
            elif m.content:
                out.append(HTML(value=render_markdown(m.content), _dom_classes=ANSWER_CLASSES))
            for call in m.tool_calls or []:
                card = ToolCard(call)
                self._cards[call.id] = card
                out.append(card.widget)
        elif m.role == "tool" and m.tool_result is not None:
            result = m.tool_result
            existing = self._cards.get(result.tool_call_id)
            if existing is None:
                existing = ToolCard(ToolCall(id=result.tool_call_id, name=result.name))
                out.append(existing.widget)
            existing.set_result(result)
            self._show_plan(existing.call, result, out)

    def _show_plan(self, call: ToolCall, result: ToolResult, out: list[Widget], drawn: HTML | None = None) -> None:
        """A plan as its card (no buttons) after propose_plan's, ticked as plan_step went: a resumed
        turn's, or a running turn's copy `drawn` at its call (`_follow_plan`)."""
        if result.name == PLAN_TOOL:
            plan = SavedPlan.of(call.args, result)
            widget = drawn if drawn is not None else HTML()
            widget.value = saved_plan_html(plan)
            if drawn is None:
                out.append(widget)
            self._plan = (plan, widget) if plan.decision == "approved" else self._plan
        elif result.name == STEP_TOOL and result.error is None and self._plan is not None:
            plan, widget = self._plan
            plan.tick(call.args)
            widget.value = saved_plan_html(plan)

    def _on_chat(self, state: ChatState) -> None:
        ids = [m.id for m in state.messages]
        shown = len(self._rendered)
        self._sync_older()
        if ids[:shown] == self._rendered:  # new messages at the end
            for m in state.messages[shown:]:
                self._rendered.append(m.id)
                if m.role == "user":  # a new turn: the one before it has ended
                    self._end_turn()
                    self._last_question = m.id
                if self._body is None or m.role == "user":  # a running turn draws its own
                    for widget in self._render_one(m):
                        self._add(widget)
        elif shown and ids[len(ids) - shown :] == self._rendered:  # an older page in front
            head = state.messages[: len(ids) - shown]
            self._rendered[:0] = [m.id for m in head]
            self.history.children = (*self._widgets(head, ended=True), *self.history.children)
        else:  # another conversation (resumed, new, switched): drawn again from its messages
            self._render_all(state.messages)
        self.title.value = self._title_html()  # (sent only when it changed)
        self._sync_rewind()

    def _swap(self, old: Widget, new: Widget) -> None:
        self.history.children = tuple(new if w is old else w for w in self.history.children)

    def _render_one(self, m: ChatMessage) -> list[Widget]:
        out: list[Widget] = []
        self._render_message(m, out)
        return out

    def _end_turn(self) -> None:
        """The newest turn ended: its Rewind goes at its end."""
        if self._last_question is not None:
            out: list[Widget] = []
            self._rewind_after(self._last_question, out)
            for widget in out:
                self._add(widget)

    def _follow_plan(self, body: TurnBody, event: Event) -> None:
        """The running turn's plan when its live card is another view's (a `%%agent` cell's, which has
        the buttons): a copy at propose_plan's call as the transcript draws it, as proposed, then as
        decided and ticked. The panel's own turn shows the live card (`present_approval`) instead."""
        if isinstance(event, ToolCallEvent) and event.call.name == PLAN_TOOL:
            if self.session.approval_presenter != self.present_approval:
                copy = HTML(value=saved_plan_html(SavedPlan.of(event.call.args, None)))
                self._plan_copies[event.call.id] = copy
                body.add(copy)
        elif isinstance(event, ToolResultEvent):
            result = event.result
            drawn = self._plan_copies.pop(result.tool_call_id, None)
            card = body.cards.get(result.tool_call_id)  # (none for a call made before the panel opened)
            if card is not None and (drawn is not None or result.name == STEP_TOOL):
                self._show_plan(card.call, result, [], drawn)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, StartResponse) and self._body is None:
            self._body = TurnBody(clock=self.clock, agent_store=self.session.agent_store)
            self._add(self._body.widget)
            self.status.begin()
            self.stop_button.disabled = False
            self._plan, self._plan_copies = None, {}  # (plan_step ticks this turn's plan only)
        if self._body is not None:
            self._body.handle(event)
            self._follow_plan(self._body, event)
        if isinstance(event, End):
            failed = self._body.failed_tools if self._body is not None else 0
            if self._body is not None:
                if event.reason == "interrupted":
                    # the status line moves on with the next turn; this mark stays with the cut-off answer
                    self._body.add(HTML(value=STOPPED_HTML))
                self._body.finish()
                self._body = None
            self._end_turn()
            self.status.end(event.reason, event.usage, failed_tools=failed)
            self.stop_button.disabled = True
            self.title.value = self._title_html()
