"""Compaction: the oldest turns of a long session summarised by the model into one message.

When the history would pass the budget, the oldest turns are replaced in working memory by a
summary the model writes (variables made, findings with their numbers, decisions, open
questions); the newest turns stay verbatim, within half the budget, so the next compaction is
many turns away and the cached prefix holds until then. The tool results of the kept turns but
the newest are shortened at the same time (long text cut, images left out): the prefix changes
at a compaction anyway, and never between two. The audit log keeps every original.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentik_jupyter.persistence.budget import result_wire_text
from agentik_jupyter.providers.base import ProviderDelta, StreamDone, TextDelta
from agentik_jupyter.types import ChatMessage

SUMMARY_HEADING = "[Summary of earlier turns of this session]"
SUMMARY_REQUEST = f"""{SUMMARY_HEADING}
Summarise the conversation below between a data scientist and you (an assistant in their Jupyter
kernel), so that you can continue it from the summary alone. Keep:
- the variables made or changed in the kernel and what they hold (names, shapes, columns);
- the findings, with their numbers;
- the decisions taken and what the user declined;
- the open questions.
Write short Markdown bullet points, no preamble.

The conversation:
"""
SUMMARY_NOTE = (
    SUMMARY_HEADING + "\nYou are reading a summary you wrote of {turns} earlier turns of this session (the user's "
    "questions, your tool calls and answers); the original messages are kept in the sessions file.\n\n"
)
COMPACT_FAILED = "Could not summarise the earlier turns, so the oldest are left out of this request instead"
MAX_RESULT_CHARS = 2_000
KEPT_RESULT_CHARS = 2_000
"""A kept turn's tool result is cut to this at a compaction (the newest kept turn stays whole)."""
SHORTENED_MARK = "[shortened when the session was compacted"
SHORTENED = SHORTENED_MARK + ": {more}; the whole result is in the sessions file]"
KEEP_SHARE = 0.5
"""The newest turns kept verbatim fit in this share of the budget."""


def turns_to_summarise(costs: Sequence[int], budget: int, keep_share: float = KEEP_SHARE) -> int:
    """How many of the oldest turns to summarise: the newest turns that fit in `keep_share` of the
    budget stay (always the newest one), the rest go; 0 when there is nothing to gain."""
    kept, total = 0, 0
    for cost in reversed(costs):
        if kept and total + cost > budget * keep_share:
            break
        kept += 1
        total += cost
    return max(0, len(costs) - kept)


def transcript_text(messages: Sequence[ChatMessage]) -> str:
    """The turns as plain text for the summary request: no tool schemas are needed to read it,
    and long tool results are cut (the model summarises, it does not need every row)."""
    lines: list[str] = []
    for m in messages:
        if m.role == "user":
            pictures = f" [{len(m.images)} image(s) attached]" if m.images else ""  # the summary request sends none
            # the question's note says what was in the kernel: the summary keeps the variables from it
            note = f"\n{m.context_note}" if m.context_note else ""
            lines.append(("User: " if not m.summary_of else "") + m.content + pictures + note)
        elif m.role == "assistant":
            if m.content:
                lines.append(f"Assistant: {m.content}")
            for call in m.tool_calls or []:
                lines.append(f"Assistant called {call.name}({json.dumps(call.args, ensure_ascii=False, default=str)})")
        elif m.tool_result is not None:
            result = m.tool_result
            text = f"Error: {result.error}" if result.error is not None else str(result.result or "")
            if len(text) > MAX_RESULT_CHARS:
                text = text[:MAX_RESULT_CHARS] + f" … [{len(text) - MAX_RESULT_CHARS} more characters]"
            lines.append(f"Tool result ({result.name}): {text}")
    return "\n\n".join(lines)


def shorten_old_results(turns: Sequence[Sequence[ChatMessage]], whole: int = 1) -> list[ChatMessage]:
    """The tool results of `turns` (oldest first) but the newest `whole` turns, shortened: text
    past KEPT_RESULT_CHARS cut and images left out, each with a note saying so. Returns only the
    messages that changed, as copies with the same ids; errors stay whole."""
    changed: list[ChatMessage] = []
    for messages in turns[: max(0, len(turns) - whole)]:
        for m in messages:
            result = m.tool_result
            if result is None or result.error is not None:
                continue
            text = result_wire_text(m)
            if SHORTENED_MARK in text[KEPT_RESULT_CHARS:]:
                continue  # shortened at an earlier compaction
            cut = max(0, len(text) - KEPT_RESULT_CHARS)
            images = len(result.images or [])
            if not cut and not images:
                continue
            more = [f"{cut} more characters"] if cut else []
            more += [f"{images} image{'s' if images != 1 else ''} left out"] if images else []
            short = text[:KEPT_RESULT_CHARS] + "\n… " + SHORTENED.format(more=", ".join(more))
            changed.append(
                m.model_copy(update={"tool_result": result.model_copy(update={"result": short, "images": None})})
            )
    return changed


def summary_request(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    return [ChatMessage(role="user", content=SUMMARY_REQUEST + "\n" + transcript_text(messages))]


def summary_message(text: str, replaced: Sequence[ChatMessage], turns: int) -> ChatMessage:
    """The message that stands for the summarised turns; the model is told it reads a summary."""
    return ChatMessage(
        role="user",
        content=SUMMARY_NOTE.format(turns=turns) + text.strip(),
        summary_of=[m.id for m in replaced],
    )


def summary_text(deltas: Sequence[ProviderDelta]) -> str:
    """The summary's text from a collected stream (the final response when there is one)."""
    for delta in deltas:
        if isinstance(delta, StreamDone):
            return delta.response.content or ""
    return "".join(d.text for d in deltas if isinstance(d, TextDelta))


def compacted_line(turns: int, before: int, after: int) -> str:
    return (
        f"Compacted {turns} earlier turn{'s' if turns != 1 else ''} into a summary: {_k(before)} → {_k(after)} tokens"
    )


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens < 10_000 else f"{round(tokens / 1000)}k"


def is_compaction(line: str) -> bool:
    """A transcript line that reports a compaction: news for the user, not an error."""
    return line.startswith("Compacted ") and "into a summary" in line
