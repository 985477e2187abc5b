"""The benchmark cases. Each returns a dict with `ratio` and the two timings behind it."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import httpx2

from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.registry import ToolRegistry
from agentik_jupyter.session import Session
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.transport import InProcessTransport

ANSWER = " ".join(f"word{i}" for i in range(2000))
REPEATS = 7


async def _raw_stream(server: FakeLLMServer) -> float:
    """The baseline: one streamed completion read with plain httpx2, no parsing."""
    server.push(Reply.text(ANSWER))
    started = time.perf_counter()
    async with httpx2.AsyncClient() as client:
        async with client.stream(
            "POST", f"{server.base_url}/chat/completions",
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "q"}]},
            headers={"Authorization": "Bearer k"},
        ) as response:
            async for _ in response.aiter_bytes():
                pass
    return time.perf_counter() - started


async def _our_turn(server: FakeLLMServer, db: AsyncSessionDB | None) -> float:
    server.push(Reply.text(ANSWER))
    env = server.env("openai-compatible", api_key="bench-key")
    session = Session(InProcessTransport(environ=env), ToolRegistry(), db=db, temporary=db is None)
    events = 0

    def count(_: object) -> None:
        nonlocal events
        events += 1

    session.on_event(count)
    started = time.perf_counter()
    outcome = await session.send("q")
    elapsed = time.perf_counter() - started
    assert outcome.reason == "complete" and session.chat_store.messages[-1].content == ANSWER
    return elapsed


async def _median(fn: Callable[[], Awaitable[float]]) -> float:
    await fn()
    return statistics.median([await fn() for _ in range(REPEATS)])


async def turn_vs_raw_httpx() -> dict[str, Any]:
    """A whole agent turn (adapter, loop, stores, events) vs reading the same stream raw."""
    with FakeLLMServer() as server:
        raw = await _median(lambda: _raw_stream(server))
        ours = await _median(lambda: _our_turn(server, None))
    return {"ratio": round(ours / raw, 2), "ours_s": round(ours, 4), "raw_httpx2_s": round(raw, 4),
            "answer_words": 2000}


async def persisted_vs_temporary_turn() -> dict[str, Any]:
    """What writing the turn to SQLite (audit + working memory) adds to a turn."""
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        db = await AsyncSessionDB.open(Path(tmp) / "bench.agentik.db")
        temp = await _median(lambda: _our_turn(server, None))
        saved = await _median(lambda: _our_turn(server, db))
        await db.aclose()
    return {"ratio": round(saved / temp, 2), "persisted_s": round(saved, 4), "temporary_s": round(temp, 4)}


BENCHMARKS: dict[str, Callable[[], Any]] = {
    "turn_vs_raw_httpx": turn_vs_raw_httpx,
    "persisted_vs_temporary_turn": persisted_vs_temporary_turn,
}
