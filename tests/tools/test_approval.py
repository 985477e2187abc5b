"""The approval gate: policy resolution, the request a card drives, timeouts, and a free loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agentik_jupyter.core.orchestrator import Orchestrator
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.approval import (
    APPROVE_ENV,
    DEFAULT_TIMEOUT,
    TIMEOUT_ENV,
    ApprovalGate,
    ApprovalRequest,
    approval_timeout,
    describe_tools,
    format_tools,
)
from agentik_jupyter.tools.registry import ToolRegistry, definition_from_function
from agentik_jupyter.types import ChatMessage, ToolCall, ToolDefinition


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(APPROVE_ENV, raising=False)
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)


def run_code_def() -> ToolDefinition:
    return ToolDefinition(name="run_code", policy="ask", execute=lambda code: code, source="builtin")


def call(name: str = "run_code", **args: Any) -> ToolCall:
    return ToolCall(id=f"call_{name}_{len(args)}", name=name, args=args or {"code": "df.head()"})


class Card:
    """A stand-in for the widget card: records requests and answers them when told."""

    def __init__(self, answer: str | None = None) -> None:
        self.requests: list[ApprovalRequest] = []
        self.answer = answer

    def __call__(self, request: ApprovalRequest) -> None:
        self.requests.append(request)
        if self.answer == "approve":
            request.approve()
        elif self.answer == "always":
            request.approve(always=True)
        elif self.answer == "deny":
            request.deny()


async def test_approve_shows_the_exact_code_and_allows_the_call() -> None:
    card = Card("approve")
    gate = ApprovalGate(card, timeout=5)
    assert await gate(call(code="print(1)\nx = 2"), run_code_def()) is True
    request = card.requests[0]
    assert request.tool_name == "run_code" and request.code == "print(1)\nx = 2"
    assert request.display_text == "print(1)\nx = 2" and request.language == "python"
    assert request.done and request.decision == "approved" and request.approved
    assert gate.pending == {}


async def test_deny_refuses_and_other_arguments_show_as_json() -> None:
    card = Card("deny")
    gate = ApprovalGate(card, timeout=5)
    definition = ToolDefinition(name="fs__delete", policy="ask", execute=lambda path: path, source="mcp")
    assert await gate(call("fs__delete", path="/tmp/x"), definition) is False
    request = card.requests[0]
    assert request.code is None and request.language == "json" and '"path": "/tmp/x"' in request.display_text
    assert request.decision == "denied" and request.reason


async def test_always_remembers_the_tool_for_the_session() -> None:
    card = Card("always")
    gate = ApprovalGate(card, timeout=5)
    assert await gate(call(), run_code_def()) is True
    assert await gate(call(code="second()"), run_code_def()) is True
    assert len(card.requests) == 1 and gate.always == {"run_code"}
    other = ToolDefinition(name="other", policy="ask", execute=lambda: None)
    assert await gate(call("other", a=1), other) is True and len(card.requests) == 2
    gate.forget("run_code")
    card.answer = "deny"
    assert await gate(call(), run_code_def()) is False and len(card.requests) == 3


async def test_a_pending_approval_times_out_as_a_denial() -> None:
    card = Card()
    resolved: list[str | None] = []
    gate = ApprovalGate(lambda r: (card(r), r.on_resolved(lambda req: resolved.append(req.decision))), timeout=0.05)
    assert await gate(call(), run_code_def()) is False
    request = card.requests[0]
    assert request.decision == "timeout" and "0.05" in (request.reason or "") and resolved == ["timeout"]
    assert request.approve() is False  # a late click changes nothing


async def test_timeout_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, "0.05")
    gate = ApprovalGate(Card(), timeout=None)
    started = asyncio.get_running_loop().time()
    assert await gate(call(), run_code_def()) is False
    assert asyncio.get_running_loop().time() - started < 2


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, DEFAULT_TIMEOUT),
        ("", DEFAULT_TIMEOUT),
        ("12.5", 12.5),
        ("0", None),
        ("none", None),
        ("inf", None),
        ("soon", DEFAULT_TIMEOUT),
    ],
)
def test_approval_timeout_parsing(monkeypatch: pytest.MonkeyPatch, raw: str | None, expected: float | None) -> None:
    if raw is not None:
        monkeypatch.setenv(TIMEOUT_ENV, raw)
    assert approval_timeout() == expected
    assert approval_timeout(3) == 3


@pytest.mark.parametrize(("mode", "expected"), [("auto", True), ("deny", False), ("AUTO", True)])
async def test_env_policy_decides_without_asking(monkeypatch: pytest.MonkeyPatch, mode: str, expected: bool) -> None:
    monkeypatch.setenv(APPROVE_ENV, mode)
    card = Card("approve")
    assert await ApprovalGate(card, timeout=5)(call(), run_code_def()) is expected
    assert card.requests == []


async def test_env_ask_still_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(APPROVE_ENV, "ask")
    card = Card("approve")
    assert await ApprovalGate(card, timeout=5)(call(), run_code_def()) is True and len(card.requests) == 1


async def test_no_ui_denies_at_once_with_a_message() -> None:
    messages: list[str] = []
    gate = ApprovalGate(None, timeout=None, notify=messages.append)
    assert await asyncio.wait_for(gate(call(), run_code_def()), 1) is False
    assert len(messages) == 1 and "run_code" in messages[0] and APPROVE_ENV in messages[0]


async def test_a_failing_card_denies_instead_of_hanging() -> None:
    messages: list[str] = []

    def broken(request: ApprovalRequest) -> None:
        raise RuntimeError("no widgets")

    gate = ApprovalGate(broken, timeout=None, notify=messages.append)
    assert await asyncio.wait_for(gate(call(), run_code_def()), 1) is False
    assert "no widgets" in messages[0] and gate.last is not None and gate.last.decision == "denied"


async def test_the_loop_stays_responsive_while_an_approval_is_pending() -> None:
    card = Card()
    gate = ApprovalGate(card, timeout=10)
    ticks = 0

    async def other_work() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    worker = asyncio.create_task(other_work())
    waiting = asyncio.create_task(gate(call(), run_code_def()))
    await asyncio.sleep(0.1)
    assert not waiting.done() and ticks > 10 and len(gate.pending) == 1
    card.requests[0].approve()
    assert await asyncio.wait_for(waiting, 1) is True
    worker.cancel()


async def test_approve_from_another_thread() -> None:
    card = Card()
    gate = ApprovalGate(card, timeout=5)
    waiting = asyncio.create_task(gate(call(), run_code_def()))
    await asyncio.sleep(0.01)
    seen: list[bool] = []
    card.requests[0].on_resolved(lambda r: seen.append(threading.current_thread() is threading.main_thread()))
    thread = threading.Thread(target=card.requests[0].approve)
    thread.start()
    thread.join()
    assert await asyncio.wait_for(waiting, 1) is True
    assert seen == [True]  # hooks run on the loop's thread, where widgets can be updated


async def test_on_resolved_fires_once_and_late_subscribers_are_called_at_once() -> None:
    card = Card()
    gate = ApprovalGate(card, timeout=5)
    waiting = asyncio.create_task(gate(call(), run_code_def()))
    await asyncio.sleep(0.01)
    request = card.requests[0]
    calls: list[str] = []
    request.on_resolved(lambda r: calls.append(f"early:{r.decision}"))
    unsubscribed = request.on_resolved(lambda r: calls.append("removed"))
    unsubscribed()
    assert request.deny("not now") is True and request.approve() is False
    assert await waiting is False
    request.on_resolved(lambda r: calls.append(f"late:{r.decision}"))
    assert calls == ["early:denied", "late:denied"] and request.reason == "not now"


async def test_stopping_the_turn_cancels_the_request() -> None:
    card = Card()
    gate = ApprovalGate(card, timeout=5)
    waiting = asyncio.create_task(gate(call(), run_code_def()))
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert card.requests[0].decision == "cancelled" and gate.pending == {}


async def test_deny_pending() -> None:
    card = Card()
    gate = ApprovalGate(card, timeout=5)
    waiting = asyncio.create_task(gate(call(), run_code_def()))
    await asyncio.sleep(0.01)
    assert gate.deny_pending("stopped") == 1
    assert await waiting is False and card.requests[0].reason == "stopped"


async def test_denial_reaches_the_model_which_answers_and_approval_runs_the_tool() -> None:
    ran: list[str] = []
    registry = ToolRegistry()

    def run_code(code: str) -> str:
        """Run code."""
        ran.append(code)
        return "ok"

    registry.add(definition_from_function(run_code, policy="ask"))
    card = Card("deny")
    transport = ScriptedTransport(
        [
            Step.call("run_code", {"code": "rm()"}),
            Step.say("I won't."),
            Step.call("run_code", {"code": "ok()"}),
            Step.say("Done."),
        ]
    )
    chat = ChatStore()
    orch = Orchestrator(transport, registry, chat, AgentStore(), approver=ApprovalGate(card, timeout=5))
    first = await orch.run([ChatMessage(role="user", content="delete")])
    denial = next(m.tool_result for m in first.messages if m.role == "tool")
    assert first.reason == "complete" and "did not approve" in (denial.error or "") and ran == []
    assert first.messages[-1].content == "I won't."
    card.answer = "approve"
    second = await orch.run([ChatMessage(role="user", content="run ok")])
    assert second.reason == "complete" and ran == ["ok()"]


async def test_describe_tools_shows_the_policy_in_effect(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = ToolRegistry()
    registry.add(run_code_def())
    registry.add(
        ToolDefinition(
            name="list_variables",
            description="List the user's variables.\nMore.",
            execute=lambda: "",
            source="builtin",
            policy="auto",
        )
    )
    registry.add(ToolDefinition(name="rm", policy="deny", execute=lambda: "", source="user"))
    gate = ApprovalGate(Card(), timeout=5)
    rows = {r.name: r for r in describe_tools(registry, gate)}
    assert rows["run_code"].policy == "ask" and rows["list_variables"] == (
        "list_variables",
        "auto",
        "builtin",
        "List the user's variables.",
    )
    assert rows["rm"].policy == "deny"
    gate.always.add("run_code")
    assert describe_tools(registry, gate)[0].policy.startswith("auto (always")
    monkeypatch.setenv(APPROVE_ENV, "deny")
    assert describe_tools(registry, gate)[0].policy == f"deny ({APPROVE_ENV}=deny)"
    assert describe_tools(registry, ApprovalGate(None))[1].policy == "auto"
    monkeypatch.delenv(APPROVE_ENV)
    assert "no approval UI" in describe_tools(registry, ApprovalGate(None))[0].policy
    table = format_tools(registry, gate).splitlines()
    assert table[0].split() == ["tool", "policy", "source", "description"] and len(table) == 4
    assert format_tools(ToolRegistry()) == "No tools are registered."
