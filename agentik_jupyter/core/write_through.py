"""A running turn's records go to the audit log as they happen, not when the turn ends.

A kernel that dies mid-turn leaves what was said and done so far in the sessions file;
writes run off the loop (AsyncSessionDB), queued as they happen, so they keep their order
with the turn's other writes (its commit included); the turn waits for them (``drain``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.types import (
    AssistantMessage,
    ChatMessage,
    Event,
    PersistedMessage,
    ToolCallEvent,
    ToolCallRecord,
    ToolResultRecord,
)

log = logging.getLogger(__name__)

# Where the running turn is written: (db, conversation id, turn id); any None means "nowhere".
Target = Callable[[], tuple[AsyncSessionDB | None, str | None, str | None]]


class WriteThrough:
    """Persist hook for the chat store and listener for the orchestrator's events."""

    def __init__(self, target: Target) -> None:
        self._target = target
        self._pending: set[asyncio.Future[Any]] = set()

    def message(self, message: ChatMessage) -> None:
        if message.role == "assistant" and message.error is None and message.notice is None:
            self._schedule(
                AssistantMessage(
                    id=message.id,
                    content=message.content,
                    reasoning=message.reasoning,
                    tool_calls=message.tool_calls,
                    provider_blocks=message.provider_blocks,
                    timestamp=message.timestamp,
                )
            )
        elif message.role == "tool" and message.tool_result is not None:
            self._schedule(ToolResultRecord(id=message.id, result=message.tool_result, timestamp=message.timestamp))

    def event(self, event: Event) -> None:
        if isinstance(event, ToolCallEvent):
            self._schedule(ToolCallRecord(call=event.call))

    async def drain(self) -> None:
        """Wait for the writes scheduled so far (their failures are logged, not raised)."""
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)

    def _schedule(self, record: PersistedMessage) -> None:
        db, conversation_id, turn_id = self._target()
        if db is None or conversation_id is None or turn_id is None:
            return
        future = db.append_soon(conversation_id, turn_id, record)  # in order with the turn's other writes
        self._pending.add(future)
        future.add_done_callback(self._written)

    def _written(self, future: asyncio.Future[Any]) -> None:
        self._pending.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error("audit write failed", exc_info=future.exception())
