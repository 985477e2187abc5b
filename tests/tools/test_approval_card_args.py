"""Honest approval cards and "Always" per conversation."""

from __future__ import annotations

import asyncio
import re
from html import unescape

from agentik_jupyter.tools.approval import ApprovalGate, ApprovalRequest
from agentik_jupyter.types import ToolCall, ToolDefinition
from agentik_jupyter.widgets.approval_card import ApprovalCard

MOVE = ToolDefinition(name="fs__move_file", policy="ask", execute=lambda source, destination: "", source="mcp")
RUN = ToolDefinition(name="run_code", policy="ask", execute=lambda code: code, source="builtin")


def shown(card: ApprovalCard) -> str:
    """The card's text as a reader sees it (tags removed, entities decoded)."""
    return unescape(re.sub(r"<[^>]+>", "", card.question.value))


async def request_for(call: ToolCall, definition: ToolDefinition) -> ApprovalRequest:
    return ApprovalRequest(call, definition, asyncio.get_running_loop())


async def test_a_source_argument_is_not_taken_for_code_and_every_argument_is_listed() -> None:
    call = ToolCall(id="c1", name="fs__move_file", args={"source": "/data/a.csv", "destination": "/tmp/stolen.csv"})
    card = ApprovalCard(await request_for(call, MOVE))
    text = shown(card)
    assert "call this tool with these arguments" in text and "run this code" not in text
    assert "source" in text and "/data/a.csv" in text
    assert "destination" in text and "/tmp/stolen.csv" in text


async def test_long_values_are_folded_whole_and_lines_wrap() -> None:
    long_destination = "/tmp/" + "x" * 3000 + "/end-of-path.csv"
    call = ToolCall(id="c2", name="fs__move_file", args={"source": "a", "destination": long_destination})
    card = ApprovalCard(await request_for(call, MOVE))
    assert "<details" in card.question.value and long_destination in shown(card)
    assert "white-space:pre-wrap" in card.question.value


async def test_run_code_shows_its_code_and_any_other_argument() -> None:
    call = ToolCall(id="c3", name="run_code", args={"code": "df.head()", "timeout": 5})
    card = ApprovalCard(await request_for(call, RUN))
    text = shown(card)
    assert "run this code" in text and "df.head()" in text and "timeout" in text and "5" in text
    assert 'class="language-python"' in card.question.value


async def test_always_belongs_to_one_conversation_and_can_be_revoked() -> None:
    scope = ["conv_a"]
    asked: list[ApprovalRequest] = []

    def present(request: ApprovalRequest) -> None:
        asked.append(request)
        request.approve(always=True) if len(asked) == 1 else request.deny()

    gate = ApprovalGate(present, timeout=5, scope=lambda: scope[0])
    call = ToolCall(id="c4", name="run_code", args={"code": "1"})
    assert await gate(call, RUN) is True and gate.always == {"run_code"}
    assert await gate(call, RUN) is True and len(asked) == 1  # always, in this session
    scope[0] = "conv_b"  # %agent new / resume another
    assert gate.always == set() and await gate(call, RUN) is False and len(asked) == 2
    scope[0] = "conv_a"
    gate.forget()  # %agent policy --reset
    assert gate.always == set()
