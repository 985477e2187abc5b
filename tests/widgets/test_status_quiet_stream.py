"""The status line stays still while the answer visibly streams.

The moving answer is the progress: re-sending "Responding… 1.1 s, 2.1 s, …" every second cost a
paced turn ~0.37x its answer in frontend bytes. The elapsed time ticks again once the text
stops (a model that pauses, a tool that runs), and every change of what the agent does is shown.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from agentik_jupyter.core.store import AgentStore
from agentik_jupyter.widgets import status as status_module
from agentik_jupyter.widgets.status import StatusLine

TICK = 0.05


def shown(line: StatusLine) -> list[str]:
    """Every value the line's widget takes from now on (each one an update sent to the frontend)."""
    values: list[str] = []
    line.widget.observe(lambda change: values.append(change["new"]), "value")
    return values


def test_the_line_is_not_re_sent_every_tick_while_the_answer_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status_module, "TICK_S", TICK)
    monkeypatch.setattr(status_module, "MIN_RENDER_INTERVAL_S", 0.0)

    # While the answer streams the line's clock moves with the chunks (10 ms each), not with the
    # loop: a loop slowed by load stretches the test's sleeps between chunks, never the answer.
    streamed = [0.0]
    paused_at: list[float] = []

    def clock() -> float:
        return streamed[0] + (time.monotonic() - paused_at[0] if paused_at else 0.0)

    async def turn() -> tuple[list[str], list[str]]:
        agent = AgentStore()
        line = StatusLine(agent, clock=clock)
        values = shown(line)
        line.begin()
        agent.set(status="responding")
        streaming_from = len(values)
        for _ in range(40):  # 0.4 s of answer text at a model's pace: 8 ticks
            streamed[0] += 0.01
            line.moved()
            await asyncio.sleep(0.01)
        while_streaming = values[streaming_from:]
        paused_at.append(time.monotonic())
        paused_from = len(values)
        # The text stops: the elapsed time moves again, a tick at a time (waited for: a loop slowed
        # by load runs fewer ticks in a given time, and none at all only if ticking never resumes).
        deadline = time.monotonic() + 5.0
        while len(values) - paused_from < 3 and time.monotonic() < deadline:
            await asyncio.sleep(TICK)
        after = values[paused_from:]
        line.end("complete", None)
        line.close()
        return while_streaming, after

    while_streaming, after = asyncio.run(turn())
    assert all("Responding" in v for v in while_streaming), while_streaming
    assert len(while_streaming) <= 1, while_streaming  # (the one tick due as the text began, at most)
    assert len(after) >= 3, after  # the elapsed time ticks when nothing else moves
    assert all("Responding" in v for v in after), after


def test_a_turn_ending_does_not_flash_sending_before_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's state goes idle as the turn finishes, just before its end is shown: the line
    went "◷ Sending…" for that moment (an update nobody should see, and a wrong one)."""
    monkeypatch.setattr(status_module, "MIN_RENDER_INTERVAL_S", 0.0)

    async def turn() -> list[str]:
        agent = AgentStore()
        line = StatusLine(agent)
        line.begin()
        agent.set(status="responding")
        values = shown(line)
        agent.reset()  # the orchestrator's _finish, right before its End event
        await asyncio.sleep(0.02)
        line.end("complete", None)
        line.close()
        return values

    values = asyncio.run(turn())
    assert len(values) == 1 and "Done" in values[0], values
