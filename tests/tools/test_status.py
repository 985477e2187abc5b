"""A tool waiting for the user says so on the status line, and where: "Running edit_cell… 18 s"
gave no hint that the turn waited for an answer on a diff on another cell.

The orchestrator runs a real tool that reports where it waits (as edit_cell does once its diff
is shown); the turn's status line reads it while the tool waits, and the plain "Running" line
comes back once the user answered. The browser side (the diff's real `shown` reply) is in
tests/browser/test_look.py.
"""

from __future__ import annotations

from agentik_jupyter.core.orchestrator import Orchestrator
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry, tool
from agentik_jupyter.tools.status import label, split, waiting_on
from agentik_jupyter.types import ChatMessage
from agentik_jupyter.widgets.status import StatusLine


def test_label_and_split_round_trip_even_with_parentheses() -> None:
    assert split(label("edit_cell", "the diff on cell 3 (In [7])")) == ("edit_cell", "the diff on cell 3 (In [7])")
    assert split(label("run_code", None)) == ("run_code", None)
    assert split("my_tool (not a note") == ("my_tool (not a note", None)


async def test_the_status_line_says_where_a_waiting_tool_needs_the_user() -> None:
    seen: dict[str, str] = {}
    registry, agent = ToolRegistry(), AgentStore()
    line = StatusLine(agent, clock=lambda: 5.0)
    line.begin(at=1.0)

    @tool(registry=registry, policy="auto")
    async def propose() -> str:
        """Show a proposal and wait for the user (as edit_cell does)."""
        seen["running"] = line.text()
        waiting_on("the diff on cell 3 (In [7])")
        seen["waiting"] = line.text()
        waiting_on(None)
        seen["answered"] = line.text()
        return "accepted"

    orchestrator = Orchestrator(
        ScriptedTransport([Step.call("propose"), Step.say("Done.")]), registry, ChatStore(), agent
    )
    await orchestrator.run([ChatMessage(role="user", content="Change the cell.")])
    assert seen["running"].startswith("⚙ Running propose…"), seen
    assert seen["waiting"].startswith("◷ propose: waiting for your answer on the diff on cell 3 (In [7])…"), seen
    assert seen["answered"].startswith("⚙ Running propose…"), seen
    waiting_on("nowhere")  # no turn listens (outside a tool call): nothing happens, nothing raises
    assert not line.text().startswith("◷ propose")


def test_a_queued_turn_says_what_the_turn_ahead_waits_for() -> None:
    """Run All held at "Queued (1 ahead)" by an approval far up the page: the line says so."""
    from agentik_jupyter.core.orchestrator import AWAITING_APPROVAL

    agent = AgentStore()
    line = StatusLine(agent, clock=lambda: 5.0)
    line.waiting(ahead=1)
    assert line.text() == "◷ Queued (1 ahead)"
    agent.set(status="processing", active_tool="run_code" + AWAITING_APPROVAL)
    expected = "◷ Queued (1 ahead): the turn ahead waits for your approval to run run_code, in its cell above"
    assert line.text() == expected
    assert expected in line.widget.value  # shown at once, not at the next tick
    agent.set(status="processing", active_tool=label("edit_cell", "the diff on cell 2"))
    assert line.text() == "◷ Queued (1 ahead): the turn ahead waits for your answer on the diff on cell 2"
    agent.set(status="processing", active_tool="run_code")
    assert line.text() == "◷ Queued (1 ahead)"
