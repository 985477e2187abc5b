"""What an agent cell shows, kept in the kernel for a page opened later (`live_cells` on the control
comm), in a real kernel with the fake LLM streaming slowly.

While a background `%%agent` cell's turn runs, the kernel answers with that cell's outputs as a
frontend applying its request's messages holds them (the live view's widget, with its display id),
not ended; once it ends, the view's place holds the transcript (the update by display id applied)
and the record says ended. A cell run again starts with nothing kept; cells that are not agent
turns, and requests without a cell id, are never kept. A `--wait` cell's record holds its
transcript once it ended. (And `LiveCells` itself: messages applied as an output area applies them;
at most KEPT cells.)
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.kernel.live_cells import KEPT, LiveCells
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import RawKernel, kernel_env

pytestmark = pytest.mark.timeout(120)

TARGET = "agentik.control"
WIDGET = "application/vnd.jupyter.widget-view+json"
TRANSCRIPT = "application/vnd.agentik.transcript+json"
ANSWER = " ".join(["Slow answer:", *(f"w{i}" for i in range(30)), "END-SLOW"])


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[RawKernel, FakeLLMServer]]:
    with FakeLLMServer(chunk_delay=0.05) as server:
        k = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "s.agentik.db")), tmp_path)
        try:
            k.text("%load_ext agentik_jupyter")
            yield k, server
        finally:
            k.close()


def run_in_cell(k: RawKernel, code: str, cell_id: str | None) -> str:
    """Run `code` as JupyterLab does (the request names its cell); its message id, once it replied."""
    msg = k.kc.session.msg(
        "execute_request",
        {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False},
    )
    if cell_id is not None:
        msg["metadata"] = {"cellId": cell_id}
    k.kc.shell_channel.send(msg)
    msg_id = str(msg["header"]["msg_id"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        k.drain(0.05)
        if any(
            m["msg_type"] == "status"
            and m["content"].get("execution_state") == "idle"
            and m["parent_header"].get("msg_id") == msg_id
            for m in k.iopub
        ):
            return msg_id
    raise AssertionError(f"the cell {code!r} did not run")


def live_cells(k: RawKernel) -> list[dict[str, Any]]:
    """The control comm's `live_cells` answer, as a page opening the notebook asks it."""
    comm_id = uuid.uuid4().hex
    k.kc.shell_channel.send(
        k.kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": {"action": "live_cells"}})
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        k.drain(0.05)
        for m in k.iopub:
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id:
                answer = dict(m["content"]["data"])
                assert answer["ok"] is True, answer
                return list(answer["cells"])
    raise AssertionError("no answer on the control comm")


def test_a_running_turn_s_outputs_are_kept_then_its_transcript(kernel: tuple[RawKernel, FakeLLMServer]) -> None:
    k, server = kernel
    server.push(Reply.text(ANSWER))
    parent = run_in_cell(k, "%%agent\nTell me slowly.", "cell-ask")
    deadline = time.monotonic() + 30
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)

    (running,) = live_cells(k)
    assert (running["cell_id"], running["parent"], running["ended"]) == ("cell-ask", parent, False)
    view, place = running["outputs"]  # the live view, and the place its Rewind takes at the end
    assert WIDGET in view["output"]["data"] and view["display_id"], view
    assert view["output"]["output_type"] == "display_data" and "transient" not in view["output"]
    assert place["display_id"] and place["display_id"] != view["display_id"]

    deadline = time.monotonic() + 60
    while not (cells := live_cells(k))[0]["ended"] and time.monotonic() < deadline:
        time.sleep(0.2)
    (ended,) = cells
    assert ended["ended"] is True
    transcript = ended["outputs"][0]
    assert transcript["display_id"] == view["display_id"]  # the view's place, updated in place
    assert TRANSCRIPT in transcript["output"]["data"] and "END-SLOW" in str(transcript["output"]["data"])
    assert WIDGET not in transcript["output"]["data"]

    run_in_cell(k, "print('other code now')", "cell-ask")  # the cell runs again: nothing kept for it
    assert live_cells(k) == []


def test_a_wait_cell_s_transcript_is_kept_as_the_cell_shows_it(kernel: tuple[RawKernel, FakeLLMServer]) -> None:
    k, server = kernel
    server.push(Reply.text("Waited for. END-WAIT"))
    parent = run_in_cell(k, "%%agent --wait\nAnswer while the cell runs.", "cell-wait")
    (ended,) = live_cells(k)
    assert (ended["cell_id"], ended["parent"], ended["ended"]) == ("cell-wait", parent, True)
    shown = [o["output"]["data"] for o in ended["outputs"] if o["output"]["output_type"] == "display_data"]
    assert [TRANSCRIPT in data for data in shown].count(True) == 1, shown  # after the view's place
    assert "END-WAIT" in str(shown)


def test_only_agent_cells_with_a_cell_id_are_kept(kernel: tuple[RawKernel, FakeLLMServer]) -> None:
    k, server = kernel
    run_in_cell(k, "from IPython.display import display\ndisplay('plain output')", "cell-plain")
    server.push(Reply.text("No cell id. END-NONE"))
    run_in_cell(k, "%%agent\nAsked without a cell id.", None)
    assert live_cells(k) == []


def message(kind: str, parent: str, **content: Any) -> dict[str, Any]:
    return {"msg_type": kind, "parent_header": {"msg_id": parent}, "content": content}


def test_messages_are_applied_as_an_output_area_applies_them() -> None:
    live = LiveCells()
    live.follow("cell-a", "req-a")
    for msg in (
        message("stream", "req-a", name="stdout", text="one "),
        message("stream", "req-a", name="stdout", text="two"),
        message("display_data", "req-a", data={"text/plain": "view"}, metadata={}, transient={"display_id": "d1"}),
        message("display_data", "req-other", data={"text/plain": "not this cell's"}, metadata={}),
        message(
            "update_display_data", "req-other", data={"text/plain": "new"}, metadata={}, transient={"display_id": "d1"}
        ),
    ):
        assert live.hook(msg) is msg  # sent on unchanged
    (cell,) = live.answer()
    assert [
        (o["output"].get("text") or o["output"]["data"]["text/plain"], o["display_id"]) for o in cell["outputs"]
    ] == [
        ("one two", None),
        ("new", "d1"),
    ]
    live.hook(message("clear_output", "req-a", wait=True))
    assert len(live.answer()[0]["outputs"]) == 2  # (cleared at the next output)
    live.hook(message("display_data", "req-a", data={"text/plain": "after"}, metadata={}))
    assert [o["output"]["data"]["text/plain"] for o in live.answer()[0]["outputs"]] == ["after"]


def test_at_most_kept_cells_the_oldest_ended_first() -> None:
    live = LiveCells()
    first = live.follow("cell-0", "req-0")
    first.end()
    for i in range(1, KEPT + 1):
        live.follow(f"cell-{i}", f"req-{i}")
    kept = [c["cell_id"] for c in live.answer()]
    assert len(kept) == KEPT and "cell-0" not in kept and "cell-1" in kept
