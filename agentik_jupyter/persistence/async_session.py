"""The session store for code on the kernel's event loop.

Every call runs the synchronous ``SessionDB`` method in a worker thread
(the loop's default executor, as ``asyncio.to_thread``), so the loop never waits on SQLite or on another kernel's lock.

Calls are shielded: if the awaiting task is cancelled (the user pressed Stop), the write
that was started still completes; the caller sees CancelledError, the row lands. Calls
also run one after another in the order they were made, so a turn's records keep their
order even when a cancelled write is still finishing while the interrupt is recorded.
Calls made while the worker is busy wait in a queue and go to the thread together, in
order, on its next trip: a turn's last record and its commit cost one trip, not two.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agentik_jupyter.persistence.binding import Binding
from agentik_jupyter.persistence.models import AuditPage, AuditRef, ConversationInfo, TurnUsage
from agentik_jupyter.persistence.rewind import TurnRow
from agentik_jupyter.persistence.sqlite_session import INTERRUPTED_MESSAGE, SessionDB
from agentik_jupyter.types import ChatMessage, PersistedMessage, Usage, UserMessage

T = TypeVar("T")
log = logging.getLogger(__name__)


def _report_orphan(future: asyncio.Future[Any]) -> None:
    """Nobody awaits a write whose caller was cancelled; make its failure visible in the log."""
    if not future.cancelled() and future.exception() is not None:
        log.error("session write failed after its turn was cancelled", exc_info=future.exception())


Call = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]"]


def _run_all(calls: list[Call]) -> list[tuple[bool, Any]]:
    """Run the queued calls in order in the worker thread; each one's result or error."""
    out: list[tuple[bool, Any]] = []
    for fn, args, _ in calls:
        try:
            out.append((True, fn(*args)))
        except BaseException as exc:  # handed to its caller, the next calls still run
            out.append((False, exc))
    return out


def _in_thread(loop: asyncio.AbstractEventLoop, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """Start `fn(*args)` in the loop's default executor now (as `asyncio.to_thread`, context copied)."""
    return loop.run_in_executor(None, functools.partial(contextvars.copy_context().run, fn, *args))


class _Lane:
    """The calls of one event loop, run in order, a thread trip per batch. A trip starts when
    its first call is made (not on the loop's next round), so the worker is already at it
    while the loop goes on (e.g. rendering the transcript while the turn is committed)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: list[Call] = []
        self.trip: asyncio.Future[list[tuple[bool, Any]]] | None = None
        self.kicked = False

    def submit(self, fn: Callable[..., T], args: tuple[Any, ...], now: bool = True) -> asyncio.Future[T]:
        """Queue a call; with `now=False` its trip starts on the loop's next round (a call made
        before then joins it) unless a call with `now` starts it first."""
        future: asyncio.Future[T] = self.loop.create_future()
        self.queue.append((fn, args, future))
        if self.trip is None:
            if now:
                self._start()
            elif not self.kicked:
                self.kicked = True
                self.loop.call_soon(self._kick)
        return future

    def _kick(self) -> None:
        self.kicked = False
        if self.trip is None and self.queue:
            self._start()

    def _start(self) -> None:
        batch, self.queue = self.queue, []
        try:
            self.trip = trip = _in_thread(self.loop, _run_all, batch)
        except RuntimeError as exc:  # no executor any more (the loop is closing)
            for _, _, future in batch:
                future.set_exception(exc)
            return
        trip.add_done_callback(lambda done: self._settle(batch, done))

    def _settle(self, batch: list[Call], trip: asyncio.Future[list[tuple[bool, Any]]]) -> None:
        self.trip = None
        if trip.cancelled() or trip.exception() is not None:  # the executor is going away
            for _, _, future in (*batch, *self.queue):
                future.cancel()
            self.queue = []
            return
        for (_, _, future), (ok, value) in zip(batch, trip.result()):
            if future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        if self.queue:
            self._start()


class AsyncSessionDB:
    """``SessionDB`` with awaitable, cancellation-proof, ordered methods of the same names."""

    def __init__(self, db: SessionDB) -> None:
        self.db = db
        self._lane: _Lane | None = None

    @classmethod
    async def open(cls, path: Path | str, **options: Any) -> AsyncSessionDB:
        """Open (and migrate) the file in a worker thread."""
        return cls(await asyncio.to_thread(SessionDB, path, **options))

    @property
    def path(self) -> Path:
        return self.db.path

    def submit(self, fn: Callable[..., T], *args: Any, now: bool = True) -> asyncio.Future[T]:
        """Queue `fn(*args)` for the worker now (it runs after every call made before it; see
        `_Lane.submit` for `now`)."""
        loop = asyncio.get_running_loop()
        if self._lane is None or self._lane.loop is not loop:  # calls of another loop are not waited for
            self._lane = _Lane(loop)
        return self._lane.submit(fn, args, now)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        future = self.submit(fn, *args)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(_report_orphan)
            raise

    async def drain(self) -> None:
        """Wait until every call made so far has finished (errors are not raised here)."""
        lane = self._lane
        while lane is not None and lane.loop is asyncio.get_running_loop() and (lane.trip is not None or lane.queue):
            if lane.trip is None:
                lane._kick()  # queued calls waiting for the loop's next round: start them now
            if lane.trip is not None:
                await asyncio.wait([lane.trip])

    async def relocate(self, new_path: Path) -> None:
        """Move the file after every write asked for before, before any asked for after."""
        await self._call(self.db.relocate, new_path)

    async def binding(self) -> Binding | None:
        return await self._call(self.db.binding)

    async def bind_notebook(self, notebook_id: str, origin: str | None = None) -> None:
        await self._call(self.db.bind_notebook, notebook_id, origin)

    async def aclose(self) -> None:
        """Let pending writes land, then close the file."""
        await self.drain()
        await asyncio.to_thread(self.db.close)

    # ---- conversations ----

    async def create_conversation(
        self, title: str | None = None, is_temporal: bool = False, mode: str | None = None
    ) -> ConversationInfo:
        return await self._call(self.db.create_conversation, title, is_temporal, mode)

    async def set_mode(self, conversation_id: str, mode: str | None) -> ConversationInfo:
        return await self._call(self.db.set_mode, conversation_id, mode)

    async def get_conversation(self, conversation_id: str) -> ConversationInfo:
        return await self._call(self.db.get_conversation, conversation_id)

    async def latest_conversation(self) -> ConversationInfo | None:
        return await self._call(self.db.latest_conversation)

    async def list_conversations(
        self, limit: int = 50, offset: int = 0, include_temporal: bool = False
    ) -> list[ConversationInfo]:
        return await self._call(self.db.list_conversations, limit, offset, include_temporal)

    async def rename_conversation(self, conversation_id: str, title: str | None) -> ConversationInfo:
        return await self._call(self.db.rename_conversation, conversation_id, title)

    async def delete_conversation(self, conversation_id: str) -> bool:
        return await self._call(self.db.delete_conversation, conversation_id)

    # ---- turns ----

    async def begin_turn(self, conversation_id: str, user: UserMessage) -> str:
        return await self._call(self.db.begin_turn, conversation_id, user)

    async def begin_turn_after_history(
        self, conversation_id: str, user: UserMessage, budget_tokens: int | None = None
    ) -> tuple[list[ChatMessage], str]:
        """The history to send (as `working_memory`), then `begin_turn`: one trip to the worker
        thread instead of two, on the path from the question to the model's request."""

        history, turn_id, _ = await self.begin_turn_with_history(conversation_id, user, budget_tokens)
        return history, turn_id

    async def begin_turn_with_history(
        self, conversation_id: str, user: UserMessage, budget_tokens: int | None = None
    ) -> tuple[list[ChatMessage], str, int]:
        """`begin_turn_after_history`, and how many of the oldest turns the budget left out."""

        def both() -> tuple[list[ChatMessage], str, int]:
            history, dropped = self.db.working_memory_cut(conversation_id, budget_tokens)
            return history, self.db.begin_turn(conversation_id, user), dropped

        return await self._call(both)

    async def working_memory_cut(
        self, conversation_id: str, budget_tokens: int | None = None
    ) -> tuple[list[ChatMessage], int]:
        return await self._call(self.db.working_memory_cut, conversation_id, budget_tokens)

    async def working_turns(self, conversation_id: str) -> list[tuple[str, list[ChatMessage]]]:
        return await self._call(self.db.working_turns, conversation_id)

    async def compact(
        self,
        conversation_id: str,
        turn_ids: Sequence[str],
        summary: ChatMessage,
        shortened: Sequence[ChatMessage] = (),
    ) -> str:
        return await self._call(self.db.compact, conversation_id, list(turn_ids), summary, list(shortened))

    async def append(self, conversation_id: str, turn_id: str, record: PersistedMessage) -> AuditRef:
        return await self._call(self.db.append, conversation_id, turn_id, record)

    def append_soon(self, conversation_id: str, turn_id: str, record: PersistedMessage) -> asyncio.Future[AuditRef]:
        """`append`, queued now (before any call made after it) and awaited later, if at all; it
        shares its trip with the calls made in the same round of the loop (e.g. the commit)."""
        return self.submit(self.db.append, conversation_id, turn_id, record, now=False)

    async def turns(self, conversation_id: str) -> list[TurnRow]:
        return await self._call(self.db.turns, conversation_id)

    async def rewind_turns(self, conversation_id: str, turn_ids: Sequence[str], message: str) -> None:
        return await self._call(self.db.rewind_turns, conversation_id, list(turn_ids), message)

    async def commit_turn(self, conversation_id: str, turn_id: str, working: Sequence[ChatMessage]) -> None:
        return await self._call(self.db.commit_turn, conversation_id, turn_id, list(working))

    def commit_turn_soon(
        self, conversation_id: str, turn_id: str, working: Sequence[ChatMessage]
    ) -> asyncio.Future[None]:
        """`commit_turn`, queued as `append_soon` is: the turn's usage, recorded right after, goes in
        the same trip, so the turn's end waits on the file once."""
        return self.submit(self.db.commit_turn, conversation_id, turn_id, list(working), now=False)

    async def fail_turn(
        self, conversation_id: str, turn_id: str | None, message: str, code: str | None = None
    ) -> AuditRef:
        return await self._call(self.db.fail_turn, conversation_id, turn_id, message, code)

    async def interrupt_turn(
        self,
        conversation_id: str,
        turn_id: str,
        working: Sequence[ChatMessage],
        message: str = INTERRUPTED_MESSAGE,
    ) -> AuditRef:
        return await self._call(self.db.interrupt_turn, conversation_id, turn_id, list(working), message)

    # ---- reads ----

    async def audit_log(
        self, conversation_id: str, limit: int = 50, before_seq: int | None = None, *, whole_turns: bool = False
    ) -> AuditPage:
        return await self._call(
            functools.partial(self.db.audit_log, whole_turns=whole_turns), conversation_id, limit, before_seq
        )

    async def record_usage(
        self, conversation_id: str, turn_id: str, usage: Usage, model: str | None = None, requests: int = 1
    ) -> None:
        return await self._call(self.db.record_usage, conversation_id, turn_id, usage, model, requests)

    async def turn_usages(self, conversation_id: str) -> list[TurnUsage]:
        return await self._call(self.db.turn_usages, conversation_id)

    async def working_memory(self, conversation_id: str, budget_tokens: int | None = None) -> list[ChatMessage]:
        return await self._call(self.db.working_memory, conversation_id, budget_tokens)
