"""Streaming: bounded update rate, exact final state, few widgets, and bytes linear in the answer."""

from __future__ import annotations

import random

from agentik_jupyter.core.orchestrator import Orchestrator
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import ChatMessage
from agentik_jupyter.widgets.body import TurnBody
from agentik_jupyter.widgets.markdown import render_markdown
from agentik_jupyter.widgets.stream import MAX_WAIT_S, RATE_HZ, StreamBuffer
from tests.widgets_support import CommLog, FakeClock, comm_log  # noqa: F401


def answer(size: int, seed: int = 7) -> str:
    """Markdown like a model writes it: paragraphs, lists and fenced code with blank lines."""
    rng = random.Random(seed)
    words = "the data frame has **many** rows and `columns` with NaN values <b>not html</b>".split()
    blocks: list[str] = []
    while sum(len(b) + 2 for b in blocks) < size:
        kind = rng.random()
        if kind < 0.15:
            body = "\n".join(
                f"x_{i} = df['c{i}'].mean()" + ("\n" if i % 7 == 3 else "") for i in range(rng.randint(3, 30))
            )
            blocks.append(f"```python\n{body}\n```")
        elif kind < 0.3:
            blocks.append("\n".join(f"- item {i} " + " ".join(rng.choices(words, k=6)) for i in range(5)))
        else:
            blocks.append(" ".join(rng.choices(words, k=rng.randint(5, 150))))
    return "\n\n".join(blocks)[:size]


def stream(text: str, seconds_per_char: float, log: CommLog) -> tuple[StreamBuffer, int]:
    clock = FakeClock()
    buffer = StreamBuffer(clock=clock)
    log.reset()
    for ch in text:
        clock.advance(seconds_per_char)
        buffer.append(ch)
    buffer.finish()
    return buffer, log.total_bytes


def final_html(buffer: StreamBuffer) -> str:
    assert buffer.widget is not None
    (widget,) = buffer.widget.children
    return str(widget.value)


def opens(log: CommLog) -> int:
    return sum(1 for kind, *_ in log.messages if kind == "comm_open")


def updates(log: CommLog) -> int:
    return sum(1 for kind, _, _, data in log.messages if kind == "comm_msg" and data.get("method") == "update")


def test_final_state_is_the_full_text_rendered(comm_log: CommLog) -> None:
    text = answer(5_000)
    buffer, _ = stream(text, 0.003, comm_log)
    assert buffer.text == text
    assert final_html(buffer) == render_markdown(text)


def test_updates_are_bounded_by_the_rate(comm_log: CommLog) -> None:
    text = answer(6_000)
    clock = FakeClock()
    buffer = StreamBuffer(clock=clock)
    comm_log.reset()
    for ch in text:
        clock.advance(0.001)
        buffer.append(ch)
    seconds = clock.now
    assert 0 < updates(comm_log) <= seconds * RATE_HZ + 2
    assert buffer.updates <= seconds * RATE_HZ + 2
    buffer.finish()
    assert buffer.text == text


def test_at_most_60_widget_updates_per_1000_tokens_and_the_final_text_exact(comm_log: CommLog) -> None:
    """1,000 tokens of 4 characters, at full speed, at 250 and at 100 tokens a second."""
    text = answer(4_000, seed=5)
    for seconds_per_token in (0.0, 0.004, 0.01):
        clock = FakeClock()
        comm_log.reset()
        buffer = StreamBuffer(clock=clock)
        for i in range(0, len(text), 4):
            clock.advance(seconds_per_token)
            buffer.append(text[i : i + 4])
        buffer.finish()
        assert updates(comm_log) + opens(comm_log) <= 60, (seconds_per_token, updates(comm_log), opens(comm_log))
        assert final_html(buffer) == render_markdown(text)


def test_a_long_answer_has_few_widgets(comm_log: CommLog) -> None:
    """A 1 MB answer used to open one HTML widget per Markdown block (~1,700 of them)."""
    text = answer(1_000_000, seed=2)
    clock = FakeClock()
    buffer = StreamBuffer(clock=clock)
    comm_log.reset()
    for i in range(0, len(text), 40):
        clock.advance(0.01)
        buffer.append(text[i : i + 40])
    assert opens(comm_log) <= 40, opens(comm_log)
    assert comm_log.total_bytes < 4 * len(text), comm_log.total_bytes / len(text)
    buffer.finish()
    assert final_html(buffer) == render_markdown(text)


def test_code_fences_survive_forced_cuts(comm_log: CommLog) -> None:
    code = "\n".join(f"value_{i} = {i} * 2" for i in range(600))
    text = f"Intro.\n\n```python\n{code}\n```\n\nAfter."
    clock = FakeClock()
    buffer = StreamBuffer(clock=clock)
    for ch in text:
        clock.advance(0.01)
        buffer.append(ch)
    parts = [w.value for w in buffer.widgets]
    assert len(parts) >= 3
    assert all(p.count("<pre>") == p.count("</pre>") for p in parts)
    assert sum("value_" in p and "<code" in p for p in parts) >= 2
    buffer.finish()
    assert final_html(buffer) == render_markdown(text)


def test_bytes_stay_linear_for_1_char_deltas(comm_log: CommLog) -> None:
    text = answer(20_000)
    ratios = {}
    for pace in (0.0005, 0.01, 0.04):
        _, sent = stream(text, pace, comm_log)
        ratios[pace] = sent / len(text)
    assert all(r < 20 for r in ratios.values()), ratios
    _, small = stream(answer(5_000, seed=3), 0.01, comm_log)
    _, big = stream(answer(20_000, seed=3), 0.01, comm_log)
    small_ratio, big_ratio = small / 5_000, big / 20_000
    assert big_ratio < small_ratio * 1.3 + 1, (small_ratio, big_ratio)


async def test_real_turn_streamed_in_1_char_deltas_is_cheap(comm_log: CommLog) -> None:
    text = answer(20_000, seed=11)
    chat, agent = ChatStore(), AgentStore()
    orch = Orchestrator(ScriptedTransport([Step.say(text, chunk_size=1)]), ToolRegistry(), chat, agent)
    body = TurnBody()
    orch.on_event(body.handle)
    comm_log.reset()
    outcome = await orch.run([ChatMessage(role="user", content="go")])
    body.finish()
    assert outcome.reason == "complete" and body.text == text
    assert comm_log.total_bytes < 20 * len(text), comm_log.total_bytes / len(text)
    assert [w.value for w in body.items] == [render_markdown(text)]


async def test_a_pause_flushes_the_tail_on_the_loop(comm_log: CommLog) -> None:
    import asyncio

    buffer = StreamBuffer()
    buffer.append("Hello")
    buffer.append(" world")
    await asyncio.sleep(MAX_WAIT_S + 0.1)
    assert "Hello world" in buffer.widgets[-1].value
    buffer.finish()
