"""One conversation: send a turn, record it, resume it.

The session owns the stores the widgets observe and the orchestrator that
drives them, and writes every turn through to the SQLite file: the audit log as
things happen; working memory gets the question when a turn starts and the answer when it
completes. A resumed transcript is the latest page of the audit log; `load_older` puts the
page before it in front. Its turns line up and stop in turn_queue.py; a long session's budget
and usage are long_session.py's.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, cast

from agentik_jupyter.core.event_relay import EventRelay
from agentik_jupyter.core.history import HISTORY_PAGE, entries_to_messages
from agentik_jupyter.core.long_session import LongSession
from agentik_jupyter.core.orchestrator import Approver, EventListener, Orchestrator, Transport, TurnOutcome
from agentik_jupyter.core.prompt import context_note
from agentik_jupyter.core.question_images import admit_images, merged
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.core.turn_queue import TurnQueue
from agentik_jupyter.core.write_through import WriteThrough
from agentik_jupyter.ids import check_session_id
from agentik_jupyter.persistence import (
    AsyncSessionDB,
    ConversationInfo,
    ConversationNotFoundError,
    SessionDBError,
    TurnUsage,
    context_budget,
)
from agentik_jupyter.persistence.budget import first_turn_to_keep, message_tokens
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.tools.checkpoint import Checkpoints
from agentik_jupyter.tools.modes import default_mode
from agentik_jupyter.tools.registry import ToolRegistry, holds_loop
from agentik_jupyter.types import (
    AgentContext,
    AgentMode,
    ChatMessage,
    End,
    ErrorEvent,
    Event,
    ImagePart,
    Question,
    ToolResult,
    Usage,
    UserMessage,
    add_usage,
    new_id,
)

log = logging.getLogger(__name__)

Expander = Callable[[str], Awaitable["str | Question"]]
"""The question as the model gets it: with @mentions attached (a Question when they bring images)."""

ESTIMATE_MARGIN = 0.95
"""The share of the budget planned for: the estimate is within a few percent of what each wire format sends."""
EMPTY_INPUT = "Empty message: write your question in the cell body, below %%agent."
DELETED = "The session {id} was deleted; this turn starts a new session."


class Session(TurnQueue, LongSession):
    """A conversation bound to stores, an orchestrator and (unless temporary) a DB."""

    def __init__(
        self,
        transport: Transport,
        registry: ToolRegistry,
        *,
        db: AsyncSessionDB | None = None,
        conversation_id: str | None = None,
        temporary: bool = False,
        approver: Approver | None = None,
        model: str | None = None,
    ) -> None:
        super().__init__()  # the turn queue, its lock and the running turn's StopFlag
        self.chat_store = ChatStore()
        self.agent_store = AgentStore()
        self.orchestrator = Orchestrator(
            transport,
            registry,
            self.chat_store,
            self.agent_store,
            approver=approver,
            stop=self._stop,
        )
        self.db = None if temporary else db
        self.temporary = temporary
        self.conversation_id = conversation_id
        self.title: str | None = None
        self.model = model
        self.mode: AgentMode | None = None  # as the user set it (saved with the session); None: the default
        self._mode_listeners: list[Callable[[], None]] = []  # the views that show the mode (the panel's picker)
        self.approval_presenter: Callable[[Any], object] | None = None
        self.context_provider: Callable[[], AgentContext] | None = None
        self.expander: Expander | None = None  # a turn's `expand` by default
        self.name_suggester: Callable[[str], list[tuple[str, str]]] | None = None  # `@` completions
        self.last_outcome: TurnOutcome | None = None
        self.checkpoints: Checkpoints | None = None  # the kernel's namespace checkpoints, one per turn
        self._working: list[list[ChatMessage]] = []  # a temporary session's turns
        self._last_context: AgentContext | None = None  # the last question's: its note says what changed since
        self._history_cut = False  # this turn's history lost its oldest turns: its note lists every variable
        self._usages: list[TurnUsage] = []  # a temporary session's tokens per turn
        self._usage_listeners: list[Callable[[], None]] = []
        self._estimate_of: tuple[int, list[ChatMessage]] | None = None  # the last turn's overhead and history
        self._notice: str | None = None  # a compaction's one line, shown in the next turn
        self._compaction_usage: Usage | None = None  # the summary request's tokens, added to the turn's
        self._key = new_id("tmp_")  # a temporary session's cache key
        self._schema_tokens: tuple[tuple[Any, ...], int] | None = None  # the tools last counted, their tokens
        self._turn_id: str | None = None
        self._audit = WriteThrough(lambda: (self.db, self.conversation_id, self._turn_id))
        self.older_before: int | None = None  # the audit seq older history is before (None: all shown)
        self._loading_older = False
        self._events = EventRelay()  # holds an Error until its audit row is written
        self.chat_store.add_persist_hook(self._audit.message)
        self.orchestrator.on_event(self._audit.event)
        self.orchestrator.on_event(self._events)

    # ---- the protocol the widgets use ----

    def on_event(self, listener: EventListener) -> Callable[[], None]:
        return self._events.subscribe(listener)

    @property
    def has_older(self) -> bool:
        """The transcript starts after the conversation's first turn: `load_older` has more."""
        return self.older_before is not None

    async def load_older(self) -> int:
        """Put the page of history before the transcript's first turn in front of it (whole
        turns, none twice); returns how many messages it added."""
        conversation, before = self.conversation_id, self.older_before
        if self.db is None or conversation is None or before is None or self._loading_older:
            return 0
        self._loading_older = True
        try:
            page = await self.db.audit_log(conversation, limit=HISTORY_PAGE, before_seq=before, whole_turns=True)
        finally:
            self._loading_older = False
        if (self.conversation_id, self.older_before) != (conversation, before):
            return 0  # resumed another conversation meanwhile
        shown = {m.id for m in self.chat_store.messages}
        older = [m for m in entries_to_messages(page.entries) if m.id not in shown]
        self.older_before = page.next_before_seq
        self.chat_store.set_messages([*older, *self.chat_store.messages])
        return len(older)

    def tool_holds_loop(self, name: str) -> bool:
        """Whether the tool called `name` may hold the kernel's loop while it runs."""
        return holds_loop(self.orchestrator.registry.get(name))

    def start_turn(
        self,
        text: str,
        context: AgentContext | None = None,
        *,
        model: str | None = None,
        prepare: Callable[[], Awaitable[None]] | None = None,
        on_start: Callable[[], None] | None = None,
        cell_id: str | None = None,
        expand: Expander | None = None,
        images: list[ImagePart] | None = None,
        mode: AgentMode | None = None,
    ) -> asyncio.Task[TurnOutcome]:
        """Queue a turn as a task on the running loop and return at once.

        Turns run one at a time in the order they were started. `on_start` runs when
        this turn's time comes; `prepare` runs first inside the turn (opening the file,
        resuming), so a Stop or an error there ends this turn like any other. `images`
        (fitted to the budget: tools/vision.fit_image) go with the question. `mode` is this
        turn's only (`%%agent --mode`); without it the turn runs in the session's.
        """
        return self._enqueue(lambda: self._ask(text, context, model, prepare, cell_id, expand, images, mode), on_start)

    def show_event(self, event: Event) -> None:
        """Show the views (the panel) an event of a call this session's orchestrator did not make
        (an outside agent's, core/outside_calls.py): its tool card appears as our agent's do."""
        self._events(event)

    def queue_outside(
        self, run: Callable[[], Awaitable[ToolResult]]
    ) -> tuple[asyncio.Task[TurnOutcome], asyncio.Future[ToolResult]]:
        """An outside agent's call (over MCP; core/outside_calls.py) in this session's queue as a turn
        is: it waits for the turns before it and Stop ends it. Returns the queued task and the result."""
        result: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()

        async def queued() -> TurnOutcome:
            result.set_result(await run())
            return TurnOutcome(reason="complete")

        task = self._enqueue(queued, None)
        task.add_done_callback(lambda _task: None if result.done() else result.cancel())
        return task, result

    async def send(
        self,
        text: str,
        context: AgentContext | None = None,
        *,
        model: str | None = None,
        prepare: Callable[[], Awaitable[None]] | None = None,
    ) -> TurnOutcome:
        """Run a turn to its end (a Stop ends it early with reason "interrupted")."""
        return await self.start_turn(text, context, model=model, prepare=prepare)

    async def _ask(
        self,
        text: str,
        context: AgentContext | None,
        model: str | None,
        prepare: Callable[[], Awaitable[None]] | None,
        cell_id: str | None,
        expand: Expander | None,
        images: list[ImagePart] | None,
        mode: AgentMode | None = None,
    ) -> TurnOutcome:
        """The turn, once its time has come: the question as the model gets it, then the turn."""
        if context is None and self.context_provider is not None:
            context = self.context_provider()
        if context is not None and cell_id is not None:
            context = context.model_copy(update={"cell_id": cell_id})
        question = Question(text=text, images=images or [])
        expand = expand or self.expander
        if expand is not None:  # e.g. @mentions of variables, read when the turn starts
            question = merged(question, await expand(text))
        question.text = scrub(question.text)  # a pasted key never leaves
        return await self._turn(question, context, model, prepare, mode)

    # ---- the mode ----

    @property
    def effective_mode(self) -> AgentMode:
        """The mode the next turn runs in: the session's, else `AGENTIK_MODE`, else Agent (an unknown
        `AGENTIK_MODE` reads as Agent here; the turn itself says it is unknown)."""
        if self.mode is not None:
            return self.mode
        try:
            return default_mode()
        except ValueError:
            return "agent"

    async def set_mode(self, mode: AgentMode) -> None:
        """The session's mode from now on, saved with it (a session not created yet saves it when it is)."""
        self._set_mode(mode)
        if self.db is not None and self.conversation_id is not None:
            await self.db.set_mode(self.conversation_id, mode)

    def on_mode(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` whenever the session's mode changes (set, or a resumed session's); returns an unsubscribe."""
        self._mode_listeners.append(listener)
        return lambda: self._mode_listeners.remove(listener) if listener in self._mode_listeners else None

    def _set_mode(self, mode: AgentMode | None) -> None:
        changed, self.mode = mode != self.mode, mode
        for listener in list(self._mode_listeners) if changed else []:
            try:
                listener()
            except Exception:
                log.exception("mode listener failed")

    # ---- conversations ----

    async def resume(self, conversation_id: str | None = None) -> ConversationInfo | None:
        """Switch to a conversation (the latest when None) and load its transcript.

        An id that is not a session id (ids.py) raises InvalidSessionIdError."""
        if conversation_id:
            check_session_id(conversation_id)
        if self.db is None:
            return None
        info = (
            await self.db.get_conversation(conversation_id) if conversation_id else await self.db.latest_conversation()
        )
        if info is None:
            self.conversation_id, self.title, self.older_before = None, None, None
            self.chat_store.set_messages([])
            return None
        self.conversation_id, self.title = info.id, info.title
        if info.mode is not None:  # kept on resume; a session that never set one keeps the kernel's
            self._set_mode(cast(AgentMode, info.mode))
        self._last_context = None  # the next note lists every variable again
        page = await self.db.audit_log(info.id, limit=HISTORY_PAGE, whole_turns=True)
        self.older_before = page.next_before_seq
        self.chat_store.set_messages(entries_to_messages(page.entries, self._turn_id if self.busy else None))
        self.chat_store.set_error(None)
        self.agent_store.reset()
        return info

    def new_conversation(self) -> None:
        """The next turn starts a fresh conversation (created in the DB lazily)."""
        self._forget_conversation()
        self.agent_store.reset()

    def _forget_conversation(self) -> None:
        """Drop the current conversation and its transcript; the next one is created when a turn begins."""
        self.conversation_id, self.title, self.older_before = None, None, None
        self._working = []
        self._last_context = None
        self._usages = []
        self.chat_store.clear_messages()

    async def fail_turn(self, message: str, code: str | None = None) -> None:
        """The one way a turn fails: error row in the audit log, then store error and Error event."""
        self.chat_store.set_error(message)
        self.agent_store.set_active_tool(None)
        self.agent_store.set_status("error")
        try:
            await self._record_failure(message, code)
        finally:
            self.orchestrator.emit(ErrorEvent(message=message, code=code))
            self.orchestrator.emit(End(reason="error"))
            self._events.release()

    async def aclose(self) -> None:
        tasks = [*self._waiting, *([self._task] if self._task is not None else [])]
        self.stop_all()
        if tasks:
            await asyncio.wait(tasks)
        if self.db is not None:
            await self.db.drain()

    # ---- a turn ----

    async def _turn(
        self,
        question: Question,
        context: AgentContext | None,
        model: str | None,
        prepare: Callable[[], Awaitable[None]] | None,
        mode: AgentMode | None = None,
    ) -> TurnOutcome:
        self._turn_id = None
        if prepare is not None:
            try:
                await prepare()
            except (asyncio.CancelledError, KeyboardInterrupt) as exc:
                if isinstance(exc, asyncio.CancelledError):
                    if not self._stop.requested:
                        raise
                    task = asyncio.current_task()
                    if task is not None:
                        task.uncancel()
                self.agent_store.reset()
                return TurnOutcome(reason="interrupted", error_code="interrupted")
            except Exception as exc:
                message = f"Could not start the turn: {type(exc).__name__}: {exc}"
                await self.fail_turn(message, "setup")
                return TurnOutcome(reason="error", error=message, error_code="setup")
        if not question.text.strip() and not question.images:
            await self.fail_turn(EMPTY_INPUT, "empty_input")
            return TurnOutcome(reason="error", error=EMPTY_INPUT, error_code="empty_input")
        try:  # after `prepare`: a resumed session brings its own mode
            self.orchestrator.mode = mode or self.mode or default_mode()
        except ValueError as exc:
            await self.fail_turn(f"Could not start the turn: {exc}", "setup")
            return TurnOutcome(reason="error", error=str(exc), error_code="setup")
        self.orchestrator.plan = None
        transport = self.orchestrator.transport
        if model is not None:
            previous_model, transport.model = transport.model, model
        try:
            return await self._run(question, context, model or self.model)
        finally:
            if model is not None:
                transport.model = previous_model

    async def _run(self, question: Question, context: AgentContext | None, model: str | None) -> TurnOutcome:
        note = context_note(context, self._last_context)
        text, sent, refused = admit_images(question)  # none for a model without vision: it is told so
        if context is not None:  # the system prompt explains the mode; the question keeps it with the turn
            context = context.model_copy(update={"mode": self.orchestrator.mode})
        user = UserMessage(content=text, context=context, context_note=note, images=sent or None)
        user_msg = user.chat_message()
        was = self.conversation_id
        try:
            history = await self._begin(user, user_msg, model)
        except SessionDBError as exc:
            await self.fail_turn(f"Could not write the session file: {exc}", "storage")
            return TurnOutcome(reason="error", error=str(exc), error_code="storage")
        if self._history_cut:  # the turn whose note listed the variables may be gone: list them all
            self._history_cut = False
            if context is not None and note != (full := context_note(context)):
                user_msg = user_msg.model_copy(update={"context_note": full})  # the commit saves this copy
        self._last_context = context
        if context is not None:  # one key per session: OpenAI routes it to the same warm cache
            context = context.model_copy(update={"session_key": f"agentik-{self.conversation_id or self._key}"})
        if self.checkpoints is not None and self._turn_id is not None:
            self.checkpoints.begin_turn(self._turn_id, self.conversation_id, len(history))
        self.chat_store.add_message(user_msg)
        if was is not None and self.conversation_id != was:  # shown in the turn, never saved or sent
            self.chat_store.add_message(ChatMessage(role="assistant", notice=DELETED.format(id=was)))
        if refused:  # images the model did not get: shown in the turn, never saved or sent
            self.chat_store.add_message(ChatMessage(role="assistant", notice=refused))
        if self._notice:  # a compaction, shown in the turn, never saved or sent
            self.chat_store.add_message(ChatMessage(role="assistant", error=self._notice))
            self._notice = None
        try:
            outcome = await self.orchestrator.run([*history, user_msg], context)
        except asyncio.CancelledError:
            outcome = self.orchestrator.last_outcome or TurnOutcome(reason="interrupted")
            await self._finish(user_msg, outcome, model)
            if not self._stop.requested:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return outcome
        await self._finish(user_msg, outcome, model)
        return outcome

    async def _begin(self, user: UserMessage, user_msg: ChatMessage, model: str | None) -> list[ChatMessage]:
        """The history to send; the question joins working memory now (a retry has it)."""
        overhead = self._overhead(user.context)
        # the budget covers the whole request: system prompt, tool schemas, history and the new question
        overhead += message_tokens(user_msg)
        whole = context_budget(model or os.environ.get("LLM_MODEL", ""), os.environ)
        budget = max(1, int(whole * ESTIMATE_MARGIN) - overhead)
        if self.db is None:
            # A temporary session is trimmed to the same budget, on whole turns, as a saved one.
            self._turn_id = new_id("turn_")
            costs = [sum(message_tokens(m) for m in turn) for turn in self._working]
            start = first_turn_to_keep(costs, budget)
            history = [m for turn in self._working[start:] for m in turn]
            if start:  # the history outgrew the budget: summarise the oldest turns instead
                self._history_cut = True
                history = await self._compact(None, budget, user.context, keep=None) or history
            self._working.append([user_msg])
        else:
            history = await self._begin_saved(self.db, user, budget)
            if self.title is None and self.conversation_id is not None:
                self.title = (await self.db.get_conversation(self.conversation_id)).title
        self._estimate_of = (overhead, history)  # (counted when asked: a turn does not need it)
        return history

    @property
    def last_estimate(self) -> int | None:
        """Tokens the last turn's first request was estimated at (None before a turn)."""
        if self._estimate_of is None:
            return None
        overhead, history = self._estimate_of
        return overhead + sum(message_tokens(m) for m in history)

    async def _begin_saved(self, db: AsyncSessionDB, user: UserMessage, budget: int) -> list[ChatMessage]:
        """Begin the turn in the current conversation, or in a new one if there is none or it was
        deleted from outside (the sidebar, another kernel: `_run` says so; its transcript goes)."""
        if self.conversation_id is not None:
            try:
                history, self._turn_id, dropped = await db.begin_turn_with_history(self.conversation_id, user, budget)
            except ConversationNotFoundError as exc:
                if exc.conversation_id != self.conversation_id:
                    raise
                self._forget_conversation()
            else:
                if dropped:  # the history outgrew the budget: summarise the oldest turns instead
                    self._history_cut = True
                    compacted = await self._compact(db, budget, user.context, keep=None)
                    if compacted is not None:
                        return compacted
                return history
        self.conversation_id = (await db.create_conversation(mode=self.mode)).id
        history, self._turn_id = await db.begin_turn_after_history(self.conversation_id, user, budget)
        return history

    async def _finish(self, user_msg: ChatMessage, outcome: TurnOutcome, model: str | None = None) -> None:
        self.last_outcome = outcome
        turn = [user_msg, *outcome.messages]
        if self._compaction_usage is not None:
            outcome.usage = add_usage(outcome.usage, self._compaction_usage)
            outcome.requests += 1
            self._compaction_usage = None
        spent = outcome.usage.input_tokens is not None or outcome.usage.output_tokens is not None
        model = model or os.environ.get("LLM_MODEL") or None
        try:  # the records written through are queued before these writes (one trip to the file)
            if outcome.reason == "error":
                await self._record_failure(outcome.error or "error", outcome.error_code)
            elif self.db is None or self.conversation_id is None or self._turn_id is None:
                if self._working and self._working[-1][0].id == user_msg.id:
                    self._working[-1] = turn  # the question was kept when the turn began
                else:
                    self._working.append(turn)
            elif outcome.reason == "interrupted":
                await self.db.interrupt_turn(self.conversation_id, self._turn_id, turn)
            else:
                committed = self.db.commit_turn_soon(self.conversation_id, self._turn_id, turn)
                try:
                    if spent:  # the usage's trip takes the commit queued before it
                        spent = False
                        await self._record_usage(outcome, model)
                finally:
                    await asyncio.shield(committed)
            if spent:
                await self._record_usage(outcome, model)
            await self._audit.drain()
        except SessionDBError as exc:
            log.error("could not record the turn: %s", exc)
            self.chat_store.set_error(f"The answer was shown but could not be saved: {exc}")
        finally:
            self._events.release()  # a failed turn's Error and End, now that its row is written

    async def _record_failure(self, message: str, code: str | None) -> None:
        if self.db is None or self.conversation_id is None:
            return
        try:
            await self.db.fail_turn(self.conversation_id, self._turn_id, message, code)
        except SessionDBError as exc:
            log.error("could not record the failure: %s", exc)
