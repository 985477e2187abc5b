"""The fake server streams at a model's pace: `pace` chunks a second on a fixed schedule
(the paced benchmark's workload), and says when each stream's first frame left."""

from __future__ import annotations

import time

import httpx2

from agentik_jupyter.testing import FakeLLMServer, Reply


def arrivals(server: FakeLLMServer) -> list[float]:
    """When each piece of the streamed body reached a plain client (perf_counter)."""
    times: list[float] = []
    with (
        httpx2.Client() as client,
        client.stream(
            "POST",
            f"{server.base_url}/chat/completions",
            headers={"Authorization": "Bearer k"},
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "q"}]},
        ) as response,
    ):
        for _ in response.iter_raw():
            times.append(time.perf_counter())
    return times


def test_a_paced_stream_keeps_its_rate_and_records_its_first_frame() -> None:
    with FakeLLMServer(pace=100) as server:
        server.push(Reply.text("abcd" * 40, chunks=40))  # 40 text frames, plus the role and the end
        sent_before = time.perf_counter()
        got = arrivals(server)
    assert len(server.first_frame_at) == 1 and sent_before < server.first_frame_at[0] <= got[0]
    span = got[-1] - server.first_frame_at[0]
    assert 0.40 <= span < 0.60, span  # ~42 frames at 100 a second, not all at once
    assert len(got) >= 30  # they arrive one by one


def test_without_a_pace_the_stream_goes_at_once() -> None:
    with FakeLLMServer() as server:
        server.push(Reply.text("abcd" * 40, chunks=40))
        got = arrivals(server)
    assert got[-1] - server.first_frame_at[0] < 0.2
