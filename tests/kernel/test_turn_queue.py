"""Run All over many background `%%agent` cells: the turns queue.

Each cell returns at once and its turn waits its place: the view says how many turns
are ahead, and when its turn ends the cell's live view is replaced by its own
transcript. All ten complete, in order, each answer in its own cell.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer
from tests.kernel_support import AGENT_EXPR, RawKernel, audit, kernel_env, output_text, roles, user_texts, wait_for

pytestmark = pytest.mark.timeout(180)

CELLS = 10
TRANSCRIPT = "application/vnd.agentik.transcript+json"


def display_id(messages: list[dict[str, Any]]) -> str:
    ids = [
        m["content"]["transient"]["display_id"]
        for m in messages
        if m["msg_type"] == "display_data" and "transient" in m["content"]
    ]
    assert len(ids) == 2, ids  # the view's place, then the place of the turn's Rewind below it
    return str(ids[0])


def transcripts_of(kernel: RawKernel, live_id: str) -> list[dict[str, Any]]:
    return [
        m["content"]["data"]
        for m in kernel.iopub
        if m["msg_type"] == "update_display_data"
        and m["content"]["transient"]["display_id"] == live_id
        and TRANSCRIPT in m["content"]["data"]
    ]


def final_transcript(kernel: RawKernel, live_id: str) -> dict[str, Any]:
    updates = transcripts_of(kernel, live_id)
    # one transcript; `%agent stop` sends the ones it stopped once more, the same, as its own cell's
    distinct = {json.dumps(u, sort_keys=True) for u in updates}
    assert len(distinct) == 1, f"expected one transcript for {live_id}, got {len(distinct)}"
    return updates[0]


def test_run_all_over_ten_background_cells_answers_each_in_order(tmp_path: Path) -> None:
    db_path = tmp_path / "queue.agentik.db"
    with FakeLLMServer(chunk_delay=0.02) as server:
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            # Run All: the requests are sent back to back, as the frontend does.
            ids = [kernel.submit(f"%%agent\nQuestion number {i}.") for i in range(CELLS)]
            cells = [kernel.collect(m, timeout=30) for m in ids]
            for cell in cells:
                assert cell.ok, cell.text
                assert "Error" not in cell.text, cell.text
            live = [display_id(cell.messages) for cell in cells]
            wait_for(
                lambda: kernel.drain(0.1) or all(transcripts_of(kernel, i) for i in live), 90, "every cell's transcript"
            )

            # Each cell ends with its own answer, in order, and the model saw the questions in order.
            for i, cell in enumerate(cells):
                bundle = final_transcript(kernel, display_id(cell.messages))
                assert f"Echo: Question number {i}." in bundle["text/plain"], (i, bundle["text/plain"])
                others = [j for j in range(CELLS) if j != i]
                assert not any(f"Question number {j}." in bundle["text/plain"] for j in others)
            asked = [user_texts(r)[-1] for r in server.requests]
            assert asked == [f"Question number {i}." for i in range(CELLS)]
            entries = audit(db_path)
            assert roles(entries).count("UserMessage") == CELLS
            assert "ErrorRecord" not in roles(entries)
            # Waiting cells said where they stood.
            statuses = json.dumps([m["content"] for m in kernel.iopub if m["msg_type"] == "comm_msg"])
            assert "Queued (1 ahead)" in statuses and f"Queued ({CELLS - 1} ahead)" in statuses
        finally:
            kernel.close()


def test_a_queued_cells_stop_removes_it_and_stop_all_empties_the_queue(tmp_path: Path) -> None:
    db_path = tmp_path / "stopq.agentik.db"
    s = f"{AGENT_EXPR}.session"
    long_answer = " ".join(f"word{i}" for i in range(300))
    with FakeLLMServer(chunk_delay=0.05) as server:
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            server.push(long_answer)
            first = kernel.execute("%%agent\nLong one.")
            second = kernel.execute("%%agent\nSecond.")
            third = kernel.execute("%%agent\nThird.")
            fourth = kernel.execute("%%agent\nFourth.")
            kernel.wait_until(f"{s}.queued == 3", timeout=10)
            wait_for(lambda: server.requests, 10, "the first turn's request")  # under load it can lag the queue
            stops = [
                m["content"]["comm_id"]
                for m in second.messages
                if m["msg_type"] == "comm_open" and m["content"]["data"].get("state", {}).get("description") == "Stop"
            ]
            kernel.click(stops[0])  # the second cell's own Stop: it leaves the queue
            kernel.wait_until(f"{s}.queued == 2", timeout=5)
            assert "Stopped 3 turn(s)." in kernel.text("%agent stop --all")
            kernel.wait_until(f"not {s}.busy and {s}.queued == 0", timeout=10)
            assert len(server.requests) == 1
            kernel.drain(0.3)
            for cell in (second, third, fourth):
                assert "Stopped" in final_transcript(kernel, display_id(cell.messages))["text/plain"]
            assert output_text(first.outputs)
        finally:
            kernel.close()
