"""The session store for code on the kernel's event loop.

Every call runs the synchronous ``SessionDB`` method in a worker thread
(``asyncio.to_thread``), so the loop never waits on SQLite or on another kernel's lock.

Calls are shielded: if the awaiting task is cancelled (the user pressed Stop), the write
that was started still completes; the caller sees CancelledError, the row lands. Calls
also run one after another in the order they were made, so a turn's records keep their
order even when a cancelled write is still finishing while the interrupt is recorded.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..types import ChatMessage, PersistedMessage, UserMessage
from .models import AuditPage, AuditRef, ConversationInfo
from .sqlite_session import SessionDB

T = TypeVar("T")
log = logging.getLogger(__name__)


def _report_orphan(task: asyncio.Task[Any]) -> None:
    """Nobody awaits a write whose caller was cancelled; make its failure visible in the log."""
    if not task.cancelled() and task.exception() is not None:
        log.error("session write failed after its turn was cancelled", exc_info=task.exception())


class AsyncSessionDB:
    """``SessionDB`` with awaitable, cancellation-proof, ordered methods of the same names."""

    def __init__(self, db: SessionDB) -> None:
        self.db = db
        self._tail: asyncio.Task[Any] | None = None

    @classmethod
    async def open(cls, path: Path | str, **options: Any) -> AsyncSessionDB:
        """Open (and migrate) the file in a worker thread."""
        return cls(await asyncio.to_thread(SessionDB, path, **options))

    @property
    def path(self) -> Path:
        return self.db.path

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        previous = self._tail
        task = asyncio.ensure_future(self._after(previous, fn, args))
        self._tail = task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(_report_orphan)
            raise

    @staticmethod
    async def _after(previous: asyncio.Task[Any] | None, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        if previous is not None and not previous.done() and previous.get_loop() is asyncio.get_running_loop():
            await asyncio.wait([previous])
        return await asyncio.to_thread(fn, *args)

    async def drain(self) -> None:
        """Wait until every call made so far has finished (errors are not raised here)."""
        tail = self._tail
        if tail is not None and not tail.done():
            await asyncio.wait([tail])

    async def aclose(self) -> None:
        """Let pending writes land, then close the file."""
        await self.drain()
        await asyncio.to_thread(self.db.close)

    # ---- conversations ----

    async def create_conversation(self, title: str | None = None, is_temporal: bool = False) -> ConversationInfo:
        return await self._call(self.db.create_conversation, title, is_temporal)

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

        def both() -> tuple[list[ChatMessage], str]:
            history = self.db.working_memory(conversation_id, budget_tokens)
            return history, self.db.begin_turn(conversation_id, user)

        return await self._call(both)

    async def append(self, conversation_id: str, turn_id: str, record: PersistedMessage) -> AuditRef:
        return await self._call(self.db.append, conversation_id, turn_id, record)

    async def commit_turn(self, conversation_id: str, turn_id: str, working: Sequence[ChatMessage]) -> None:
        return await self._call(self.db.commit_turn, conversation_id, turn_id, list(working))

    async def fail_turn(
        self, conversation_id: str, turn_id: str | None, message: str, code: str | None = None
    ) -> AuditRef:
        return await self._call(self.db.fail_turn, conversation_id, turn_id, message, code)

    async def interrupt_turn(
        self,
        conversation_id: str,
        turn_id: str,
        working: Sequence[ChatMessage],
        message: str = "Interrupted by the user",
    ) -> AuditRef:
        return await self._call(self.db.interrupt_turn, conversation_id, turn_id, list(working), message)

    # ---- reads ----

    async def audit_log(
        self, conversation_id: str, limit: int = 50, before_seq: int | None = None, *, whole_turns: bool = False
    ) -> AuditPage:
        return await self._call(functools.partial(self.db.audit_log, whole_turns=whole_turns), conversation_id, limit, before_seq)

    async def working_memory(self, conversation_id: str, budget_tokens: int | None = None) -> list[ChatMessage]:
        return await self._call(self.db.working_memory, conversation_id, budget_tokens)
