"""One stop flag per turn: Stop, Jupyter's Interrupt and a SIGINT that lands in a tool's own code all
set the same `StopFlag`, which the orchestrator checks before each model call and tool. A real signal
to this process, a real loop on the main thread, and a tool that swallows the KeyboardInterrupt."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

import pytest

from agentik_jupyter.core.orchestrator import Orchestrator, StopFlag
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry, tool
from agentik_jupyter.types import ChatMessage

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def passed_on() -> Iterator[list[int]]:
    """The handler in place before a tool runs (a kernel's would cancel a cell): it only counts."""
    calls: list[int] = []

    def record(signum: int, frame: FrameType | None) -> None:
        calls.append(signum)

    saved = signal.signal(signal.SIGINT, record)
    try:
        yield calls
    finally:
        signal.signal(signal.SIGINT, saved)


def stubborn_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    def stubborn() -> str:
        """Spin for a while and swallow an interrupt."""
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        end = time.monotonic() + 5
        try:
            while time.monotonic() < end:
                pass
        except KeyboardInterrupt:
            return "swallowed"
        return "ran out"

    return reg


def turn(orch: Orchestrator) -> object:
    return asyncio.run(orch.run([ChatMessage(role="user", content="go")]))


def test_a_swallowed_interrupt_in_a_tool_sets_the_owners_flag_and_ends_the_turn(passed_on: list[int]) -> None:
    flag = StopFlag()
    transport = ScriptedTransport([Step.call("stubborn"), Step.say("never asked")])
    orch = Orchestrator(transport, stubborn_registry(), ChatStore(), AgentStore(), stop=flag)
    outcome = turn(orch)
    assert outcome.reason == "interrupted" and len(transport.requests) == 1  # type: ignore[attr-defined]
    assert flag.requested and passed_on == []  # the one flag the owner (the session) reads


def test_a_flag_set_before_the_turn_asks_nothing_and_the_owner_clears_it() -> None:
    flag = StopFlag()
    flag.requested = True  # an Interrupt while the turn was being prepared
    transport = ScriptedTransport([Step.say("never asked"), Step.say("asked")])
    orch = Orchestrator(transport, ToolRegistry(), ChatStore(), AgentStore(), stop=flag)
    assert turn(orch).reason == "interrupted" and transport.requests == []  # type: ignore[attr-defined]
    flag.requested = False  # the session clears it when its next turn starts
    assert turn(orch).reason == "complete" and len(transport.requests) == 1  # type: ignore[attr-defined]


def test_an_orchestrator_of_its_own_clears_its_flag_for_the_next_turn(passed_on: list[int]) -> None:
    transport = ScriptedTransport([Step.call("stubborn"), Step.say("never asked"), Step.say("Next turn.")])
    orch = Orchestrator(transport, stubborn_registry(), ChatStore(), AgentStore())
    assert turn(orch).reason == "interrupted"  # type: ignore[attr-defined]
    transport.steps = [Step.say("Next turn.")]  # type: ignore[attr-defined]
    second = turn(orch)
    assert second.reason == "complete" and second.messages[-1].content == "Next turn."  # type: ignore[attr-defined]
