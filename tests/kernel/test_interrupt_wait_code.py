"""Interrupt stops the agent's code in a `%%agent --wait` cell.

A `--wait` cell is a top-level `await`: while it runs, ipykernel's SIGINT handler only
schedules the cell's cancellation on the event loop, and the agent's code (run_code's
user code, a plain `@tool`) holds that loop. Interrupt must still raise in that code
within a second or so: the cell ends with a Stopped transcript, the user's variables
survive, and the next turn works. A `thread=True` tool cannot be killed: the turn stops
at once and the thread finishes on its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel.test_subshell import comm_of, create_subshell, send_on_subshell
from tests.kernel_support import AGENT_EXPR, RawKernel, audit, kernel_env, roles, transcript, wait_for

pytestmark = pytest.mark.timeout(150)

S = f"{AGENT_EXPR}.session"
STOPPED = "[■ Stopped"  # then "]" or " · tokens…]"
MARGIN = 8.0  # seconds; the code would run 20 s (or forever) if the interrupt did not land

SLEEP = "open({marker!r}, 'w').close()\nimport time\ntime.sleep(20)\n'woke up'"
SPIN = "open({marker!r}, 'w').close()\nwhile True:\n    pass"
AWAIT = "open({marker!r}, 'w').close()\nimport asyncio\nawait asyncio.sleep(20)"
SLEEPING_TOOL = '''
import time
from agentik_jupyter import tool

@tool(policy="auto")
def nap(marker: str) -> str:
    """Take a nap (a plain function: it holds the kernel's main thread)."""
    open(marker, "w").close()
    time.sleep(20)
    return "rested"

@tool(policy="auto", thread=True)
def nap_in_thread(marker: str, done: str) -> str:
    """Take a nap in a worker thread."""
    open(marker, "w").close()
    time.sleep(3)
    open(done, "w").close()
    return "rested"
'''


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def start(server: FakeLLMServer, tmp_path: Path, **env: str) -> tuple[RawKernel, Path]:
    db_path = tmp_path / "wait.agentik.db"
    kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path), AGENTIK_APPROVE="auto", **env), tmp_path)
    kernel.text("%load_ext agentik_jupyter\nkept = 41")
    return kernel, db_path


def interrupt_when(kernel: RawKernel, marker: Path, msg_id: str) -> tuple[float, object]:
    """Interrupt once the agent's code has started; the seconds until the cell ended, and the cell."""
    wait_for(marker.exists, 20, "the agent's code to start")
    time.sleep(0.5)  # well inside the sleep / the loop
    interrupted = time.monotonic()
    kernel.km.interrupt_kernel()
    cell = kernel.collect(msg_id, timeout=40)
    return time.monotonic() - interrupted, cell


def assert_stopped_and_alive(kernel: RawKernel, server: FakeLLMServer, db_path: Path, cell: object) -> None:
    """One Stopped transcript, an interrupted turn on file, the user's state kept, a working next turn."""
    assert STOPPED in transcript(cell.outputs)["text/plain"], cell.text  # type: ignore[attr-defined]
    kernel.wait_until(f"not {S}.busy", timeout=10, interval=0.1)
    assert len(server.requests) == 1, "no model call may follow an interrupt"
    entries = audit(db_path)
    assert roles(entries)[-1] == "ErrorRecord" and entries[-1].record.code == "interrupted", roles(entries)
    results = [e.record for e in entries if type(e.record).__name__ == "ToolResultRecord"]
    assert results and "Interrupted" in (results[-1].result.error or ""), results
    assert kernel.value("kept") == 41
    server.clear()  # the unused "never asked" reply
    server.push(Reply.text("Still here."))
    after = kernel.execute("%%agent --wait\nAre you there?", timeout=40)
    assert after.ok and "Still here." in transcript(after.outputs)["text/plain"], after.text
    assert roles(audit(db_path))[-1] == "AssistantMessage"


def interrupt_background(kernel: RawKernel, server: FakeLLMServer, db_path: Path) -> None:
    """Interrupt while a turn not tied to a running cell holds the loop in its code: the turn
    stops within MARGIN, the sessions file says so, the user's variables stay, no model call follows."""
    time.sleep(0.5)
    interrupted = time.monotonic()
    kernel.km.interrupt_kernel()
    kernel.wait_until(f"not {S}.busy", timeout=MARGIN, interval=0.1)
    assert time.monotonic() - interrupted < MARGIN
    entries = audit(db_path)
    assert roles(entries)[-1] == "ErrorRecord" and entries[-1].record.code == "interrupted", roles(entries)
    assert kernel.value("kept") == 41 and len(server.requests) == 1


@pytest.mark.parametrize("code", [SLEEP, SPIN, AWAIT], ids=["sleep", "busy-loop", "top-level-await"])
def test_interrupt_stops_run_code_in_a_wait_cell(server: FakeLLMServer, tmp_path: Path, code: str) -> None:
    kernel, db_path = start(server, tmp_path)
    try:
        marker = tmp_path / "started"
        server.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": code.format(marker=str(marker))}}]),
            Reply.text("never asked"),
        )
        msg_id = kernel.submit("%%agent --wait\nRun it.")
        took, cell = interrupt_when(kernel, marker, msg_id)
        assert took < MARGIN, f"the cell ended {took:.1f} s after the interrupt"
        assert_stopped_and_alive(kernel, server, db_path, cell)
    finally:
        kernel.close()


def test_interrupt_stops_run_code_with_agentik_wait(server: FakeLLMServer, tmp_path: Path) -> None:
    """AGENTIK_WAIT=1 makes a plain `%%agent` cell wait: the same rule holds."""
    kernel, db_path = start(server, tmp_path, AGENTIK_WAIT="1")
    try:
        marker = tmp_path / "started"
        server.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": SPIN.format(marker=str(marker))}}]),
            Reply.text("never asked"),
        )
        msg_id = kernel.submit("%%agent\nSpin.")
        took, cell = interrupt_when(kernel, marker, msg_id)
        assert took < MARGIN, f"the cell ended {took:.1f} s after the interrupt"
        assert_stopped_and_alive(kernel, server, db_path, cell)
    finally:
        kernel.close()


def test_interrupt_stops_a_plain_tool_in_a_wait_cell(server: FakeLLMServer, tmp_path: Path) -> None:
    kernel, db_path = start(server, tmp_path)
    try:
        kernel.text(SLEEPING_TOOL)
        marker = tmp_path / "napping"
        server.push(Reply.tool_calls([{"name": "nap", "args": {"marker": str(marker)}}]), Reply.text("never asked"))
        msg_id = kernel.submit("%%agent --wait\nNap.")
        took, cell = interrupt_when(kernel, marker, msg_id)
        assert took < MARGIN, f"the cell ended {took:.1f} s after the interrupt"
        assert_stopped_and_alive(kernel, server, db_path, cell)
    finally:
        kernel.close()


def test_interrupt_stops_the_turn_of_a_threaded_tool_and_the_thread_finishes_alone(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    """A worker thread cannot be killed: the turn stops at once, the thread's work completes later."""
    kernel, db_path = start(server, tmp_path)
    try:
        kernel.text(SLEEPING_TOOL)
        marker, done = tmp_path / "napping", tmp_path / "done"
        server.push(
            Reply.tool_calls([{"name": "nap_in_thread", "args": {"marker": str(marker), "done": str(done)}}]),
            Reply.text("never asked"),
        )
        msg_id = kernel.submit("%%agent --wait\nNap in a thread.")
        took, cell = interrupt_when(kernel, marker, msg_id)
        assert took < 2.5, f"the cell ended {took:.1f} s after the interrupt"
        assert not done.exists()
        assert_stopped_and_alive(kernel, server, db_path, cell)
        wait_for(done.exists, 20, "the worker thread to finish on its own")
    finally:
        kernel.close()


def test_interrupt_stops_run_code_of_a_background_turn(server: FakeLLMServer, tmp_path: Path) -> None:
    """The background form (the cell has returned; the kernel is idle) keeps working."""
    kernel, db_path = start(server, tmp_path)
    try:
        marker = tmp_path / "started"
        server.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": SPIN.format(marker=str(marker))}}]),
            Reply.text("never asked"),
        )
        assert kernel.execute("%%agent\nSpin.").ok
        wait_for(marker.exists, 20, "the agent's code to start")
        interrupt_background(kernel, server, db_path)
        server.clear()
        server.push(Reply.text("Still here."))
        after = kernel.execute("%%agent --wait\nAre you there?", timeout=40)
        assert "Still here." in transcript(after.outputs)["text/plain"]
    finally:
        kernel.close()


def test_interrupt_stops_run_code_of_a_panel_turn(server: FakeLLMServer, tmp_path: Path) -> None:
    """A turn sent from the chat panel (widget messages on a subshell, as JupyterLab sends them)."""
    kernel, db_path = start(server, tmp_path)
    try:
        marker = tmp_path / "started"
        server.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": SPIN.format(marker=str(marker))}}]),
            Reply.text("never asked"),
        )
        assert kernel.execute("%agent panel").ok
        kernel.drain(0.3)
        subshell = create_subshell(kernel)
        box = comm_of(kernel, "TextModel", placeholder="Ask the agent")
        send_on_subshell(kernel, subshell, box, {"method": "update", "state": {"value": "Spin."}, "buffer_paths": []})
        time.sleep(0.3)
        send_on_subshell(
            kernel,
            subshell,
            comm_of(kernel, "ButtonModel", description="Send"),
            {"method": "custom", "content": {"event": "click"}},
        )
        wait_for(marker.exists, 20, "the agent's code to start")
        interrupt_background(kernel, server, db_path)
    finally:
        kernel.close()


def test_interrupt_stops_a_background_turns_code_while_an_async_cell_runs(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    """While another async cell runs, ipykernel's handler holds SIGINT: the agent's code that
    holds the loop is what the Interrupt stops (a second Interrupt would stop the cell)."""
    kernel, db_path = start(server, tmp_path)
    try:
        marker = tmp_path / "started"
        spin = Reply.tool_calls([{"name": "run_code", "args": {"code": SPIN.format(marker=str(marker))}}])
        server.push(replace(spin, fault_kind="slow_first_byte", delay=2.0))  # the cell below starts first
        assert kernel.execute("%%agent\nSpin.").ok
        cell = kernel.submit("import asyncio\nawait asyncio.sleep(6)\nprint('cell done')")
        time.sleep(0.5)
        wait_for(marker.exists, 20, "the agent's code to start")
        time.sleep(0.5)
        kernel.km.interrupt_kernel()
        finished = kernel.collect(cell, timeout=20)
        assert "cell done" in finished.text
        entries = audit(db_path)
        assert roles(entries)[-1] == "ErrorRecord" and entries[-1].record.code == "interrupted", roles(entries)
        assert kernel.value("kept") == 41
    finally:
        kernel.close()
