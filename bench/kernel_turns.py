"""A turn in a real kernel, measured against reading the same stream with raw httpx2 in the same kernel.

Workload (the one issue #14 measured): a fake OpenAI-compatible server (TCP_NODELAY) streams one
answer of 4,000 characters in 4-character chunks (1,000 chunks, ~1,000 tokens). A turn is a
`%%agent --wait` cell sent through jupyter_client, timed from the execute request to the
kernel's idle; the baseline is a cell of the same kernel that reads the same responses' bytes
with httpx2 (one pooled client, kept across cells as the agent keeps its own) and does nothing else;
`ratio` is against it. `ratio_vs_new_client` is against a read that opens a new httpx2 client
each time (CA certificates loaded, a new connection), as bench/cases.py's in-process baseline
does, and probably the issue's first measurement. `decoded_read_vs_raw` is the least a client
must do to know what the model said (the same read through httpx2's EventSource and `json.loads`
per event, nothing else) against the raw read: the floor under any turn's ratio. Raw and agent cells alternate (drift hits both); medians of
10 after a warm-up. With one tool call the turn makes two model requests (a `list_variables`
call, then the answer) and the baseline reads the same two responses.

A turn of this workload ends before its live view would be built (the view waits
`LIVE_AFTER_S`, 0.1 s, after the request: a view shown for less is never seen; `list_variables`
cannot hold the loop, so it does not build it either), so its cell sends the view's place (the
kernel's shared empty box) and the transcript only. The frontend figures the
bounds check (comm_open, updates, bytes) are counted on turns that show their live view.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentik_jupyter.testing import FakeLLMServer, Reply

from .kernel_client import BenchKernel, Cell, holds_answer_in_transcript, kernel_environ

REPEATS = 10
LIVE_REPEATS = 5
THINK_S = 0.3
"""The frontend's figures are counted on turns whose model thinks THINK_S before it answers, so
their live view is built (LIVE_AFTER_S) and the whole answer streams into it; the timed turns
end sooner than that and send only their transcript (their own figures: `timed_turns_frontend`)."""
CHUNK = 4
ANSWER_CHARS = 4_000
SETUP = """\
%load_ext agentik_jupyter
import os, json, time, httpx2, asyncio
import pandas as pd
sales = pd.DataFrame({"region": ["north", "south"] * 50, "units": range(100)})
__raw_client = httpx2.AsyncClient()  # one pooled client, as the agent's adapter keeps one
async def __raw_read(n, fresh=False, decode=False):
    client = httpx2.AsyncClient() if fresh else __raw_client
    for _ in range(n):
        async with client.stream(
            "POST", os.environ["LLM_BASE_URL"] + "/chat/completions",
            json={"model": os.environ["LLM_MODEL"], "stream": True,
                  "messages": [{"role": "user", "content": "Summarise sales."}]},
            headers={"Authorization": "Bearer " + os.environ["LLM_API_KEY"]},
        ) as response:
            if decode:  # the least any client does to know what the model said
                async for event in httpx2.EventSource(response):
                    if event.data != "[DONE]":
                        json.loads(event.data)
            else:
                async for _ in response.aiter_bytes():
                    pass
    if fresh:
        await client.aclose()
"""
AGENT_CELL = "%%agent --wait\nSummarise the sales data."


def make_answer(chars: int = ANSWER_CHARS) -> str:
    """Markdown prose as a model writes it: paragraphs, a short list, some inline code."""
    words = (
        "the sales frame has many rows and the `units` column grows with each region while "
        "north and south stay balanced across the whole sample of one hundred rows"
    ).split()
    blocks: list[str] = []
    i = 0
    while sum(len(b) + 2 for b in blocks) < chars:
        if len(blocks) % 5 == 3:
            blocks.append(
                "\n".join(f"- point {j}: {' '.join(words[(i + j) % 20 : (i + j) % 20 + 5])}" for j in range(4))
            )
        else:
            blocks.append(" ".join(words[(i + k) % len(words)] for k in range(60)).capitalize() + ".")
        i += 7
    return "\n\n".join(blocks)[:chars]


ANSWER = make_answer()


def _reply(first_byte_after: float | None = None) -> Reply:
    return Reply.text(ANSWER, chunks=len(ANSWER) // CHUNK, first_byte_after=first_byte_after)


def _tool_reply() -> Reply:
    return Reply.tool_calls([{"name": "list_variables", "args": {}}])


def _checked(turn: Cell) -> Cell:
    """`turn`, once its saved transcript is known to hold the exact answer."""
    if not holds_answer_in_transcript(turn, ANSWER):
        raise RuntimeError(f"the turn's transcript does not hold the exact answer: {turn.text[:300]}")
    return turn


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _frontend(cells: list[Cell], chunks: int) -> dict[str, Any]:
    """Medians of what the frontend received per turn."""
    per_1000 = 1000 / chunks
    return {
        "messages": _median([len(c.messages) for c in cells]),
        "comm_open": _median([c.count("comm_open") for c in cells]),
        "comm_close": _median([c.count("comm_close") for c in cells]),
        "widget_updates": _median([c.widget_updates for c in cells]),
        "widget_updates_per_1000_tokens": round(_median([c.widget_updates for c in cells]) * per_1000, 1),
        "bytes": _median([c.bytes for c in cells]),
        "bytes_per_answer_byte": round(_median([c.bytes for c in cells]) / len(ANSWER.encode()), 2),
    }


def _measure(kernel: BenchKernel, server: FakeLLMServer, *, tool: bool) -> dict[str, Any]:
    requests = 2 if tool else 1
    raw_times: list[float] = []
    fresh_times: list[float] = []
    decoded_times: list[float] = []
    turns: list[Cell] = []
    for i in range(REPEATS + 1):
        server.push(*([_tool_reply()] if tool else []), _reply())
        raw = kernel.run(f"await __raw_read({requests})")
        server.push(*([_tool_reply()] if tool else []), _reply())
        fresh = kernel.run(f"await __raw_read({requests}, fresh=True)")
        server.push(*([_tool_reply()] if tool else []), _reply())
        decoded = kernel.run(f"await __raw_read({requests}, decode=True)")
        server.push(*([_tool_reply()] if tool else []), _reply())
        turn = _checked(kernel.run(AGENT_CELL))
        if i:  # the first round warms up imports, the sessions file and the connection pool
            raw_times.append(raw.seconds)
            fresh_times.append(fresh.seconds)
            decoded_times.append(decoded.seconds)
            turns.append(turn)
    live: list[Cell] = []
    for _ in range(LIVE_REPEATS):  # the model thinks first: the live view is up before the answer streams
        server.push(*([_tool_reply()] if tool else []), _reply(first_byte_after=THINK_S))
        live.append(_checked(kernel.run(AGENT_CELL)))
    raw_s, turn_s, fresh_s = _median(raw_times), _median([t.seconds for t in turns]), _median(fresh_times)
    decoded_s = _median(decoded_times)
    timed = _frontend(turns, len(ANSWER) // CHUNK)
    return {
        "turn_s": round(turn_s, 4),
        "raw_httpx2_s": round(raw_s, 4),
        "ratio": round(turn_s / raw_s, 2),
        "raw_httpx2_new_client_s": round(fresh_s, 4),
        "ratio_vs_new_client": round(turn_s / fresh_s, 2),
        "decoded_read_s": round(decoded_s, 4),
        "decoded_read_vs_raw": round(decoded_s / raw_s, 2),
        "ratio_vs_decoded_read": round(turn_s / decoded_s, 2),
        "model_requests": requests,
        **_frontend(live, len(ANSWER) // CHUNK),
        "timed_turns_frontend": {k: timed[k] for k in ("messages", "comm_open", "bytes", "bytes_per_answer_byte")},
    }


def kernel_turns() -> dict[str, dict[str, Any]]:
    """Both workloads in one kernel; every turn's transcript must hold the exact answer."""
    with FakeLLMServer() as server:
        kernel = BenchKernel(kernel_environ(server.env(), AGENTIK_APPROVE="auto"))
        try:
            kernel.run(SETUP)
            plain = _measure(kernel, server, tool=False)
            with_tool = _measure(kernel, server, tool=True)
        finally:
            kernel.close()
    return {"plain": plain, "tool_call": with_tool}


@contextlib.contextmanager
def server_process(replies: list[dict[str, Any]]) -> Iterator[dict[str, str]]:
    """The fake server in a process of its own, answering `replies` in order: streaming at full
    speed it takes a whole core and, in this process, the GIL the client needs to read replies."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "replies.json"
        script.write_text(json.dumps(replies))
        proc = subprocess.Popen(
            [
                sys.executable,
                "-W",
                "ignore::RuntimeWarning",
                "-m",
                "agentik_jupyter.testing.fake_server",
                "--script",
                str(script),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            base = proc.stdout.readline().strip().partition("=")[2]
            yield {
                "LLM_PROVIDER": "openai-compatible",
                "LLM_MODEL": "fake-model",
                "LLM_API_KEY": "bench-key",
                "LLM_BASE_URL": base,
            }
        finally:
            proc.terminate()
            proc.wait(10)


def user_cell_latency() -> dict[str, Any]:
    """`1+1` round trips while a background turn streams at full speed, vs the same kernel idle.

    The fake server runs in its own process here (see `server_process`)."""
    long_answer = (ANSWER + "\n\n") * 100  # ~400 KB in 4-char chunks: seconds of streaming
    replies = [{"text": "warm"}, {"text": long_answer, "chunks": len(long_answer) // CHUNK}]
    with server_process(replies) as llm_env:
        kernel = BenchKernel(kernel_environ(llm_env))
        try:
            kernel.run(SETUP)
            kernel.run(AGENT_CELL)
            idle = [kernel.run("1+1").seconds for _ in range(30)]
            kernel.run("%%agent\nSummarise it at length.")
            busy: list[float] = []
            streaming = True
            while streaming and len(busy) < 300:
                busy.append(kernel.run("1+1").seconds)
                streaming = bool(
                    kernel.value(
                        "__import__('agentik_jupyter.kernel.agent', fromlist=['get_agent'])"
                        ".get_agent(get_ipython()).session.busy"
                    )
                )
            kernel.drain(0.5)
        finally:
            kernel.close()
    idle_s, busy_s = _median(idle), _median(busy)
    return {
        "idle_s": round(idle_s, 4),
        "streaming_s": round(busy_s, 4),
        "streaming_p90_s": round(sorted(busy)[int(len(busy) * 0.9)], 4),
        "added_s": round(busy_s - idle_s, 4),
        "samples_while_streaming": len(busy),
    }


def stop_latency() -> dict[str, Any]:
    """Click Stop (the Button's comm message, as JupyterLab sends it) during a streaming background
    turn; time until the cell's transcript replaces the live view (the turn has ended)."""
    slow = ("word " * 4000).strip()
    times: list[float] = []
    with FakeLLMServer(chunk_delay=0.002) as server:
        kernel = BenchKernel(kernel_environ(server.env()))
        try:
            kernel.run(SETUP)
            for _ in range(5):
                server.push(Reply.text(slow, chunks=len(slow) // CHUNK))
                cell = kernel.run("%%agent\nCount slowly.")
                buttons = [
                    m["content"]["comm_id"]
                    for m in cell.messages
                    if m["msg_type"] == "comm_open"
                    and m["content"]["data"]["state"].get("_model_name") == "ButtonModel"
                    and m["content"]["data"]["state"].get("description") == "Stop"
                ]
                kernel.drain(0.3)  # the answer is streaming
                started = time.perf_counter()
                kernel.send_comm(buttons[-1], {"method": "custom", "content": {"event": "click"}})
                while True:
                    msg = kernel.kc.get_iopub_msg(timeout=10)
                    if msg["msg_type"] == "update_display_data":
                        times.append(time.perf_counter() - started)
                        break
                kernel.drain(0.2)
                server.clear()
        finally:
            kernel.close()
    return {"stop_s": round(_median(times), 4), "max_s": round(max(times), 4), "samples": len(times)}


def resume_10k() -> dict[str, Any]:
    """`%agent resume ID` of a session of 10,000 messages (5,000 turns), timed in a real kernel
    from the request to the cell's end (the line magic awaits the command)."""
    from agentik_jupyter.persistence import SessionDB
    from agentik_jupyter.types import AssistantMessage, ChatMessage, UserMessage

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.agentik.db"
        started = time.perf_counter()
        with SessionDB(path) as db:
            conversation = db.create_conversation("ten thousand messages")
            for i in range(5_000):
                user = UserMessage(content=f"Question {i}: what about column c{i % 50}?")
                answer = AssistantMessage(content=f"Answer {i}: " + "the column looks fine. " * 8)
                turn = db.begin_turn(conversation.id, user)
                db.append(conversation.id, turn, answer)
                db.commit_turn(
                    conversation.id,
                    turn,
                    [
                        ChatMessage(id=user.id, role="user", content=user.content),
                        ChatMessage(id=answer.id, role="assistant", content=answer.content),
                    ],
                )
        built_s = time.perf_counter() - started
        with FakeLLMServer() as server:
            kernel = BenchKernel(kernel_environ(server.env(), AGENTIK_DB_PATH=str(path)))
            try:
                kernel.run(SETUP)
                kernel.run("%agent sessions")  # opens the file and loads the agent (not timed)
                times, text = [], ""
                for _ in range(5):
                    cell = kernel.run(f"%agent resume {conversation.id}")
                    times.append(cell.seconds)
                    text = cell.text
            finally:
                kernel.close()
    if "10000 messages" not in text.replace(",", ""):
        raise RuntimeError(f"resume did not report the session: {text!r}")
    return {"resume_s": round(_median(times), 4), "messages": 10_000, "build_s": round(built_s, 1)}
