"""Where a turn's time goes: cProfile inside a real kernel around `%%agent --wait` turns.

`python -m bench.profile_turn --stages` times the same stream read through ever more of the turn
(raw bytes, SSE and JSON, the adapter, the orchestrator, the turn view, the kernel's session with
its DB, the whole cell turn); `--phases` times the parts of a turn besides the stream one by one;
`--cpu [--tool]` gives a turn's main-thread CPU (`time.thread_time`, which a neighbour's load
does not count) against the raw read's, and the thread-clock profile's milliseconds a turn of
the parts named in `CPU_PARTS`;
`python -m bench.profile_turn [turns] [--tool] [--sort tottime|cumulative]` prints the kernel's
profile of that many turns of the benchmark's workload (bench/kernel_turns.py) after a warm-up
turn. Everything the kernel's main thread does is in it: the adapter reading the stream, the
orchestrator, the stores and widgets, the DB calls handed to threads, the iopub sends.
"""

from __future__ import annotations

import sys

from agentik_jupyter.testing import FakeLLMServer

from .kernel_client import BenchKernel, Cell, kernel_environ
from .kernel_turns import AGENT_CELL, SETUP, _reply, _tool_reply

PROFILE_CELL = """\
import cProfile, io, pstats
from agentik_jupyter.kernel.turns import run_cell_turn
__profile = cProfile.Profile()
__profile.enable()
for _ in range({turns}):
    await run_cell_turn(get_ipython(), "--wait", "Summarise the sales data.")
__profile.disable()
__out = io.StringIO()
pstats.Stats(__profile, stream=__out).sort_stats({sort!r}).print_stats({lines})
print(__out.getvalue())
"""


TIMED = """\
import time
async def __timed(fn, n, digits):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t)
    return round(sorted(times)[n // 2] * 1000, digits)
"""
"""The median milliseconds of `n` awaits of `fn`, for the cells below."""

PHASES_CELL = (
    TIMED
    + """\
import time, json
from agentik_jupyter.kernel.agent import get_agent
from agentik_jupyter.core.chat_route import build_system_prompt
from agentik_jupyter.types import AppendText, StartResponse
from agentik_jupyter.widgets import TurnView, transcript_bundle
from agentik_jupyter.widgets.markdown import render_markdown
from agentik_jupyter.widgets.body import TurnBody
from agentik_jupyter.types import ChatMessage
__agent = get_agent(get_ipython())
__session = __agent.session
__answer = {answer!r}
def __ms(fn, n=20):
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return round((time.perf_counter() - t) / n * 1000, 3)
def __view():
    v = TurnView(__session, "q", wait=True, display=lambda b: None)
    v.finish()
def __deltas():
    b = TurnBody()
    b.handle(StartResponse())
    for i in range(0, len(__answer), 4):
        b.handle(AppendText(text=__answer[i:i + 4]))
    b.finish(exact=False)
__msgs = [ChatMessage(role="assistant", content=__answer)]
__raw_ms = await __timed(lambda: __raw_read(1), 5, 2)
__sse_ms = await __timed(lambda: __raw_read(1, decode=True), 5, 2)
print(json.dumps({{
    "raw_stream_read_ms": __raw_ms,
    "stream_read_with_sse_and_json_ms": __sse_ms,
    "context_and_system_prompt_ms": __ms(lambda: build_system_prompt(__agent.context())),
    "turn_view_open_and_close_ms": __ms(__view),
    "render_markdown_4000_chars_ms": __ms(lambda: render_markdown(__answer)),
    "transcript_bundle_ms": __ms(lambda: transcript_bundle(__msgs, question="q", status="complete")),
    "widgets_for_1000_deltas_ms": __ms(__deltas, 5),
    "append_text_events_1000_ms": __ms(lambda: [AppendText(text="abcd") for _ in range(1000)], 5),
}}))
"""
)


STAGES_CELL = (
    TIMED
    + """\
import time, json
from agentik_jupyter.core import chat_route as chat
from agentik_jupyter.kernel.agent import get_agent
from agentik_jupyter.kernel.turns import run_cell_turn
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.core.session import Session
from agentik_jupyter.core.transport import default_transport
from agentik_jupyter.types import ChatMessage
from agentik_jupyter.widgets import TurnView
async def __adapter():
    async for _ in chat.stream_chat([ChatMessage(role="user", content="q")], None, []):
        pass
__temp = Session(default_transport(), ToolRegistry(), temporary=True)
async def __viewed():
    TurnView(__temp, "q", wait=True, display=lambda b: None).attach()
    await __temp.send("q")
__agent = get_agent(get_ipython())
__out = {{}}
for __name, __fn in [
    ("raw_read", lambda: __raw_read(1)),
    ("plus_sse_and_json", lambda: __raw_read(1, decode=True)),
    ("adapter_deltas", __adapter),
    ("orchestrator_temporary_session", lambda: __temp.send("q")),
    ("plus_turn_view", __viewed),
    ("kernel_session_with_db", lambda: __agent.session.send("q")),
    ("whole_cell_turn", lambda: run_cell_turn(get_ipython(), "--wait", "q")),
]:
    __out[__name] = await __timed(__fn, 7, 1)
print(json.dumps(__out))
"""
)


CPU_CELL = """\
import time, cProfile, pstats, json
from agentik_jupyter.kernel.turns import run_cell_turn
async def __thread_ms(fn, n):
    times = []
    for _ in range(n):
        t = time.thread_time()
        await fn()
        times.append((time.thread_time() - t) * 1000)
    return round(sorted(times)[n // 2], 2)
__turn = lambda: run_cell_turn(get_ipython(), "--wait", "Summarise the sales data.")
__out = {{"turn_cpu_ms": await __thread_ms(__turn, {turns})}}
"""
CPU_RAW_CELL = """\
__out["raw_read_cpu_ms"] = await __thread_ms(lambda: __raw_read(1), {turns})
__profile = cProfile.Profile(time.thread_time)
__profile.enable()
for _ in range({turns}):
    await __turn()
__profile.disable()
__parts = {parts!r}
for (file, line, name), (_, _, _, cumulative, _) in pstats.Stats(__profile).stats.items():
    part = file.rsplit("/", 1)[-1] + ":" + name
    if part in __parts:
        __out["profiled_ms " + part] = round(cumulative / {turns} * 1000, 2)
print(json.dumps(__out, indent=1))
"""
CPU_PARTS = [
    "kernel/turns.py:run_cell_turn",
    "_read_ahead.py:pump",
    "_models.py:aiter_bytes",
    "_models.py:aiter_raw",
    "_read_ahead.py:assemble",
    "_http.py:open_response",
    "_client.py:build_request",
    "openai_compatible.py:build_body",
    "_wire_json.py:body",
    "transcript.py:transcript_bundle",
    "turn_view.py:finish",
    "turn_rewind.py:refresh",
    "turn_rewind.py:_refresh",
]
"""The rows of `--cpu`'s profile (file name and function; the profiler inflates Python-heavy work ~5x)."""


def cpu(turns: int = 15, *, tool: bool = False, warm: int = 18) -> str:
    """A turn's main-thread CPU and the raw read's (ms, medians), after `warm` turns of the same kind."""
    replies = lambda n: [r for _ in range(n) for r in ([_tool_reply()] if tool else []) + [_reply()]]  # noqa: E731
    with FakeLLMServer() as server:
        kernel = BenchKernel(kernel_environ(server.env(), AGENTIK_APPROVE="auto"))
        try:
            kernel.run(SETUP)
            for _ in range(warm):
                server.push(*replies(1))
                kernel.run(AGENT_CELL)
            server.push(*replies(turns))
            kernel.run(CPU_CELL.format(turns=turns))
            server.push(*[_reply() for _ in range(turns)], *replies(turns))  # the raw reads', then the profile's
            cell = kernel.run(CPU_RAW_CELL.format(turns=turns, parts=[p.rsplit("/", 1)[-1] for p in CPU_PARTS]))
            text = "".join(m["content"]["text"] for m in cell.messages if m["msg_type"] == "stream")
            return text[text.rfind('{\n "turn_cpu_ms"') :]  # (after the turns' answers, printed as text)
        finally:
            kernel.close()


def stages() -> str:
    """Milliseconds (medians of 7) of the same stream read through ever more of the turn, in one kernel."""
    cell = _run_after_a_turn(STAGES_CELL.format(), replies=7 * 7)
    return "".join(m["content"]["text"] for m in cell.messages if m["msg_type"] == "stream")


def phases() -> str:
    """Milliseconds of the parts of a turn the kernel does besides reading the stream."""
    from .kernel_turns import ANSWER

    return _run_after_a_turn(PHASES_CELL.format(answer=ANSWER), replies=10).text


def _run_after_a_turn(source: str, replies: int) -> Cell:
    """Run `source` in a fresh kernel after one warm-up turn, with `replies` answers queued for it."""
    with FakeLLMServer() as server:
        kernel = BenchKernel(kernel_environ(server.env(), AGENTIK_APPROVE="auto"))
        try:
            kernel.run(SETUP)
            server.push(_reply())
            kernel.run(AGENT_CELL)
            server.push(*[_reply() for _ in range(replies)])
            return kernel.run(source)
        finally:
            kernel.close()


def profile(turns: int = 10, *, tool: bool = False, sort: str = "tottime", lines: int = 45) -> str:
    with FakeLLMServer() as server:
        kernel = BenchKernel(kernel_environ(server.env(), AGENTIK_APPROVE="auto"))
        try:
            kernel.run(SETUP)
            server.push(*([_tool_reply()] if tool else []), _reply())
            kernel.run(AGENT_CELL)
            for _ in range(turns):
                server.push(*([_tool_reply()] if tool else []), _reply())
            cell = kernel.run(PROFILE_CELL.format(turns=turns, sort=sort, lines=lines))
            return "\n".join(m["content"]["text"] for m in cell.messages if m["msg_type"] == "stream")
        finally:
            kernel.close()


def main(argv: list[str]) -> int:
    if "--phases" in argv:
        print(phases())
        return 0
    if "--cpu" in argv:
        print(cpu(tool="--tool" in argv))
        return 0
    if "--stages" in argv:
        print(stages())
        return 0
    turns = int(argv[0]) if argv and argv[0].isdigit() else 10
    sort = argv[argv.index("--sort") + 1] if "--sort" in argv else "tottime"
    print(profile(turns, tool="--tool" in argv, sort=sort))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
