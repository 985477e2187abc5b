"""What the store hands back: plain, frozen pydantic models the panel and server can serialise."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agentik_jupyter.types import PersistedMessage


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConversationInfo(_Frozen):
    """One row of ``%agent sessions``.

    ``message_count`` counts user and assistant messages (what a reader calls messages),
    not tool calls, results or errors.
    """

    id: str
    title: str | None
    is_temporal: bool
    created_at: float
    updated_at: float
    message_count: int
    mode: str | None = None
    """The session's mode as the user set it (ask, agent, auto, plan); None: the default."""


class AuditRef(_Frozen):
    """Where an audit row landed: its id, its place in the conversation, its turn."""

    message_id: str
    seq: int
    turn_id: str


class AuditEntry(_Frozen):
    """One audit-log row with the record it holds."""

    seq: int
    turn_id: str
    created_at: float
    record: PersistedMessage


class AuditPage(_Frozen):
    """A page of history, oldest first; pass ``next_before_seq`` to fetch the page before it
    (or, reading forward, ``next_after_seq`` for the page after it)."""

    entries: list[AuditEntry]
    next_before_seq: int | None
    next_after_seq: int | None = None


class TurnUsage(_Frozen):
    """Tokens one turn spent (all its model calls), as the provider reported them."""

    turn_id: str
    model: str | None
    requests: int
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
