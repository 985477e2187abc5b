"""Jupyter's Interrupt (■, SIGINT to the kernel) stops the agent's turn, like Stop.

Wherever the signal lands -- while the turn waits for the model, inside a tool that
holds the main thread, inside `run_code`'s user code, or in a `%%agent --wait` cell --
the turn ends as interrupted (audit row, "Stopped") and no further model call is made.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import AGENT_EXPR, RawKernel, audit, kernel_env, roles, transcript, wait_for

pytestmark = pytest.mark.timeout(120)

LONG_ANSWER = " ".join(f"word{i}" for i in range(400))
BUSY_TOOL = '''
import time
from agentik_jupyter import tool

@tool(policy="auto")
async def crunch(n: int) -> str:
    """Crunch numbers (holds the kernel's main thread for a while)."""
    start = time.monotonic()
    while time.monotonic() - start < 20:
        pass
    return "crunched"
'''
S = f"{AGENT_EXPR}.session"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(chunk_delay=0.05) as fake:
        yield fake


def start(server: FakeLLMServer, tmp_path: Path, **env: str) -> tuple[RawKernel, Path]:
    db_path = tmp_path / "int.agentik.db"
    kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path), **env), tmp_path)
    kernel.text("%load_ext agentik_jupyter")
    return kernel, db_path


def assert_interrupted(kernel: RawKernel, server: FakeLLMServer, db_path: Path, requests: int) -> None:
    kernel.wait_until(f"not {S}.busy", timeout=5, interval=0.05)
    time.sleep(0.5)
    assert len(server.requests) == requests, "no model call may follow an interrupt"
    entries = audit(db_path)
    assert roles(entries)[-1] == "ErrorRecord" and entries[-1].record.code == "interrupted", (
        roles(entries),
        kernel.text(f"print(repr({S}.last_outcome)[-1500:])"),
    )
    assert kernel.value(f"{S}.agent_store.status") == "idle"


def test_interrupt_while_the_model_streams_stops_a_background_turn(server: FakeLLMServer, tmp_path: Path) -> None:
    kernel, db_path = start(server, tmp_path)
    try:
        server.push(Reply.text(LONG_ANSWER))
        assert kernel.execute("%%agent\nWrite a long essay.").ok
        kernel.wait_until(f"{S}.agent_store.status == 'responding'", timeout=10)
        interrupted = time.monotonic()
        kernel.km.interrupt_kernel()
        kernel.wait_until(f"not {S}.busy", timeout=5, interval=0.05)
        assert time.monotonic() - interrupted < 2.0
        assert_interrupted(kernel, server, db_path, requests=1)
        kernel.drain(0.3)
        assert any("Stopped" in str(m["content"]) for m in kernel.iopub if m["msg_type"] == "update_display_data")
        server.push("Still here.")
        assert "Still here." in transcript(kernel.execute("%%agent --wait\nAnd now?").outputs)["text/plain"]
    finally:
        kernel.close()


def test_interrupt_inside_a_tool_that_holds_the_main_thread(server: FakeLLMServer, tmp_path: Path) -> None:
    kernel, db_path = start(server, tmp_path)
    try:
        kernel.text(BUSY_TOOL)
        server.push(Reply.tool_calls([{"name": "crunch", "args": {"n": 1}}]), Reply.text("never asked"))
        assert kernel.execute("%%agent\nCrunch the numbers.").ok
        wait_for(lambda: len(server.requests) >= 1, 10, "the model call")
        time.sleep(1.5)  # the tool now holds the main thread
        interrupted = time.monotonic()
        kernel.km.interrupt_kernel()
        assert_interrupted(kernel, server, db_path, requests=1)
        assert time.monotonic() - interrupted < 5.0
        results = [e.record for e in audit(db_path) if type(e.record).__name__ == "ToolResultRecord"]
        assert results and "Interrupted" in (results[-1].result.error or "")
    finally:
        kernel.close()


def test_interrupt_inside_run_code_user_code(server: FakeLLMServer, tmp_path: Path) -> None:
    kernel, db_path = start(server, tmp_path, AGENTIK_APPROVE="auto")
    try:
        server.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": "import time\ntime.sleep(20)"}}]),
            Reply.text("never asked"),
        )
        assert kernel.execute("%%agent\nSleep a while.").ok
        wait_for(lambda: len(server.requests) >= 1, 10, "the model call")
        time.sleep(1.5)  # the user code now sleeps on the main thread
        kernel.km.interrupt_kernel()
        assert_interrupted(kernel, server, db_path, requests=1)
    finally:
        kernel.close()


def test_interrupt_of_a_wait_cell_stops_its_turn(server: FakeLLMServer, tmp_path: Path) -> None:
    kernel, db_path = start(server, tmp_path)
    try:
        server.push(Reply.text(LONG_ANSWER))
        msg_id = kernel.submit("%%agent --wait\nWrite a long essay.")
        wait_for(lambda: len(server.requests) >= 1, 10, "the model call")
        time.sleep(1.0)
        kernel.km.interrupt_kernel()
        cell = kernel.collect(msg_id, timeout=10)
        assert "[■ Stopped]" in transcript(cell.outputs)["text/plain"]
        assert_interrupted(kernel, server, db_path, requests=1)
    finally:
        kernel.close()


def test_a_wait_cell_shows_its_view_while_the_model_thinks_and_interrupt_stops_it(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    """The `--wait` view is built once the request has left (not before the turn begins): with a
    model slow to answer it is on screen, Stop button and all, while the model thinks; an
    Interrupt then leaves one transcript that says Stopped, and no second model call."""
    kernel, db_path = start(server, tmp_path)
    try:
        server.push(Reply.fault("slow_first_byte", delay=5))
        msg_id = kernel.submit("%%agent --wait\nThink hard.")
        wait_for(lambda: len(server.requests) >= 1, 10, "the model call")
        time.sleep(0.5)
        kernel.drain(0.2)
        mine = [m for m in kernel.iopub if m["parent_header"].get("msg_id") == msg_id]
        views = [
            m
            for m in mine
            if m["msg_type"] == "display_data" and "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
        ]
        stops = [
            m
            for m in kernel.comm_opens("ButtonModel")
            if m["content"]["data"].get("state", {}).get("description") == "Stop"
            and m["parent_header"].get("msg_id") == msg_id
        ]
        assert len(views) == 1 and len(stops) == 1, [m["msg_type"] for m in mine]
        kernel.km.interrupt_kernel()
        cell = kernel.collect(msg_id, timeout=10)
        assert "[■ Stopped]" in transcript(cell.outputs)["text/plain"]
        assert sum(1 for o in cell.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})) <= 1
        assert_interrupted(kernel, server, db_path, requests=1)
    finally:
        kernel.close()
