"""The benchmark cases. Each returns a dict with `ratio` and the two timings behind it."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2

from agentik_jupyter.core.session import Session
from agentik_jupyter.core.transport import InProcessTransport
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.tools.registry import ToolRegistry

from .checkpoints import checkpoints
from .engines import ENGINE_BENCHMARKS
from .kernel_turns import kernel_turns, resume_10k, stop_latency, user_cell_latency
from .long_session import long_session
from .mcp_compare import mcp_compare
from .modes import modes
from .paced_turns import paced_turns
from .saved_turn import saved_turn
from .server_turns import server_turns

ANSWER = " ".join(f"word{i}" for i in range(2000))
REPEATS = 7


async def _raw_stream(server: FakeLLMServer) -> float:
    """The baseline: one streamed completion read with plain httpx2, no parsing."""
    server.push(Reply.text(ANSWER))
    started = time.perf_counter()
    async with httpx2.AsyncClient() as client:
        async with client.stream(
            "POST",
            f"{server.base_url}/chat/completions",
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
    return {
        "ratio": round(ours / raw, 2),
        "ours_s": round(ours, 4),
        "raw_httpx2_s": round(raw, 4),
        "answer_words": 2000,
    }


async def persisted_vs_temporary_turn() -> dict[str, Any]:
    """What writing the turn to SQLite (audit + working memory) adds to a turn."""
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        db = await AsyncSessionDB.open(Path(tmp) / "bench.agentik.db")
        temp = await _median(lambda: _our_turn(server, None))
        saved = await _median(lambda: _our_turn(server, db))
        await db.aclose()
    return {"ratio": round(saved / temp, 2), "persisted_s": round(saved, 4), "temporary_s": round(temp, 4)}


def describe_big_vs_small_frame() -> dict[str, Any]:
    """describe_dataframe on a 10M x 500 frame vs a 100 x 500 one: time and text size."""
    import numpy as np
    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    from agentik_jupyter.tools.context import make_context_tools

    shell = InteractiveShell.instance()
    column = np.arange(10_000_000, dtype="float64")
    shell.user_ns["big"] = pd.DataFrame({f"c{i}": column for i in range(500)}, copy=False)
    shell.user_ns["small"] = pd.DataFrame({f"c{i}": column[:100] for i in range(500)})
    describe = {t.name: t for t in make_context_tools(shell)}["describe_dataframe"].execute

    def timed(name: str) -> tuple[float, int]:
        started = time.perf_counter()
        text = describe(name=name).text
        return time.perf_counter() - started, len(text)

    timed("small")
    small = min(timed("small") for _ in range(3))
    big = min(timed("big") for _ in range(3))
    return {
        "ratio": round(big[0] / small[0], 2),
        "big_s": round(big[0], 4),
        "small_s": round(small[0], 4),
        "text_ratio": round(big[1] / small[1], 2),
        "big_chars": big[1],
        "small_chars": small[1],
    }


async def widget_bytes_per_answer() -> dict[str, Any]:
    """Bytes the turn view sends to the frontend for a 20 KB answer streamed 1 char at a time."""
    import json

    import comm
    from comm.base_comm import BaseComm

    from agentik_jupyter.testing import ScriptedTransport, Step
    from agentik_jupyter.widgets import TurnView

    sent = 0

    class Counting(BaseComm):
        def publish_msg(
            self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
        ) -> None:
            nonlocal sent
            sent += len(json.dumps(data or {}, default=str).encode()) + sum(len(b) for b in buffers or [])

    original = comm.create_comm
    comm.create_comm = lambda *a, **k: Counting(*a, **k)
    try:
        answer = ("Streaming a long answer, one character at a time. " * 400)[:20_000]
        session = Session(ScriptedTransport([Step.say(answer, chunk_size=1)]), ToolRegistry(), temporary=True)
        TurnView(session, "q", wait=True, display=lambda *a, **k: None)
        await session.send("q")
    finally:
        comm.create_comm = original
    return {"ratio": round(sent / len(answer), 2), "frontend_bytes": sent, "answer_bytes": len(answer)}


BENCHMARKS: dict[str, Callable[[], Any]] = {
    "kernel_turns": kernel_turns,
    "paced_turns": paced_turns,
    "server_turns": server_turns,
    "user_cell_latency": user_cell_latency,
    "stop_latency": stop_latency,
    "resume_10k": resume_10k,
    "saved_turn": saved_turn,
    "turn_vs_raw_httpx": turn_vs_raw_httpx,
    "persisted_vs_temporary_turn": persisted_vs_temporary_turn,
    "describe_big_vs_small_frame": describe_big_vs_small_frame,
    "widget_bytes_per_answer": widget_bytes_per_answer,
    "long_session": long_session,
    "modes": modes,
    "checkpoints": checkpoints,
    "mcp_compare": mcp_compare,
    **ENGINE_BENCHMARKS,
}
