"""Interrupt while the kernel is busy reading a fast stream (the read-ahead task holds the main thread).

The answer arrives faster than it can be parsed, so the signal lands in the task that reads
the stream ahead of the turn, not in the turn itself: the turn still ends as interrupted, the
kernel lives on, and the next turn works.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import AGENT_EXPR, RawKernel, audit, kernel_env, roles, transcript, wait_for

pytestmark = pytest.mark.timeout(180)

S = f"{AGENT_EXPR}.session"
FAST_LONG = "abcd" * 150_000  # 600,000 characters in 4-character chunks: seconds of parsing


@pytest.mark.parametrize("wait", [True, False], ids=["wait-cell", "background"])
def test_interrupt_while_the_stream_is_parsed(tmp_path: Path, wait: bool) -> None:
    with FakeLLMServer() as server:
        db_path = tmp_path / "busy.agentik.db"
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            server.push(Reply.text(FAST_LONG, chunks=len(FAST_LONG) // 4))
            msg_id = kernel.submit("%%agent" + (" --wait" if wait else "") + "\nWrite a very long essay.")
            wait_for(lambda: len(server.requests) >= 1, 10, "the model call")
            if not wait:
                kernel.collect(msg_id, timeout=10)  # the background turn outlives its cell
            time.sleep(0.8)
            if not wait:
                assert kernel.value(f"{S}.busy"), "the turn was still reading when interrupted"
            kernel.km.interrupt_kernel()
            if wait:
                cell = kernel.collect(msg_id, timeout=30)
                assert "[■ Stopped]" in transcript(cell.outputs)["text/plain"]
            kernel.wait_until(f"not {S}.busy", timeout=30, interval=0.1)
            entries = audit(db_path)
            assert roles(entries)[-1] == "ErrorRecord" and entries[-1].record.code == "interrupted", roles(entries)
            server.push(Reply.text("Still here."))
            after = kernel.execute("%%agent --wait\nAre you there?", timeout=30)
            assert after.ok and "Still here." in transcript(after.outputs)["text/plain"]
        finally:
            kernel.close()
