""" "Fix with agent" over the `agentik.control` comm, in a real kernel with the fake LLM.

The button no longer inserts a `%agent fix <uuid>` cell: it opens a comm with
`{"action": "fix", "cell_id"}`. The kernel refuses anything that is not a cell id (no code is
ever built from it), starts what `%agent fix CELL_ID` starts, and displays the turn with the
comm's open message as parent, which is how the extension finds what to show under the cell.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import RawKernel, kernel_env

pytestmark = pytest.mark.timeout(120)

TARGET = "agentik.control"


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[RawKernel, FakeLLMServer]]:
    with FakeLLMServer() as server:
        k = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "s.agentik.db")), tmp_path)
        try:
            yield k, server
        finally:
            k.close()


def open_control(k: RawKernel, data: dict[str, Any]) -> tuple[str, str]:
    """Open a comm to the control target as the extension does; (comm id, open message id)."""
    comm_id = uuid.uuid4().hex
    msg = k.kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": data})
    k.kc.shell_channel.send(msg)
    return comm_id, msg["header"]["msg_id"]


def answer(k: RawKernel, comm_id: str, timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        k.drain(0.05)
        for m in k.iopub:
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id:
                return dict(m["content"]["data"])
    raise AssertionError("no answer on the control comm")


def fail_in_cell(k: RawKernel, cell_id: str) -> None:
    """Run a failing cell as JupyterLab does: the execute request names the cell."""
    msg = k.kc.session.msg(
        "execute_request",
        {
            "code": "scaled = total * factor",
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": False,
        },
    )
    msg["metadata"] = {"cellId": cell_id}
    k.kc.shell_channel.send(msg)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        k.drain(0.05)
        if any(
            m["msg_type"] == "error" and m["parent_header"].get("msg_id") == msg["header"]["msg_id"] for m in k.iopub
        ):
            return
    raise AssertionError("the failing cell did not fail")


def shown_under(k: RawKernel, parent: str) -> str:
    """Everything displayed with `parent` as parent (what the extension shows under the cell)."""
    texts = []
    for m in k.iopub:
        if m["parent_header"].get("msg_id") == parent and m["msg_type"] in ("display_data", "update_display_data"):
            texts.append(
                str(m["content"]["data"].get("text/plain", "")) + str(m["content"]["data"].get("text/html", ""))
            )
        if m["parent_header"].get("msg_id") == parent and m["msg_type"] == "stream":
            texts.append(m["content"]["text"])
    return "\n".join(texts)


@pytest.mark.parametrize("bad", ["x\nimport os", "a;b", "", "é" * 3, "a" * 65, 123, None])
def test_anything_but_a_cell_id_is_refused(kernel: tuple[RawKernel, FakeLLMServer], bad: Any) -> None:
    k, server = kernel
    k.text("%load_ext agentik_jupyter")
    comm_id, _ = open_control(k, {"action": "fix", "cell_id": bad})
    assert answer(k, comm_id) == {"ok": False, "error": "That is not a cell id."}
    assert server.requests == []  # no turn started


def test_fix_starts_the_turn_and_displays_it_under_the_request(kernel: tuple[RawKernel, FakeLLMServer]) -> None:
    k, server = kernel
    k.text("%load_ext agentik_jupyter\ntotal = 21")
    fail_in_cell(k, "cell-broken")
    server.push(Reply.text("Define factor first. FIX-ANSWER"))
    comm_id, parent = open_control(k, {"action": "fix", "cell_id": "cell-broken"})
    assert answer(k, comm_id) == {"ok": True}
    deadline = time.monotonic() + 30
    while "FIX-ANSWER" not in shown_under(k, parent) and time.monotonic() < deadline:
        k.drain(0.1)
    shown = shown_under(k, parent)
    assert "FIX-ANSWER" in shown and "Fix the failed cell" in shown, shown[-2000:]
    assert "%agent fix" not in shown


def test_a_second_fix_of_a_cell_whose_fix_is_under_way_is_refused(tmp_path: Path) -> None:
    """A stale "Fix with agent" clicked while the first fix still runs starts no second turn."""
    with FakeLLMServer(chunk_delay=0.1) as server:
        k = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "s.agentik.db")), tmp_path)
        try:
            k.text("%load_ext agentik_jupyter\ntotal = 21")
            fail_in_cell(k, "cell-broken")
            server.push(Reply.text(" ".join(["Looking"] * 150) + " FIRST-FIX"))  # about 15 s of streaming
            first, parent = open_control(k, {"action": "fix", "cell_id": "cell-broken"})
            assert answer(k, first) == {"ok": True}
            second, _ = open_control(k, {"action": "fix", "cell_id": "cell-broken"})
            refused = answer(k, second)
            assert refused["ok"] is False and "already under way" in refused["error"], refused
            deadline = time.monotonic() + 60
            while "FIRST-FIX" not in shown_under(k, parent) and time.monotonic() < deadline:
                k.drain(0.1)
            assert "FIRST-FIX" in shown_under(k, parent)
            assert len(server.requests) == 1  # one fix turn asked the model
            # once the first fix has ended, the cell can be fixed again
            server.push(Reply.text("Again. SECOND-FIX"))
            third, _ = open_control(k, {"action": "fix", "cell_id": "cell-broken"})
            assert answer(k, third) == {"ok": True}
        finally:
            k.close()
