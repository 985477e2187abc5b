"""The approval card resolves the real ApprovalRequest and shows the decision."""

from __future__ import annotations

import asyncio

import pytest

from agentik_jupyter.core.session import Session
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.approval import ApprovalGate, ApprovalRequest
from agentik_jupyter.tools.registry import ToolRegistry, tool
from agentik_jupyter.tools.status import waiting_on
from agentik_jupyter.types import ToolCall, ToolDefinition
from agentik_jupyter.widgets import ApprovalCard, TurnView


def request(args: dict[str, object], name: str = "run_code") -> ApprovalRequest:
    definition = ToolDefinition(name=name, execute=lambda **kw: None, policy="ask")
    return ApprovalRequest(ToolCall(id="c1", name=name, args=args), definition, asyncio.get_running_loop())


@pytest.mark.parametrize(
    ("button", "decision", "always"),
    [("approve_button", "approved", False), ("deny_button", "denied", False), ("always_button", "approved", True)],
)
async def test_buttons_resolve_the_request(button: str, decision: str, always: bool) -> None:
    req = request({"code": "import os\nprint('<script>')"})
    card = ApprovalCard(req)
    assert "print(&#x27;&lt;script&gt;&#x27;)" in card.question.value and "language-python" in card.question.value
    getattr(card, button).click()
    assert await req.wait(1.0) is (decision == "approved")
    assert req.decision == decision and req.always is always
    assert card.approve_button.disabled and card.buttons.layout.display == "none"
    assert ("Approved" if decision == "approved" else "Denied") in card.outcome.value


async def test_arguments_are_listed_escaped_and_timeout_is_reported() -> None:
    req = request({"query": "<b>x</b>"}, name="mcp__search")
    card = ApprovalCard(req)
    assert "<code>query</code>:" in card.question.value and "&lt;b&gt;x&lt;/b&gt;" in card.question.value
    assert await req.wait(0.01) is False
    assert "No answer in time" in card.outcome.value


async def test_turn_waits_for_the_card_and_continues_after_denial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTIK_APPROVE", raising=False)
    reg = ToolRegistry()

    @tool(registry=reg, policy="ask")
    def run_code(code: str) -> str:
        """Run code."""
        return "ran"

    s: Session
    gate = ApprovalGate(present=lambda r: s.approval_presenter(r), timeout=5)  # type: ignore[misc]
    s = Session(
        ScriptedTransport([Step.call("run_code", {"code": "1+1"}), Step.say("Denied, fine.")]),
        reg,
        temporary=True,
        approver=gate,
    )
    view = TurnView(s, "run it", wait=True, display=lambda b: None)
    s.approval_presenter = view.present_approval
    task = s.start_turn("run it")
    while not gate.pending:
        await asyncio.sleep(0.01)
    cards = [w for w in view.body.widget.children if "agentik-approval" in w._dom_classes]
    assert len(cards) == 1
    (pending,) = gate.pending.values()
    card_widget = cards[0]
    card_widget.children[1].children[1].click()
    outcome = await asyncio.wait_for(task, 2.0)
    assert outcome.reason == "complete" and pending.decision == "denied"
    tool_entry = view.finish()["application/vnd.agentik.transcript+json"]["entries"][1]
    assert "did not approve" in tool_entry["error"]


async def test_a_tool_card_says_it_waits_for_the_user_and_runs_once_approved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTIK_APPROVE", raising=False)
    reg = ToolRegistry()
    running, ran, answered = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @tool(registry=reg, policy="ask")
    async def run_code(code: str) -> str:
        """Run code."""
        running.set()
        await ran.wait()
        return "ran"

    @tool(registry=reg, policy="auto")
    async def edit_cell(source: str) -> str:
        """Propose an edit and wait for the user's answer on its diff."""
        waiting_on("the diff on cell 3")
        await answered.wait()
        waiting_on(None)
        return "accepted"

    s: Session
    gate = ApprovalGate(present=lambda r: s.approval_presenter(r), timeout=5)  # type: ignore[misc]
    steps = [Step.call("run_code", {"code": "1+1"}), Step.call("edit_cell", {"source": "x = 1"}), Step.say("Done.")]
    s = Session(ScriptedTransport(steps), reg, temporary=True, approver=gate)
    view = TurnView(s, "run it", wait=True, display=lambda b: None)
    s.approval_presenter = view.present_approval
    task = s.start_turn("run it")
    while not gate.pending:
        await asyncio.sleep(0.01)
    (card,) = view.body.cards.values()
    assert card.title.endswith("· waiting for your approval") and "running" not in card.title
    assert "Waiting for your approval…" in card.body_html
    (pending,) = gate.pending.values()
    pending.approve()
    await asyncio.wait_for(running.wait(), 2.0)
    assert card.title.endswith("· running…")
    ran.set()
    while len(view.body.cards) < 2 or "waiting" not in list(view.body.cards.values())[1].title:
        await asyncio.sleep(0.01)
    edit = list(view.body.cards.values())[1]
    assert edit.title.endswith("· waiting for your answer on the diff on cell 3") and card.title.startswith("✓")
    answered.set()
    outcome = await asyncio.wait_for(task, 2.0)
    assert outcome.reason == "complete" and edit.title.startswith("✓")
