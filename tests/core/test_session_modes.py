"""A session's mode in the turn engine: the default from AGENTIK_MODE, a turn's own, the tools offered."""

from __future__ import annotations

import pytest

from agentik_jupyter.core.session import Session
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry, definition_from_function


def registry() -> ToolRegistry:
    def list_variables() -> str:
        return "none"

    def run_code(code: str) -> str:
        return "ran"

    tools = ToolRegistry()
    tools.add(definition_from_function(list_variables, policy="auto", source="builtin"))
    tools.add(definition_from_function(run_code, policy="ask", source="builtin"))
    return tools


async def test_an_unknown_agentik_mode_stops_the_turn_with_the_four_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTIK_MODE", "yolo")
    transport = ScriptedTransport([Step.say("never sent")])
    session = Session(transport, registry(), temporary=True)
    assert session.effective_mode == "agent"  # shown as the default; the turn says what is wrong
    outcome = await session.send("Hi.")
    assert outcome.reason == "error" and "unknown AGENTIK_MODE 'yolo': use ask, agent, auto or plan" in (
        outcome.error or ""
    )
    assert transport.requests == []  # nothing reached the model


async def test_a_turns_mode_offers_its_tools_and_the_sessions_mode_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTIK_MODE", "ask")
    transport = ScriptedTransport([Step.say("Read only."), Step.say("Anything.")])
    session = Session(transport, registry(), temporary=True)
    await session.send("What is there?")
    assert [t.name for t in transport.requests[0].tool_schemas] == ["list_variables"]
    await session.start_turn("Run it.", mode="agent")
    assert [t.name for t in transport.requests[1].tool_schemas] == ["list_variables", "run_code"]
    assert session.mode is None and session.effective_mode == "ask"
