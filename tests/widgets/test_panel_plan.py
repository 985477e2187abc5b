"""A Plan-mode turn's plan card as the chat panel shows it, on a real Session and SQLite file: a cell's
turn shows its plan in the panel too (the cell's card has the buttons), and a panel's own turn shows
its card once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ipywidgets import Button, Widget

from agentik_jupyter.core.session import Session
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.plan import PlanRequest, register_plan_tools
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.widgets import ChatPanel, TurnView
from tests.widgets.loop_waits import until
from tests.widgets.test_views import html_of

STEPS = ["Make total", "Double it"]


def plan_session(db: AsyncSessionDB, steps: list[Any]) -> Session:
    """A session with Plan mode's tools wired as the kernel wires them: the plan's card goes to the
    session's approval presenter, and running the plan switches the turn to its mode."""
    reg = ToolRegistry()
    session = Session(ScriptedTransport(steps), reg, db=db)

    def present(request: Any) -> None:
        assert session.approval_presenter is not None
        session.approval_presenter(request)

    def run(plan: PlanRequest) -> None:
        session.orchestrator.mode = plan.run_mode
        session.orchestrator.plan = plan

    register_plan_tools(reg, present, run, lambda: session.orchestrator.plan)
    session.mode = "plan"
    return session


def widgets(root: Widget) -> Iterator[Widget]:
    yield root
    for child in getattr(root, "children", ()):
        yield from widgets(child)


def buttons(root: Widget, description: str) -> list[Button]:
    return [w for w in widgets(root) if isinstance(w, Button) and w.description == description]


async def test_a_cells_plan_shows_in_the_panel_while_it_waits_and_as_it_runs(tmp_path: Path) -> None:
    db = await AsyncSessionDB.open(tmp_path / "plan.agentik.db")
    session = plan_session(
        db,
        [
            Step.call("propose_plan", {"steps": STEPS}),
            Step.call("plan_step", {"step": 1, "status": "done", "note": "21"}),
            Step.say("Total is 42."),
        ],
    )
    panel = ChatPanel(session)
    session.approval_presenter = panel.present_approval  # (`%agent panel` sets it; the cell's turn takes it)
    view = TurnView(session, "Make a total and double it.", wait=True, display=lambda bundle: None)

    def on_start() -> None:
        session.approval_presenter = view.present_approval
        view.attach()

    task = session.start_turn("Make a total and double it.", on_start=on_start)
    view.track(task)
    assert view.widget is not None
    await until(
        lambda: bool(buttons(view.widget, "Run the plan")), lambda: f"no plan card in the cell: {html_of(view.widget)}"
    )
    shown = html_of(panel.history)
    assert "agentik-plan-steps" in shown and "☐ Make total" in shown and "☐ Double it" in shown, shown
    assert "Waiting for the user: nothing ran" in shown
    assert not buttons(panel.widget, "Run the plan")  # the cell's card is the one to answer

    (run,) = buttons(view.widget, "Run the plan")
    run.click()
    assert (await asyncio.wait_for(task, 5)).reason == "complete"
    shown = html_of(panel.history)
    assert shown.count("agentik-plan-steps") == 1, shown
    assert "▶ Running the plan in Agent" in shown and "✓ Make total" in shown and "21" in shown, shown
    assert "☐ Double it" in shown and "Waiting for the user" not in shown
    view.finish()
    panel.close()
    await db.aclose()


async def test_a_panel_turns_plan_shows_its_card_once(tmp_path: Path) -> None:
    db = await AsyncSessionDB.open(tmp_path / "own.agentik.db")
    session = plan_session(db, [Step.call("propose_plan", {"steps": STEPS}), Step.say("Rejected, then.")])
    panel = ChatPanel(session)
    session.approval_presenter = panel.present_approval
    task = panel.send("Make a total and double it.")
    assert task is not None
    await until(lambda: bool(buttons(panel.widget, "Run the plan")), lambda: f"no plan card: {html_of(panel.history)}")
    assert html_of(panel.history).count("agentik-plan-steps") == 1
    (reject,) = buttons(panel.widget, "Reject")
    reject.click()
    assert (await asyncio.wait_for(task, 5)).reason == "complete"
    shown = html_of(panel.history)
    assert shown.count("agentik-plan-steps") == 1 and "✗ Plan rejected: nothing ran" in shown, shown
    panel.close()
    await db.aclose()
