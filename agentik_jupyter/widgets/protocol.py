"""What the widgets need from a session and from an approval request, and nothing more.

Depending on these protocols (not on Session or ApprovalRequest) keeps the
widgets away from orchestrator internals and lets tests drive them with doubles.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.types import AgentMode, Event, ImagePart


@runtime_checkable
class SessionLike(Protocol):
    """The surface of agentik_jupyter.core.session.Session that the views use."""

    chat_store: ChatStore
    agent_store: AgentStore
    title: str | None
    conversation_id: str | None  # the saved session shown (None before its first turn)
    temporary: bool
    approval_presenter: Callable[[Any], object] | None
    name_suggester: Callable[[str], list[tuple[str, str]]] | None
    mode: AgentMode | None

    def on_event(self, listener: Callable[[Event], None]) -> Callable[[], None]: ...

    def start_turn(
        self, text: str, *, on_start: Callable[[], None] | None = None, images: list[ImagePart] | None = None
    ) -> asyncio.Task[Any]: ...

    def stop(self) -> bool: ...

    async def set_mode(self, mode: AgentMode) -> None: ...

    def on_mode(self, listener: Callable[[], None]) -> Callable[[], None]: ...

    @property
    def effective_mode(self) -> AgentMode: ...

    def cancel(self, task: asyncio.Future[Any]) -> bool: ...

    def ahead_of(self, task: asyncio.Future[Any]) -> int | None: ...

    def on_queue(self, listener: Callable[[], None]) -> Callable[[], None]: ...

    def tool_holds_loop(self, name: str) -> bool: ...

    async def load_older(self) -> int: ...

    @property
    def busy(self) -> bool: ...

    @property
    def queued(self) -> int: ...

    @property
    def has_older(self) -> bool: ...


class ApprovalRequestLike(Protocol):
    """The surface of agentik_jupyter.tools.approval.ApprovalRequest that the card uses."""

    tool_name: str
    decision: str | None
    reason: str | None
    always: bool

    @property
    def display_text(self) -> str: ...

    @property
    def language(self) -> str: ...

    def approve(self, always: bool = False) -> bool: ...

    def deny(self, reason: str | None = None) -> bool: ...

    def on_resolved(self, callback: Callable[[Any], None]) -> Callable[[], None]: ...
