"""One conversation: send a turn, stop it, record it, resume it.

The session owns the stores the widgets observe and the orchestrator that
drives them, and writes every turn through to the SQLite file: the audit log as
things happen, working memory when a turn completes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any, Awaitable, Callable

from .orchestrator import Approver, EventListener, Orchestrator, Transport, TurnOutcome
from .persistence.budget import first_turn_to_keep
from .persistence import AsyncSessionDB, AuditEntry, ConversationInfo, SessionDBError, context_budget, estimate_tokens
from .registry import ToolRegistry
from .security.scrub import scrub
from .store import AgentStore, ChatStore
from .types import (
    AgentContext,
    AssistantMessage,
    ChatMessage,
    End,
    ErrorEvent,
    ErrorRecord,
    Event,
    PersistedMessage,
    ToolCallEvent,
    ToolCallRecord,
    ToolResultRecord,
    UserMessage,
    new_id,
)

log = logging.getLogger(__name__)

HISTORY_PAGE = 200
SYSTEM_PROMPT_TOKENS = 1_000
DEQUEUED = "Removed from the queue before it started."
EMPTY_INPUT = "Empty message: write your question in the cell body, below %%agent."


UNFINISHED = "This turn did not finish: the kernel stopped before the answer was complete."


def _unfinished_turns(entries: list[AuditEntry]) -> set[str]:
    """Turns whose audit rows end neither with a final answer nor with an error."""
    last: dict[str, PersistedMessage] = {}
    for entry in entries:
        last[entry.turn_id] = entry.record
    return {
        turn for turn, record in last.items()
        if not isinstance(record, ErrorRecord)
        and not (isinstance(record, AssistantMessage) and not record.tool_calls)
    }


def entries_to_messages(entries: list[AuditEntry], running_turn: str | None = None) -> list[ChatMessage]:
    """Audit rows -> transcript for the panel: failed turns' errors included, and a note on
    turns a crashed kernel left unfinished."""
    unfinished = _unfinished_turns(entries) - {running_turn}
    out: list[ChatMessage] = []
    for i, entry in enumerate(entries):
        out.extend(records_to_messages([entry.record]))
        ends_turn = i + 1 == len(entries) or entries[i + 1].turn_id != entry.turn_id
        if ends_turn and entry.turn_id in unfinished:
            out.append(ChatMessage(role="assistant", error=UNFINISHED, timestamp=entry.created_at))
    return out


def records_to_messages(records: list[PersistedMessage]) -> list[ChatMessage]:
    """Audit rows -> transcript for the panel: errors of failed turns included."""
    out: list[ChatMessage] = []
    for r in records:
        if isinstance(r, UserMessage):
            out.append(ChatMessage(id=r.id, role="user", content=r.content, timestamp=r.timestamp))
        elif isinstance(r, AssistantMessage):
            out.append(ChatMessage(
                id=r.id, role="assistant", content=r.content, reasoning=r.reasoning,
                tool_calls=r.tool_calls, timestamp=r.timestamp,
            ))
        elif isinstance(r, ToolResultRecord):
            content = r.result.error or str(r.result.result)
            out.append(ChatMessage(id=r.id, role="tool", content=content, tool_result=r.result, timestamp=r.timestamp))
        elif isinstance(r, ErrorRecord):
            out.append(ChatMessage(id=r.id, role="assistant", error=r.message, timestamp=r.timestamp))
    return out


class Session:
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
        self.chat_store = ChatStore()
        self.agent_store = AgentStore()
        self.orchestrator = Orchestrator(
            transport, registry, self.chat_store, self.agent_store, approver=approver,
            stop_requested=lambda: self._stop_requested,
        )
        self.db = None if temporary else db
        self.temporary = temporary
        self.conversation_id = conversation_id
        self.title: str | None = None
        self.model = model
        self.approval_presenter: Callable[[Any], None] | None = None
        self.context_provider: Callable[[], AgentContext] | None = None
        self.expander: Callable[[str], Awaitable[str]] | None = None  # a turn's `expand` by default
        self.last_outcome: TurnOutcome | None = None
        self._working: list[list[ChatMessage]] = []  # a temporary session's turns
        self._task: asyncio.Task[TurnOutcome] | None = None
        self._waiting: list[asyncio.Task[TurnOutcome]] = []
        self._dequeued: set[asyncio.Future[Any]] = set()
        self._queue_listeners: list[Callable[[], None]] = []
        self._lock = asyncio.Lock()
        self._stop_requested = False
        self._turn_id: str | None = None
        self._pending: set[asyncio.Future[Any]] = set()
        self.chat_store.add_persist_hook(self._persist_message)
        self.orchestrator.on_event(self._persist_event)

    # ---- the protocol the widgets use ----

    def on_event(self, listener: EventListener) -> Callable[[], None]:
        return self.orchestrator.on_event(listener)

    @property
    def busy(self) -> bool:
        """A turn is running (queued ones are counted by `queued`)."""
        return self._task is not None and not self._task.done()

    @property
    def queued(self) -> int:
        return len(self._waiting)

    def ahead_of(self, task: asyncio.Future[Any]) -> int | None:
        """How many turns run before `task` (None once it has started or left the queue)."""
        if task not in self._waiting:
            return None
        return self._waiting.index(task) + (1 if self.busy else 0)

    def on_queue(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` whenever a turn joins, leaves or starts from the queue."""
        self._queue_listeners.append(listener)
        return lambda: self._queue_listeners.remove(listener) if listener in self._queue_listeners else None

    def start_turn(
        self,
        text: str,
        context: AgentContext | None = None,
        *,
        model: str | None = None,
        prepare: Callable[[], Awaitable[None]] | None = None,
        on_start: Callable[[], None] | None = None,
        cell_id: str | None = None,
        expand: Callable[[str], Awaitable[str]] | None = None,
    ) -> asyncio.Task[TurnOutcome]:
        """Queue a turn as a task on the running loop and return at once.

        Turns run one at a time in the order they were started. `on_start` runs when
        this turn's time comes; `prepare` runs first inside the turn (opening the file,
        resuming), so a Stop or an error there ends this turn like any other.
        """
        task = asyncio.get_running_loop().create_task(
            self._queued(text, context, model, prepare, on_start, cell_id, expand)
        )
        self._waiting.append(task)
        self._queue_changed()
        return task

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

    def stop(self) -> bool:
        """Cancel the running turn; True if there was one. Queued turns still run."""
        if not self.busy or self._task is None:
            return False
        self._stop_requested = True
        self._task.cancel()
        return True

    def request_stop(self) -> None:
        """Mark the running turn as stopped without cancelling it yet (safe in a signal
        handler): it ends before its next model call or tool."""
        if self.busy:
            self._stop_requested = True

    def stop_all(self) -> int:
        """Empty the queue and stop the running turn; how many turns were stopped."""
        count = sum(1 for task in list(self._waiting) if self.cancel(task))
        return count + (1 if self.stop() else 0)

    def cancel(self, task: asyncio.Future[Any]) -> bool:
        """Stop this turn: remove it from the queue, or stop it if it is the running one."""
        if task is self._task:
            return self.stop()
        if task not in self._waiting:
            return False
        self._waiting.remove(task)
        self._dequeued.add(task)
        task.cancel()
        self._queue_changed()
        return True

    def _queue_changed(self) -> None:
        for listener in list(self._queue_listeners):
            try:
                listener()
            except Exception:
                log.exception("queue listener failed")

    async def _queued(
        self,
        text: str,
        context: AgentContext | None,
        model: str | None,
        prepare: Callable[[], Awaitable[None]] | None,
        on_start: Callable[[], None] | None,
        cell_id: str | None,
        expand: Callable[[str], Awaitable[str]] | None = None,
    ) -> TurnOutcome:
        me = asyncio.current_task()
        try:
            await self._lock.acquire()
        except asyncio.CancelledError:
            if me in self._waiting:
                self._waiting.remove(me)  # type: ignore[arg-type]
                self._queue_changed()
            if me not in self._dequeued:
                raise
            self._dequeued.discard(me)  # type: ignore[arg-type]
            if me is not None:
                me.uncancel()
            return TurnOutcome(reason="interrupted", error=DEQUEUED, error_code="dequeued")
        try:
            if me in self._waiting:
                self._waiting.remove(me)  # type: ignore[arg-type]
            self._task, self._stop_requested = me, False
            self._queue_changed()
            if on_start is not None:
                on_start()
            if context is None and self.context_provider is not None:
                context = self.context_provider()
            if context is not None and cell_id is not None:
                context = context.model_copy(update={"cell_id": cell_id})
            expand = expand or self.expander
            if expand is not None:  # e.g. @mentions of variables, read when the turn starts
                text = await expand(text)
            return await self._turn(scrub(text), context, model, prepare)  # a pasted key never leaves
        finally:
            self._task = None
            self._lock.release()
            self._queue_changed()

    # ---- conversations ----

    async def resume(self, conversation_id: str | None = None) -> ConversationInfo | None:
        """Switch to a conversation (the latest when None) and load its transcript."""
        if self.db is None:
            return None
        info = (
            await self.db.get_conversation(conversation_id)
            if conversation_id
            else await self.db.latest_conversation()
        )
        if info is None:
            self.conversation_id, self.title = None, None
            self.chat_store.set_messages([])
            return None
        self.conversation_id, self.title = info.id, info.title
        page = await self.db.audit_log(info.id, limit=HISTORY_PAGE)
        self.chat_store.set_messages(entries_to_messages(page.entries, self._turn_id if self.busy else None))
        self.chat_store.set_error(None)
        self.agent_store.reset()
        return info

    def new_conversation(self) -> None:
        """The next turn starts a fresh conversation (created in the DB lazily)."""
        self.conversation_id, self.title = None, None
        self._working = []
        self.chat_store.clear_messages()
        self.agent_store.reset()

    async def fail_turn(self, message: str, code: str | None = None) -> None:
        """The one way a turn fails: error row in the audit log only, store error, Error event."""
        self.chat_store.set_error(message)
        self.agent_store.set_active_tool(None)
        self.agent_store.set_status("error")
        self.orchestrator.emit(ErrorEvent(message=message, code=code))
        self.orchestrator.emit(End(reason="error"))
        await self._record_failure(message, code)

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
        text: str,
        context: AgentContext | None,
        model: str | None,
        prepare: Callable[[], Awaitable[None]] | None,
    ) -> TurnOutcome:
        self._turn_id = None
        if prepare is not None:
            try:
                await prepare()
            except (asyncio.CancelledError, KeyboardInterrupt) as exc:
                if isinstance(exc, asyncio.CancelledError):
                    if not self._stop_requested:
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
        if not text.strip():
            await self.fail_turn(EMPTY_INPUT, "empty_input")
            return TurnOutcome(reason="error", error=EMPTY_INPUT, error_code="empty_input")
        transport = self.orchestrator.transport
        if model is not None and hasattr(transport, "model"):
            previous_model, transport.model = transport.model, model  # type: ignore[attr-defined]
        try:
            return await self._run(text, context, model or self.model)
        finally:
            if model is not None and hasattr(transport, "model"):
                transport.model = previous_model  # type: ignore[attr-defined]

    async def _run(self, text: str, context: AgentContext | None, model: str | None) -> TurnOutcome:
        user = UserMessage(content=text, context=context)
        user_msg = ChatMessage(id=user.id, role="user", content=text, timestamp=user.timestamp)
        try:
            history = await self._begin(user, model)
        except SessionDBError as exc:
            await self.fail_turn(f"Could not write the session file: {exc}", "storage")
            return TurnOutcome(reason="error", error=str(exc), error_code="storage")
        self.chat_store.add_message(user_msg)
        try:
            outcome = await self.orchestrator.run([*history, user_msg], context)
        except asyncio.CancelledError:
            outcome = self.orchestrator.last_outcome or TurnOutcome(reason="interrupted")
            await self._finish(user_msg, outcome)
            if not self._stop_requested:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return outcome
        await self._finish(user_msg, outcome)
        return outcome

    async def _begin(self, user: UserMessage, model: str | None) -> list[ChatMessage]:
        budget = self._history_budget(model)
        if self.db is None:
            # A temporary session is trimmed to the same budget, on whole turns, as a saved one.
            self._turn_id = new_id("turn_")
            costs = [sum(estimate_tokens(m.model_dump_json()) for m in turn) for turn in self._working]
            return [m for turn in self._working[first_turn_to_keep(costs, budget):] for m in turn]
        if self.conversation_id is None:
            info = await self.db.create_conversation()
            self.conversation_id = info.id
        history = await self.db.working_memory(self.conversation_id, budget)
        self._turn_id = await self.db.begin_turn(self.conversation_id, user)
        if self.title is None:
            self.title = (await self.db.get_conversation(self.conversation_id)).title
        return history

    def _history_budget(self, model: str | None) -> int:
        """Tokens of history to send: the model's budget less the system prompt and tool schemas."""
        schemas = self.orchestrator.registry.to_tool_schemas()
        overhead = SYSTEM_PROMPT_TOKENS + estimate_tokens(json.dumps([t.model_dump() for t in schemas]))
        return max(1, context_budget(model or os.environ.get("LLM_MODEL", ""), os.environ) - overhead)

    async def _finish(self, user_msg: ChatMessage, outcome: TurnOutcome) -> None:
        self.last_outcome = outcome
        turn = [user_msg, *outcome.messages]
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        try:
            if outcome.reason == "error":
                await self._record_failure(outcome.error or "error", outcome.error_code)
            elif self.db is None or self.conversation_id is None or self._turn_id is None:
                self._working.append(turn)
            elif outcome.reason == "interrupted":
                await self.db.interrupt_turn(self.conversation_id, self._turn_id, turn)
            else:
                await self.db.commit_turn(self.conversation_id, self._turn_id, turn)
        except SessionDBError as exc:
            log.error("could not record the turn: %s", exc)
            self.chat_store.set_error(f"The answer was shown but could not be saved: {exc}")

    async def _record_failure(self, message: str, code: str | None) -> None:
        if self.db is None or self.conversation_id is None:
            return
        try:
            await self.db.fail_turn(self.conversation_id, self._turn_id, message, code)
        except SessionDBError as exc:
            log.error("could not record the failure: %s", exc)

    # ---- write-through to the audit log ----

    def _schedule(self, record: PersistedMessage) -> None:
        if self.db is None or self.conversation_id is None or self._turn_id is None:
            return
        future = asyncio.ensure_future(self.db.append(self.conversation_id, self._turn_id, record))
        self._pending.add(future)
        future.add_done_callback(self._written)

    def _written(self, future: asyncio.Future[Any]) -> None:
        self._pending.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error("audit write failed", exc_info=future.exception())

    def _persist_message(self, message: ChatMessage) -> None:
        if message.role == "assistant" and message.error is None:
            self._schedule(AssistantMessage(
                id=message.id, content=message.content, reasoning=message.reasoning,
                tool_calls=message.tool_calls, provider_blocks=message.provider_blocks,
                timestamp=message.timestamp,
            ))
        elif message.role == "tool" and message.tool_result is not None:
            self._schedule(ToolResultRecord(id=message.id, result=message.tool_result, timestamp=message.timestamp))

    def _persist_event(self, event: Event) -> None:
        if isinstance(event, ToolCallEvent):
            self._schedule(ToolCallRecord(call=event.call))
