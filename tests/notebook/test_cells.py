"""insert_cell from a background turn, in a real kernel: this test plays the JupyterLab extension.

The kernel asks the notebook extension (``agentik.notebook``, action ``insert_cell``) per
proposed cell, on the one request/answer path of notebook/requests.py; the extension inserts
the cell and answers by opening ``agentik.notebook.reply``. Without an answer (a frontend
without the extension closes the comm, a runner ignores it) the proposal falls back to
IPython's set_next_input payload. The browser test covers the real extension.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.notebook.cells import PROPOSAL_LINE
from agentik_jupyter.notebook.requests import REPLY_TARGET, REPLY_TIMEOUT_S, REQUEST_TARGET
from tests.kernel_support import RawKernel, kernel_env

pytestmark = pytest.mark.timeout(120)

# A background turn (the cell returns at once) asking for two cells below cell "asking".
START_TURN = """
import asyncio
from agentik_jupyter.notebook.cells import ANCHOR, CellAnchor
from agentik_jupyter.notebook.requests import frontend
from agentik_jupyter.notebook.tools import insert_cell_tool

frontend._missing_until = 0.0
insert = insert_cell_tool(get_ipython()).execute

async def turn():
    ANCHOR.set(CellAnchor(cell_id="asking"))
    return [(await insert(source="a = 1")).text, (await insert(source="b = 2")).text]

task = asyncio.get_running_loop().create_task(turn())
"""


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[RawKernel]:
    k = RawKernel(kernel_env(), tmp_path)
    try:
        yield k
    finally:
        k.close()


def next_request(k: RawKernel, seen: int, timeout: float = 10.0) -> dict[str, Any]:
    """The next insert_cell request to the notebook extension after the first `seen` ones."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        opens = inserts(k)
        if len(opens) > seen:
            return opens[seen]["content"]
        k.drain(0.05)
    raise AssertionError(f"no request #{seen + 1} to insert a cell within {timeout} s")


def inserts(k: RawKernel) -> list[dict[str, Any]]:
    return [
        m
        for m in k.comm_opens()
        if m["content"]["target_name"] == REQUEST_TARGET and m["content"]["data"].get("action") == "insert_cell"
    ]


def send(k: RawKernel, msg_type: str, content: dict[str, Any]) -> None:
    k.kc.shell_channel.send(k.kc.session.msg(msg_type, content))


def ack(k: RawKernel, request: dict[str, Any], cell_id: str) -> None:
    """What the extension does once the cell is in the notebook."""
    data = {"request_id": request["data"]["request_id"], "phase": "result", "status": "ok", "cell_id": cell_id}
    send(k, "comm_open", {"comm_id": f"ack-{cell_id}", "target_name": REPLY_TARGET, "data": data})
    send(k, "comm_close", {"comm_id": f"ack-{cell_id}", "data": {}})


def turn_result(k: RawKernel, timeout: float = 10.0) -> tuple[list[str], list[str]]:
    """The tool texts of the turn, and the set_next_input payloads of the replies meanwhile
    (a background turn's payload rides on whichever request the kernel answers next)."""
    payloads: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        ex = k.execute("print(task.done())")
        assert ex.ok and ex.reply is not None, ex.text
        payloads += [p["text"] for p in ex.reply["payload"] if p["source"] == "set_next_input"]
        if ex.text.strip() == "True":
            break
        assert time.monotonic() < deadline, "the turn did not end"
        time.sleep(0.05)
    ex = k.execute("1 + 1")
    assert ex.reply is not None
    payloads += [p["text"] for p in ex.reply["payload"] if p["source"] == "set_next_input"]
    return list(k.value("task.result()")), payloads


def test_the_extension_inserts_each_cell_below_the_previous_one(kernel: RawKernel) -> None:
    assert kernel.execute(START_TURN).ok
    first = next_request(kernel, 0)
    assert first["data"]["source"] == f"{PROPOSAL_LINE}\na = 1" and first["data"]["after_cell_id"] == "asking"
    ack(kernel, first, "new-1")
    second = next_request(kernel, 1)
    assert (
        second["data"]["source"] == f"{PROPOSAL_LINE}\nb = 2" and second["data"]["after_cell_id"] == "new-1"
    )  # order kept
    ack(kernel, second, "new-2")
    texts, payloads = turn_result(kernel)
    assert all(text.startswith("Inserted a new code cell") for text in texts), texts
    assert payloads == []  # not proposed a second time by the payload route


def test_a_client_without_the_extension_closes_the_comm_and_the_payload_takes_over(kernel: RawKernel) -> None:
    assert kernel.execute(START_TURN).ok
    first = next_request(kernel, 0)
    send(kernel, "comm_close", {"comm_id": first["comm_id"], "data": {}})  # what JupyterLab does for an unknown target
    texts, payloads = turn_result(kernel)
    assert all(text.startswith("Proposed a new code cell") for text in texts), texts
    assert "merged" in texts[1]
    # the second proposal did not ask again: the kernel remembers there is no extension
    assert len(inserts(kernel)) == 1
    assert payloads == [f"{PROPOSAL_LINE}\na = 1\n\nb = 2"]  # one proposal comment for the merged cell


def test_a_frontend_that_never_answers_costs_one_timeout(kernel: RawKernel) -> None:
    assert kernel.execute(START_TURN).ok
    texts, payloads = turn_result(kernel, timeout=REPLY_TIMEOUT_S + 10)
    assert all(text.startswith("Proposed a new code cell") for text in texts), texts
    assert payloads == [f"{PROPOSAL_LINE}\na = 1\n\nb = 2"]  # one proposal comment for the merged cell
    # only the first proposal asked (and waited); the second went straight to the payload
    assert len(inserts(kernel)) == 1


def test_a_wait_turn_inserts_through_the_extension_when_one_answered_the_hello(kernel: RawKernel) -> None:
    """`%%agent --wait` proposals carry their marks too: the extension inserts (and tags) them,
    not IPython's payload, once an extension has answered the kernel's hello."""
    start = START_TURN.replace('CellAnchor(cell_id="asking")', 'CellAnchor(cell_id="asking", in_request=True)')
    start = "from agentik_jupyter.notebook import page\npage._features['live_text'] = 1\n" + start
    assert kernel.execute(start).ok
    first = next_request(kernel, 0)
    assert first["data"]["after_cell_id"] == "asking"
    ack(kernel, first, "new-1")
    second = next_request(kernel, 1)
    assert second["data"]["after_cell_id"] == "new-1"
    ack(kernel, second, "new-2")
    texts, payloads = turn_result(kernel)
    assert all(text.startswith("Inserted a new code cell") for text in texts), texts
    assert payloads == []  # no unmarked copy through set_next_input


def test_a_wait_turn_without_an_extension_keeps_the_payload_route(kernel: RawKernel) -> None:
    """nbclient, papermill, VS Code: nothing answered the hello, so no request and no wait."""
    start = START_TURN.replace('CellAnchor(cell_id="asking")', 'CellAnchor(cell_id="asking", in_request=True)')
    assert kernel.execute(start).ok
    texts, payloads = turn_result(kernel)
    assert all(text.startswith("Proposed a new code cell") for text in texts), texts
    assert inserts(kernel) == []
