"""An outside agent's call (over MCP) as the chat panel shows it, on a real Session and SQLite file: the
status line says which client runs which tool, or that its call waits for the user's approval, as it
does for our own agent's turns (it said "Sending…" for the whole call)."""

from __future__ import annotations

import asyncio
import html
import re
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.core.outside_calls import OutsideCalls
from agentik_jupyter.core.session import Session
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.approval import ApprovalGate
from agentik_jupyter.tools.registry import ToolRegistry, tool
from agentik_jupyter.types import ToolCall
from agentik_jupyter.widgets import ChatPanel, TurnView
from tests.widgets.loop_waits import until

CLIENT = "claude-code"


def line_of(panel: ChatPanel) -> str:
    """The status line as the user reads it (the widget's value, not the store behind it)."""
    return html.unescape(re.sub(r"<[^>]+>", "", panel.status.widget.value))


async def panel_with_outside_calls(
    path: Path, reg: ToolRegistry, steps: list[Any]
) -> tuple[AsyncSessionDB, Session, ApprovalGate, ChatPanel, OutsideCalls]:
    """A session on a real sessions file with its approval gate, its chat panel shown (where the
    cards go) and the outside calls of the notebook's session, as the kernel wires them."""
    db = await AsyncSessionDB.open(path)
    session = Session(ScriptedTransport(steps), reg, db=db)
    panel = ChatPanel(session)
    session.approval_presenter = panel.present_approval
    gate = ApprovalGate(present=panel.present_approval, timeout=10)  # (the kernel's gate shows the panel's cards)
    session.orchestrator.approver = gate

    async def open_db() -> AsyncSessionDB:
        return db

    return db, session, gate, panel, OutsideCalls(session, open_db, None)


async def test_the_status_line_says_which_client_runs_which_tool_and_what_waits_for_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTIK_APPROVE", raising=False)
    reg = ToolRegistry()
    running, finish = asyncio.Event(), asyncio.Event()

    @tool(registry=reg, policy="ask")
    async def run_code(code: str) -> str:
        """Run code."""
        running.set()
        await finish.wait()
        return "ran"

    db, session, gate, panel, calls = await panel_with_outside_calls(
        tmp_path / "outside.agentik.db", reg, [Step.call("run_code", {"code": "y = 2"}), Step.say("Done.")]
    )
    task, result = calls.start(CLIENT, ToolCall(id="call_outside", name="run_code", args={"code": "x = 1"}))
    await until(lambda: bool(gate.pending), lambda: f"no approval asked; the line: {line_of(panel)!r}")
    await until(
        lambda: line_of(panel).startswith(f"◷ Waiting for your approval to run run_code ({CLIENT})… "),
        lambda: f"the line while the call waits for approval: {line_of(panel)!r}",
    )
    (card,) = panel._body.cards.values() if panel._body is not None else ()
    assert card.title.endswith("· waiting for your approval"), card.title  # not "running…"

    (pending,) = gate.pending.values()
    pending.approve()
    await asyncio.wait_for(running.wait(), 5)
    await until(
        lambda: line_of(panel).startswith(f"⚙ {CLIENT}: running run_code… "),
        lambda: f"the line while the call runs: {line_of(panel)!r}",
    )
    assert "Sending" not in line_of(panel)
    finish.set()
    assert (await asyncio.wait_for(result, 5)).result == "ran"
    await task
    assert line_of(panel).startswith("✓ Done · "), line_of(panel)

    # our own agent's turn afterwards is ours again: no client's name on its line
    turn = panel.send("Run it yourself")
    assert turn is not None
    await until(lambda: bool(gate.pending), lambda: f"no approval asked; the line: {line_of(panel)!r}")
    await until(
        lambda: line_of(panel).startswith("◷ Waiting for your approval to run run_code… "),
        lambda: f"the line while our own turn waits for approval: {line_of(panel)!r}",
    )
    running.clear()
    finish.clear()
    (pending,) = gate.pending.values()
    pending.approve()
    await asyncio.wait_for(running.wait(), 5)
    await until(
        lambda: line_of(panel).startswith("⚙ Running run_code… "),
        lambda: f"the line while our own turn runs its tool: {line_of(panel)!r}",
    )
    finish.set()
    assert (await asyncio.wait_for(turn, 5)).reason == "complete"
    panel.close()
    await db.aclose()


async def test_a_cell_turn_queued_behind_the_call_says_which_client_waits_for_approval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTIK_APPROVE", raising=False)
    reg = ToolRegistry()

    @tool(registry=reg, policy="ask")
    def run_code(code: str) -> str:
        """Run code."""
        return "ran"

    db, session, gate, panel, calls = await panel_with_outside_calls(
        tmp_path / "queued.agentik.db", reg, [Step.say("Done.")]
    )
    task, result = calls.start(CLIENT, ToolCall(id="call_outside", name="run_code", args={"code": "x = 1"}))
    await until(lambda: bool(gate.pending), lambda: f"no approval asked; the line: {line_of(panel)!r}")
    view = TurnView(session, "A question", wait=True, display=lambda bundle: None)
    turn = session.start_turn("A question")
    view.track(turn)
    expected = f"◷ Queued (1 ahead): {CLIENT}'s call ahead waits for your approval to run run_code"
    assert view.status.text() == expected  # not "the turn ahead … in its cell above": it is no cell's
    (pending,) = gate.pending.values()
    pending.approve()
    assert (await asyncio.wait_for(result, 5)).result == "ran"
    await task
    assert (await asyncio.wait_for(turn, 5)).reason == "complete"
    view.finish()
    panel.close()
    await db.aclose()
