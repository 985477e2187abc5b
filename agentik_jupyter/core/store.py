"""Observable stores: the only state the widgets read.

A store holds an immutable pydantic snapshot; `set` swaps it and notifies
subscribers synchronously. Widgets subscribe; they never reach into the
orchestrator. Persistence hooks let a session write through to its DB.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.types import AgentContext, ChatMessage, ExecutionState

log = logging.getLogger(__name__)

S = TypeVar("S", bound=BaseModel)
Listener = Callable[[Any], None]


class Store(Generic[S]):
    """get / set / subscribe over one state snapshot."""

    def __init__(self, initial: S) -> None:
        self._state = initial
        self._initial = initial
        self._listeners: list[Callable[[S], None]] = []

    def get(self) -> S:
        return self._state

    def set(self, **changes: Any) -> None:
        self._state = self._state.model_copy(update=changes)
        for listener in list(self._listeners):
            try:
                listener(self._state)
            except Exception:
                log.exception("store listener failed")

    def subscribe(self, listener: Callable[[S], None]) -> Callable[[], None]:
        """Call `listener(state)` after every change; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe


class ChatState(BaseModel):
    model_config = ConfigDict(frozen=True)

    messages: tuple[ChatMessage, ...] = ()
    loading: bool = False
    error: str | None = None


class ChatStore(Store[ChatState]):
    def __init__(self) -> None:
        super().__init__(ChatState())
        self._persist_hooks: list[Callable[[ChatMessage], None]] = []

    @property
    def messages(self) -> tuple[ChatMessage, ...]:
        return self._state.messages

    @property
    def loading(self) -> bool:
        return self._state.loading

    @property
    def error(self) -> str | None:
        return self._state.error

    def add_persist_hook(self, hook: Callable[[ChatMessage], None]) -> Callable[[], None]:
        """Called with every added message, before listeners; lets a session write through."""
        self._persist_hooks.append(hook)
        return lambda: self._persist_hooks.remove(hook) if hook in self._persist_hooks else None

    def add_message(self, message: ChatMessage) -> None:
        for hook in list(self._persist_hooks):
            hook(message)
        self.set(messages=(*self._state.messages, message))

    def set_messages(self, messages: list[ChatMessage]) -> None:
        """Replace the transcript at once (resume); no persist hook runs."""
        self.set(messages=tuple(messages))

    def set_loading(self, loading: bool) -> None:
        self.set(loading=loading)

    def set_error(self, error: str | None) -> None:
        """An error stays until cleared with `set_error(None)`; loading stops with it."""
        if error is None:
            self.set(error=None)
        else:
            self.set(error=scrub(error), loading=False)

    def clear_messages(self) -> None:
        self.set(messages=(), error=None, loading=False)


class AgentState(BaseModel):
    model_config = ConfigDict(frozen=True)

    status: ExecutionState = "idle"
    active_tool: str | None = None
    caller: str | None = None
    """The outside agent (an MCP client's name) whose call runs; None: our own agent's turn."""
    context: AgentContext = Field(default_factory=AgentContext)


class AgentStore(Store[AgentState]):
    def __init__(self) -> None:
        super().__init__(AgentState())

    @property
    def status(self) -> ExecutionState:
        return self._state.status

    @property
    def active_tool(self) -> str | None:
        return self._state.active_tool

    @property
    def context(self) -> AgentContext:
        return self._state.context

    def set_status(self, status: ExecutionState) -> None:
        self.set(status=status)

    def set_active_tool(self, name: str | None) -> None:
        self.set(active_tool=name)

    def set_context(self, context: AgentContext) -> None:
        self.set(context=context)

    def reset(self) -> None:
        self.set(status="idle", active_tool=None, caller=None)
