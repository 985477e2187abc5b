"""The shape a turn must have before it enters working memory.

Providers reject a history in which an assistant's tool call has no tool result after it
(or a result answers no call), so the store refuses such a turn instead of poisoning every
later request of the conversation.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentik_jupyter.errors import WorkingMemoryError
from agentik_jupyter.types import ChatMessage, ToolCall


def check_turn(messages: Sequence[ChatMessage]) -> None:
    """Raise WorkingMemoryError unless ``messages`` is one well-formed turn.

    One user message first; every assistant tool call answered by a ``tool`` message
    before the next assistant or user message; no result without its call.
    """
    if not messages:
        raise WorkingMemoryError("a turn's working memory cannot be empty")
    if messages[0].role != "user":
        raise WorkingMemoryError(f"a turn starts with the user message, not {messages[0].role!r}")
    pending: dict[str, str] = {}
    for message in messages[1:]:
        if message.role == "user":
            raise WorkingMemoryError("a turn holds exactly one user message, at its start")
        if message.role == "assistant":
            _require_answered(pending)
            pending = _calls_of(message)
            continue
        result = message.tool_result
        if result is None:
            raise WorkingMemoryError(f"tool message {message.id} carries no tool_result")
        if result.tool_call_id not in pending:
            raise WorkingMemoryError(
                f"tool result {result.tool_call_id!r} ({result.name}) answers no pending tool call"
            )
        del pending[result.tool_call_id]
    _require_answered(pending)


def _calls_of(message: ChatMessage) -> dict[str, str]:
    calls: dict[str, str] = {}
    for call in message.tool_calls or []:
        if call.id in calls:
            raise WorkingMemoryError(f"tool call id {call.id!r} appears twice in one assistant message")
        calls[call.id] = call.name
    return calls


def _require_answered(pending: dict[str, str]) -> None:
    if pending:
        unpaired = ", ".join(f"{name} ({call_id})" for call_id, name in pending.items())
        raise WorkingMemoryError(f"tool call without a tool result: {unpaired}")


def complete_pairs(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """What of an interrupted turn may enter working memory: the user message and whole pairs.

    Calls without a result are removed from their assistant message (and from its
    provider_blocks); an assistant message left with neither text nor calls is dropped,
    as are results that answer no call. The result always passes ``check_turn``.
    """
    if not messages or messages[0].role != "user":
        raise WorkingMemoryError("an interrupted turn still starts with its user message")
    kept: list[ChatMessage] = [messages[0]]
    rest = list(messages[1:])
    for index, message in enumerate(rest):
        if message.role != "assistant":
            continue
        answered = _answered_ids(rest[index + 1 :])
        calls = [call for call in message.tool_calls or [] if call.id in answered]
        if not calls and not message.content:
            continue
        kept.append(_with_calls(message, calls))
        seen: set[str] = set()
        for result in rest[index + 1 :]:
            if result.role != "tool":
                break
            call_id = result.tool_result.tool_call_id if result.tool_result else None
            if call_id in {call.id for call in calls} and call_id not in seen:
                seen.add(call_id)
                kept.append(result)
    return kept


def _answered_ids(following: Sequence[ChatMessage]) -> set[str]:
    ids: set[str] = set()
    for message in following:
        if message.role != "tool":
            break
        if message.tool_result is not None:
            ids.add(message.tool_result.tool_call_id)
    return ids


def _with_calls(message: ChatMessage, calls: list[ToolCall]) -> ChatMessage:
    if len(calls) == len(message.tool_calls or []):
        return message
    kept_ids = {call.id for call in calls}
    blocks = message.provider_blocks
    if blocks is not None:
        blocks = [b for b in blocks if b.get("type") != "tool_use" or b.get("id") in kept_ids]
    return message.model_copy(update={"tool_calls": calls or None, "provider_blocks": blocks})
