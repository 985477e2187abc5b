"""A session's audit log as the panel shows it: rows -> transcript messages, a page at a time.

Pages are read whole-turn (``audit_log(whole_turns=True)``), so a turn is never split between
two pages: no tool result without its call, and no turn marked unfinished because its end is
on the next page.
"""

from __future__ import annotations

from agentik_jupyter.persistence import AuditEntry
from agentik_jupyter.types import (
    AssistantMessage,
    ChatMessage,
    ErrorRecord,
    PersistedMessage,
    ToolResultRecord,
    UserMessage,
)

HISTORY_PAGE = 200
UNFINISHED = "This turn did not finish: the kernel stopped before the answer was complete."


def _unfinished_turns(entries: list[AuditEntry]) -> set[str]:
    """Turns whose audit rows end neither with a final answer nor with an error."""
    last: dict[str, PersistedMessage] = {}
    for entry in entries:
        last[entry.turn_id] = entry.record
    return {
        turn
        for turn, record in last.items()
        if not isinstance(record, ErrorRecord) and not (isinstance(record, AssistantMessage) and not record.tool_calls)
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
    """Audit rows -> transcript for the panel: errors of failed turns included. A question is the
    one the live transcript held (`UserMessage.chat_message`); its context note is never drawn."""
    out: list[ChatMessage] = []
    for r in records:
        if isinstance(r, UserMessage):
            out.append(r.chat_message())
        elif isinstance(r, AssistantMessage):
            out.append(
                ChatMessage(
                    id=r.id,
                    role="assistant",
                    content=r.content,
                    reasoning=r.reasoning,
                    tool_calls=r.tool_calls,
                    timestamp=r.timestamp,
                )
            )
        elif isinstance(r, ToolResultRecord):
            content = r.result.error or str(r.result.result)
            out.append(ChatMessage(id=r.id, role="tool", content=content, tool_result=r.result, timestamp=r.timestamp))
        elif isinstance(r, ErrorRecord):
            out.append(ChatMessage(id=r.id, role="assistant", error=r.message, timestamp=r.timestamp))
    return out
