"""Turns at a model's pace, in a real kernel, side by side with the raw read of the same stream.

Workload (issue #22): the model thinks THINK_S, then streams the same 4,000-character answer as
`kernel_turns` in 4-character chunks at PACE_HZ chunks a second (the fake server's `pace`: ~4 s
a stream). A `%%agent --wait` cell and a cell that reads the same response's bytes with httpx2
(`__raw_read`, as in `kernel_turns`) alternate in one kernel; medians of REPEATS after a warm-up
pair. At this pace both cells last as long as the stream, so what a turn costs shows in:

- `first_words_s`: from the moment the server wrote the answer's first frame to the moment the
  client received the first frontend message (display, display update, widget open or update,
  stream) that carries answer text: how long the first words wait to be on screen.
  `first_words_at_once_s` is the same for a model that does not think first (its first byte
  comes before the live view's `LIVE_AFTER_S`), counted on REPEATS more plain turns.
  `first_chars_s` and `first_chars_at_once_s`: the same until the client has the answer's first
  FIRST_CHARS characters (in one message, or in the stream outputs or the live text's appends so
  far): one word on screen is not a sentence read, and a frontend that showed the first word at
  once and the next a quarter second later passes a first-word measure. Bounded without our
  extension, where the answer streams as the cell's text output.
- `bytes_per_answer_byte`: every frontend message of the cell (content JSON plus buffers, the
  kernel's `status` and `execute_input` echoes left out) per byte of the answer.
- `cpu_ratio`: the kernel process's CPU time (all threads, read from outside) from the execute
  request to the cell's idle, against the raw read cell's.

`plain` and `tool_call` are turns in JupyterLab with our extension: the bench's client answers
the kernel's frontend handshake as the extension does (bench/kernel_client.py), so the answer
streams into the append-only LiveText widget. `plain_without_extension` is the same plain turn
in a second kernel whose client does not answer (VS Code, nbclassic, nbclient): the answer streams
as the cell's own text output (widgets/plain_stream.py), which the transcript replaces at the end.

`tool_call` is a turn whose model first calls a user `@tool` (a plain synchronous function,
`policy="auto"`: it may hold the kernel's loop, so the live view is built before it runs), then
answers; both responses are paced and thought about, and the raw cell reads the same two.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
import time
from typing import Any

from agentik_jupyter.testing import FakeLLMServer, Reply

from .kernel_client import PLUMBING, BenchKernel, Cell, holds_answer_in_transcript, kernel_environ, message_bytes
from .kernel_turns import AGENT_CELL, ANSWER, CHUNK, SETUP

PACE_HZ = 250.0
THINK_S = 0.3
REPEATS = 5
TOOL_SETUP = '''\
from agentik_jupyter import tool
@tool(policy="auto")
def count_rows(region: str) -> str:
    """How many rows of the sales frame belong to `region`."""
    return str(int((sales["region"] == region).sum()))
'''
SHOWN = {"display_data", "update_display_data", "comm_open", "comm_msg", "stream", "execute_result"}
FIRST_WORD = re.compile(r"(?<![A-Za-z])" + re.escape(ANSWER.split()[0]) + r"(?![A-Za-z])")
"""The answer's first word as it starts the answer (capitalised: the question and the view's
other texts do not hold it)."""
FIRST_CHARS = 24
FIRST_WORDS = ANSWER[:FIRST_CHARS]
"""The answer's first characters ("The sales frame has many": plain words, the same in its HTML)."""


class ShownText:
    """What the client shows of the answer so far, from the messages that add to it: the stream
    outputs' text, and the live text's appends (`k`: where the new HTML `a` starts, as
    labextension/src/livetext_widget.ts applies it)."""

    def __init__(self) -> None:
        self.streamed = ""
        self.live: dict[str, str] = {}

    def holds(self, msg: dict[str, Any], text: str) -> bool:
        """Whether, with `msg`, the client has `text` (in that message, or in what it added to)."""
        content = msg["content"]
        if msg["msg_type"] == "stream":
            self.streamed += str(content.get("text", ""))
            return text in self.streamed
        data = content.get("data") if msg["msg_type"] in ("comm_open", "comm_msg") else None
        comm = str(content.get("comm_id"))
        if isinstance(data, dict) and data.get("method") == "custom" and isinstance(data.get("content"), dict):
            append = data["content"]
            whole = self.live.get(comm, "")[: int(append.get("k", 0))] + str(append.get("a", ""))
            self.live[comm] = whole
            return text in whole
        state = data.get("state") if isinstance(data, dict) else None
        if isinstance(state, dict) and ("value" in state or "tail" in state):  # a widget's text, set whole
            self.live[comm] = str(state.get("value") or "") + str(state.get("tail") or "")
        return text in str(content)


def _checked(cell: Cell) -> None:
    """The cell's saved transcript holds the exact answer (in its JSON or its HTML)."""
    if not holds_answer_in_transcript(cell, ANSWER):
        raise RuntimeError(f"the turn's transcript does not hold the exact answer: {cell.text[:300]}")


def _replies(tool: bool, think: bool = True) -> list[Reply]:
    answer = Reply.text(ANSWER, chunks=len(ANSWER) // CHUNK, first_byte_after=THINK_S if think else None)
    if not tool:
        return [answer]
    call = Reply.tool_calls([{"name": "count_rows", "args": {"region": "north"}}])
    return [dataclasses.replace(call, fault_kind="slow_first_byte", delay=THINK_S), answer]


@dataclasses.dataclass
class PacedCell:
    seconds: float
    cpu_s: float
    bytes: int
    first_words_s: float | None
    first_chars_s: float | None
    messages: int
    updates: int


def _run(kernel: BenchKernel, server: FakeLLMServer, code: str, *, agent: bool) -> PacedCell:
    """One cell: its CPU in the kernel, and when its first answer text reached the client."""
    streams_before = len(server.first_frame_at)
    cpu_before = kernel.cpu_s()
    started = time.perf_counter()
    msg_id = kernel.send(code)
    first_text: list[float] = []
    first_chars: list[float] = []
    shown = ShownText()

    def seen(msg: dict[str, Any]) -> None:
        if msg["msg_type"] not in SHOWN:
            return
        if not first_text and FIRST_WORD.search(str(msg["content"])):
            first_text.append(time.perf_counter())
        if shown.holds(msg, FIRST_WORDS) and not first_chars:
            first_chars.append(time.perf_counter())

    cell = kernel.wait_idle(msg_id, started, on_message=seen)
    cpu_s = kernel.cpu_s() - cpu_before
    if not cell.ok:
        raise RuntimeError(f"cell failed: {code[:80]!r}\n{cell.text}")
    if agent:
        _checked(cell)
    streams = server.first_frame_at[streams_before:]
    first_words = first_text[0] - streams[-1] if first_text and streams else None
    chars = first_chars[0] - streams[-1] if first_chars and streams else None
    return PacedCell(
        cell.seconds,
        cpu_s,
        sum(message_bytes(m) for m in cell.messages if m["msg_type"] not in PLUMBING),
        first_words,
        chars,
        len(cell.messages),
        cell.widget_updates,
    )


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _first_words(cells: list[PacedCell], name: str, field: str = "first_words_s") -> dict[str, float | None]:
    """The median and the worst (None when a turn showed no answer text, or none ran)."""
    firsts = [getattr(c, field) for c in cells if getattr(c, field) is not None]
    if not cells:
        return {}
    return {
        f"{name}_s": round(_median(firsts), 4) if len(firsts) == len(cells) else None,
        f"{name}_max_s": round(max(firsts), 4) if firsts else None,
    }


def _measure(kernel: BenchKernel, server: FakeLLMServer, *, tool: bool) -> dict[str, Any]:
    requests = 2 if tool else 1
    raws: list[PacedCell] = []
    turns: list[PacedCell] = []
    for i in range(REPEATS + 1):
        server.push(*_replies(tool))
        raw = _run(kernel, server, f"await __raw_read({requests})", agent=False)
        server.push(*_replies(tool))
        turn = _run(kernel, server, AGENT_CELL, agent=True)
        if i:  # the first pair warms up imports, the sessions file and the connection pool
            raws.append(raw)
            turns.append(turn)
    at_once: list[PacedCell] = []
    for _ in range(0 if tool else REPEATS):  # the model answers at once, at its pace
        server.push(*_replies(tool, think=False))
        at_once.append(_run(kernel, server, AGENT_CELL, agent=True))
    raw_cpu, turn_cpu = _median([c.cpu_s for c in raws]), _median([c.cpu_s for c in turns])
    answer_bytes = len(ANSWER.encode())
    return {
        **_first_words(turns, "first_words"),
        **_first_words(at_once, "first_words_at_once"),
        **_first_words(turns, "first_chars", "first_chars_s"),
        **_first_words(at_once, "first_chars_at_once", "first_chars_s"),
        "bytes_per_answer_byte": round(_median([c.bytes for c in turns]) / answer_bytes, 2),
        "cpu_ratio": round(turn_cpu / raw_cpu, 2),
        "turn_cpu_s": round(turn_cpu, 4),
        "raw_cpu_s": round(raw_cpu, 4),
        "turn_s": round(_median([c.seconds for c in turns]), 3),
        "raw_s": round(_median([c.seconds for c in raws]), 3),
        "messages": _median([c.messages for c in turns]),
        "widget_updates": _median([c.updates for c in turns]),
        "model_requests": requests,
        "pace_hz": PACE_HZ,
        "think_s": THINK_S,
    }


EXTENSION = {"live_text": 1}
"""What our lab extension answers to the kernel's frontend handshake."""


def paced_turns() -> dict[str, dict[str, Any]]:
    """Both paced workloads in one kernel whose client answers as our extension, then the plain
    one in a kernel whose client does not; every turn's transcript must hold the exact answer."""
    with FakeLLMServer(pace=PACE_HZ) as server:
        kernel = BenchKernel(kernel_environ(server.env(), AGENTIK_APPROVE="auto"), frontend=EXTENSION)
        try:
            kernel.run(SETUP)
            kernel.run(TOOL_SETUP)
            if not kernel.value("__import__('agentik_jupyter.notebook.page', fromlist=['live_text']).live_text()"):
                raise RuntimeError("the kernel did not take the frontend's answer")
            plain = _measure(kernel, server, tool=False)
            with_tool = _measure(kernel, server, tool=True)
        finally:
            kernel.close()
        kernel = BenchKernel(kernel_environ(server.env(), AGENTIK_APPROVE="auto"))
        try:
            kernel.run(SETUP)
            fallback = _measure(kernel, server, tool=False)
        finally:
            kernel.close()
    return {"plain": plain, "tool_call": with_tool, "plain_without_extension": fallback}
