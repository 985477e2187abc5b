"""Why kernel/interrupt.py's handler still raises KeyboardInterrupt itself.

interruptible.py puts its handler on top of whatever holds SIGINT when a tool starts. If that
is an async cell's (ipykernel's `_cancel_on_sigint`), the cell's end puts the handlers back
wholesale: interruptible's is gone, and agentik's idle handler (kernel/interrupt.py) holds
SIGINT again while the tool still runs. When the tool then holds the loop (`while True`),
only that handler raising in the tool's code can stop it: scheduling a stop on the loop
would wait forever. Real kernel, real Interrupt.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel.test_interrupt_wait_code import interrupt_background
from tests.kernel_support import RawKernel, kernel_env, wait_for

pytestmark = pytest.mark.timeout(150)

WAIT_THEN_SPIN = '''
import asyncio
from agentik_jupyter import tool

@tool(policy="auto")
async def wait_then_spin(started: str, spinning: str) -> str:
    """Wait a little (the loop is free: a cell can end meanwhile), then hold the loop."""
    open(started, "w").close()
    await asyncio.sleep(3)
    open(spinning, "w").close()
    while True:
        pass
'''


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def test_a_tool_that_outlives_the_cell_it_started_in_is_still_interrupted(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    db_path = tmp_path / "after.agentik.db"
    kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path), AGENTIK_APPROVE="auto"), tmp_path)
    try:
        kernel.text("%load_ext agentik_jupyter\nkept = 41\n" + WAIT_THEN_SPIN)
        started, spinning = tmp_path / "started", tmp_path / "spinning"
        call = Reply.tool_calls(
            [{"name": "wait_then_spin", "args": {"started": str(started), "spinning": str(spinning)}}]
        )
        server.push(replace(call, fault_kind="slow_first_byte", delay=1.0), Reply.text("never asked"))
        assert kernel.execute("%%agent\nWait, then spin.").ok  # a background turn
        cell = kernel.submit("import asyncio\nawait asyncio.sleep(2.5)\nprint('cell done')")
        wait_for(started.exists, 20, "the tool to start while the cell runs")
        assert "cell done" in kernel.collect(cell, timeout=20).text  # the cell ended; the tool waits on
        wait_for(spinning.exists, 20, "the tool to hold the loop")
        interrupt_background(kernel, server, db_path)
    finally:
        kernel.close()
