"""A stream at a model's pace wakes the turn at most HANDOVER_HZ times a second (after the
first FREE_S of its words), its first words and its end at once: a token every 4 ms (250 a
second) is not 250 turns a second of the orchestrator, its stores and its views. Both
adapters, the fake provider over real HTTP."""

from __future__ import annotations

import time

import pytest

from agentik_jupyter.providers._read_ahead import FREE_S, HANDOVER_HZ
from agentik_jupyter.providers.base import ChatParams, StreamDone, TextDelta
from agentik_jupyter.providers.config import load_config, make_adapter
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.types import ChatMessage

PARAMS = ChatParams(model="fake-model", messages=[ChatMessage(role="user", content="hello")])
ANSWER = "".join(f"w{i:03d} " for i in range(300))  # 1,500 characters


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
async def test_a_paced_stream_is_handed_over_at_a_screens_rate(provider: str) -> None:
    with FakeLLMServer(pace=250) as server:
        server.push(Reply.text(ANSWER, chunks=300))
        texts: list[tuple[float, str]] = []
        done = None
        async for delta in make_adapter(load_config(server.env(provider))).stream(PARAMS):
            if isinstance(delta, TextDelta):
                texts.append((time.perf_counter(), delta.text))
            elif isinstance(delta, StreamDone):
                done = time.perf_counter()
        first_frame = server.first_frame_at[0]
    assert "".join(t for _, t in texts) == ANSWER and done is not None
    seconds = done - first_frame  # ~1.2 s of streaming
    assert seconds > 1.0
    free = FREE_S * 250  # (every token of the first FREE_S is handed over as it comes)
    assert len(texts) <= seconds * HANDOVER_HZ + free + 3, f"{len(texts)} hand-overs in {seconds:.2f} s"
    assert len(texts) >= seconds * 10, "still streamed, not held to the end"
    # the first words at once (their frame leaves 4 ms after the stream's opening one)
    assert texts[0][0] - first_frame < 0.03 and texts[0][1].startswith("w000")
    assert done - texts[-1][0] < 0.05  # and the end
