"""A long session's bookkeeping, mixed into Session: what every request costs besides its messages,
compaction, and the tokens each turn spent."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from agentik_jupyter.core.compaction import (
    COMPACT_FAILED,
    compacted_line,
    shorten_old_results,
    summary_message,
    summary_request,
    summary_text,
    turns_to_summarise,
)
from agentik_jupyter.core.orchestrator import Orchestrator, TurnOutcome
from agentik_jupyter.core.prompt import build_system_prompt
from agentik_jupyter.persistence import AsyncSessionDB, TurnUsage, estimate_tokens
from agentik_jupyter.persistence.budget import message_tokens
from agentik_jupyter.providers.base import StreamDone
from agentik_jupyter.providers.openai_compatible import tool_to_wire
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.types import AgentContext, ChatMessage, Usage, new_id

log = logging.getLogger(__name__)


class LongSession:
    """The parts of Session that keep a long conversation within its budget and its cost in view."""

    orchestrator: Orchestrator
    db: AsyncSessionDB | None
    conversation_id: str | None
    context_provider: Callable[[], AgentContext] | None
    _lock: asyncio.Lock
    _turn_id: str | None
    _working: list[list[ChatMessage]]
    _schema_tokens: tuple[tuple[object, ...], int] | None
    _notice: str | None
    _last_context: AgentContext | None
    _history_cut: bool
    _compaction_usage: Usage | None
    _usages: list[TurnUsage]
    _usage_listeners: list[Callable[[], None]]

    @property
    def busy(self) -> bool:
        raise NotImplementedError

    def _overhead(self, context: AgentContext | None) -> int:
        """Tokens of every request besides the messages: the system prompt and the schemas of the
        tools the session's mode offers (those the request carries), estimated as they go on the wire."""
        tools = tuple(self.orchestrator.offered())
        known = self._schema_tokens
        if known is not None and len(known[0]) == len(tools) and all(a is b for a, b in zip(known[0], tools)):
            schemas = known[1]  # the same tools (a changed tool is a new object)
        else:
            wire = [tool_to_wire(t.schema_()) for t in tools]
            schemas = estimate_tokens(json.dumps(wire, ensure_ascii=False)) if wire else 0
            self._schema_tokens = (tools, schemas)
        return schemas + estimate_tokens(build_system_prompt(context))

    async def compact(self) -> str:
        """`%agent compact`: summarise every turn of working memory but the newest; the line says how it went."""
        if self.busy:
            return "A turn is running: compact after it ends."
        if self.db is not None and self.conversation_id is None:
            return "Nothing to compact: no session yet."
        context = self.context_provider() if self.context_provider is not None else None
        async with self._lock:
            self._turn_id = None
            await self._compact(self.db, None, context, keep=1)
        line, self._notice = self._notice, None
        return line or "Nothing to compact: the session has one turn."

    async def _compact(
        self, db: AsyncSessionDB | None, budget: int | None, context: AgentContext | None, *, keep: int | None
    ) -> list[ChatMessage] | None:
        """Summarise the oldest turns of working memory into one message (the newest turns within
        half the budget, or the newest `keep`, stay verbatim); the history to send, or None when
        nothing was compacted. A summary that fails leaves working memory as it was and says so.
        Without a file (a temporary session) the turns kept in memory are compacted alike."""
        if db is not None and self.conversation_id is not None:
            turns = [t for t in await db.working_turns(self.conversation_id) if t[0] != self._turn_id]
        else:
            turns = [(str(i), list(turn)) for i, turn in enumerate(self._working)]
        costs = [sum(message_tokens(m) for m in messages) for _, messages in turns]
        n = len(turns) - keep if keep is not None else turns_to_summarise(costs, budget or 1)
        if n <= 0:
            return None
        old = [m for _, messages in turns[:n] for m in messages]
        try:
            deltas = [d async for d in self.orchestrator.transport.stream(summary_request(old), context, [])]
            text = summary_text(deltas)
            if not text.strip():
                raise ValueError("the model's summary was empty")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._notice = f"{COMPACT_FAILED}: {scrub(str(exc))[:300]}"
            return None
        self._compaction_usage = next((d.response.usage for d in deltas if isinstance(d, StreamDone)), None)
        summary = summary_message(text, old, n)
        shortened = {m.id: m for m in shorten_old_results([messages for _, messages in turns[n:]])}
        kept = [[shortened.get(m.id, m) for m in messages] for _, messages in turns[n:]]
        if db is not None and self.conversation_id is not None:
            await db.compact(self.conversation_id, [turn for turn, _ in turns[:n]], summary, list(shortened.values()))
        else:
            self._working = [[summary], *kept]
        self._last_context, self._history_cut = None, True  # the next note lists every variable again
        after = message_tokens(summary) + sum(message_tokens(m) for messages in kept for m in messages)
        self._notice = compacted_line(n, sum(costs), after)
        return [summary, *(m for messages in kept for m in messages)]

    async def _record_usage(self, outcome: TurnOutcome, model: str | None) -> None:
        """The turn's tokens: in the sessions file (a resumed session keeps its totals), or in
        memory for a temporary session."""
        turn_id = self._turn_id or new_id("turn_")
        if self.db is None or self.conversation_id is None:
            self._usages.append(_turn_usage(turn_id, outcome, model))
        else:
            await self.db.record_usage(self.conversation_id, turn_id, outcome.usage, model, outcome.requests)
        for listener in list(self._usage_listeners):
            try:
                listener()
            except Exception:
                log.exception("usage listener failed")

    def on_usage(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` when a turn's tokens are recorded (the panel's running total)."""
        self._usage_listeners.append(listener)
        return lambda: self._usage_listeners.remove(listener) if listener in self._usage_listeners else None

    async def usage(self) -> list[TurnUsage]:
        """The tokens each turn of this session spent, oldest first (turns before usage was
        recorded are not there)."""
        if self.db is None:
            return list(self._usages)
        if self.conversation_id is None:
            return []
        return await self.db.turn_usages(self.conversation_id)


def _turn_usage(turn_id: str, outcome: TurnOutcome, model: str | None) -> TurnUsage:
    u = outcome.usage
    return TurnUsage(
        turn_id=turn_id,
        model=model,
        requests=outcome.requests,
        input_tokens=u.input_tokens or 0,
        cached_tokens=u.cached_tokens or 0,
        cache_write_tokens=u.cache_write_tokens or 0,
        output_tokens=u.output_tokens or 0,
    )
