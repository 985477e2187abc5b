"""One answer per request when several pages hold the notebook, in a real kernel: this test plays the pages.

Every page with the extension (two tabs, collaborators) sees the kernel's `agentik.notebook`
request. The request names the page that asked (the client session of the execute request);
that page answers and the others stand by. A page that answers anyway is ignored: never an
error, never its answer taken for the named page's decision. A named page that stays silent
(reloaded, closed) hands the request to a page that stood by, and a request that names no page
goes to one page that stood by, a focused one first. The browser tests drive the real extension.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.notebook.requests import (
    CLOSED_GRACE_S,
    FALLBACK_S,
    REPLY_TARGET,
    REPLY_TIMEOUT_S,
    REQUEST_TARGET,
)
from tests.kernel.test_session_control import ask
from tests.kernel_support import RawKernel, kernel_env

pytestmark = pytest.mark.timeout(120)

# A turn's edit of cell "c1" (read before as "x = 1"), started by this client's execute request.
START_EDIT = """
import asyncio
from agentik_jupyter.notebook.edits import ReadLedger, propose_change
from agentik_jupyter.notebook.requests import asked_from, asking_page, frontend

frontend._missing_until = 0.0
ledger = ReadLedger({"c1": "x = 1"})
with asked_from(asking_page()):
    task = asyncio.get_running_loop().create_task(propose_change(ledger, "c1", "x = 2", 60))
"""

# A background turn's proposed cell, from a turn that knows no page (a kernel-side start).
START_INSERT_NO_PAGE = """
import asyncio
from agentik_jupyter.notebook.cells import ANCHOR, CellAnchor
from agentik_jupyter.notebook.requests import frontend
from agentik_jupyter.notebook.tools import insert_cell_tool

frontend._missing_until = 0.0
insert = insert_cell_tool(get_ipython()).execute

async def turn():
    ANCHOR.set(CellAnchor(cell_id="asking"))
    return (await insert(source="a = 1")).text

task = asyncio.get_running_loop().create_task(turn())
"""


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[RawKernel]:
    k = RawKernel(kernel_env(), tmp_path)
    try:
        yield k
    finally:
        k.close()


def requests(k: RawKernel) -> list[dict[str, Any]]:
    return [m["content"] for m in k.comm_opens() if m["content"]["target_name"] == REQUEST_TARGET]


def nth_request(k: RawKernel, n: int, timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = requests(k)
        if len(found) > n:
            return found[n]
        k.drain(0.05)
    raise AssertionError(f"no request #{n + 1} to the notebook within {timeout} s")


def page_says(k: RawKernel, page: str, request: dict[str, Any], **data: Any) -> None:
    """What a page's extension does to answer: open the reply comm (from its own client session)."""
    body = {"request_id": request["data"]["request_id"], "page": page, **data}
    comm_id = f"reply-{page}-{time.monotonic_ns()}"
    for msg_type, content in (
        ("comm_open", {"comm_id": comm_id, "target_name": REPLY_TARGET, "data": body}),
        ("comm_close", {"comm_id": comm_id, "data": {}}),
    ):
        msg = k.kc.session.msg(msg_type, content)
        msg["header"]["session"] = page
        k.kc.shell_channel.send(msg)


def turn_text(k: RawKernel, timeout: float = 20.0) -> str:
    k.wait_until("task.done()", timeout)
    return str(k.value("getattr(task.result(), 'text', task.result())"))


def named_after_standby(k: RawKernel, page: str, first: dict[str, Any]) -> dict[str, Any]:
    """`page` stands by (focused) for the request `first`; the kernel asks again, naming it."""
    page_says(k, page, first, phase="standby", focused=True)
    second = nth_request(k, 1)
    assert second["data"]["page"] == page
    return second


def inserts(k: RawKernel, page: str, request: dict[str, Any]) -> None:
    """`page` answers the insert `request` with its new cell: the turn's tool says it inserted one."""
    page_says(k, page, request, phase="result", status="ok", cell_id="new-1")
    text = turn_text(k)
    assert text.startswith("Inserted a new code cell"), text


def test_the_page_that_asked_is_named_and_a_second_page_answering_changes_nothing(kernel: RawKernel) -> None:
    asking = kernel.kc.session.session
    assert kernel.execute(START_EDIT).ok
    request = nth_request(kernel, 0)
    assert request["data"]["page"] == asking  # the request names the page whose cell asked
    other = "page-b"
    page_says(kernel, other, request, phase="standby", focused=True)
    page_says(kernel, asking, request, phase="shown", cell_number=1, execution_count=None)
    # a second page that shows and decides anyway (an extension that does not stand by)
    page_says(kernel, other, request, phase="shown", cell_number=1, execution_count=None)
    page_says(kernel, other, request, phase="result", status="rejected")
    kernel.drain(0.5)
    assert not kernel.value("task.done()"), "the other page's decision was taken for the asking page's"
    page_says(kernel, asking, request, phase="result", status="accepted")
    text = turn_text(kernel)
    assert text.startswith("The user accepted the edit: cell c1 now holds the new source"), text
    assert len(requests(kernel)) == 1  # asked once


def test_a_named_page_that_stays_silent_hands_the_request_to_a_page_that_stood_by(kernel: RawKernel) -> None:
    assert kernel.execute(START_EDIT).ok
    first = nth_request(kernel, 0)
    page_says(kernel, "page-b", first, phase="standby", focused=False)  # the asking page was reloaded: silent
    second = nth_request(kernel, 1, timeout=FALLBACK_S + 10)
    assert second["data"]["page"] == "page-b"
    assert second["data"]["request_id"] == first["data"]["request_id"]
    page_says(kernel, "page-b", second, phase="shown", cell_number=1, execution_count=None)
    page_says(kernel, "page-b", second, phase="result", status="accepted")
    text = turn_text(kernel)
    assert text.startswith("The user accepted the edit"), text


def test_a_request_naming_no_page_goes_to_one_page_a_focused_one_first(kernel: RawKernel) -> None:
    assert kernel.execute(START_INSERT_NO_PAGE).ok
    first = nth_request(kernel, 0)
    assert first["data"]["page"] is None
    page_says(kernel, "page-a", first, phase="standby", focused=False)
    second = named_after_standby(kernel, "page-b", first)
    inserts(kernel, "page-b", second)
    kernel.drain(0.5)
    assert len(requests(kernel)) == 2  # nobody else was asked to insert it


ASK_WITH_NO_PAGE = """
import asyncio
from agentik_jupyter.notebook.requests import frontend

frontend._missing_until = 0.0

async def probe():
    try:
        await frontend.ask("read_notebook")
    except Exception as exc:
        return type(exc).__name__

task = asyncio.get_running_loop().create_task(probe())
"""


def test_a_page_that_opens_the_notebook_again_is_asked_at_once(kernel: RawKernel) -> None:
    """No page answered (every tab closed): the kernel remembers it and, for a minute, gives the
    turn the fallback at once. A page that opens the notebook again speaks on the control comm
    (the renderers' and the reattach plugin's requests): that ends the memory, so the next edit
    goes to the page as a diff, not into the tool card."""
    assert kernel.execute("%load_ext agentik_jupyter").ok
    assert kernel.execute(ASK_WITH_NO_PAGE).ok
    deadline = time.monotonic() + 30
    while not kernel.value("task.done()") and time.monotonic() < deadline:
        kernel.drain(0.2)
    assert kernel.value("task.result()") == "NoFrontend"
    assert kernel.value("frontend.known_missing") is True
    assert ask(kernel, {"action": "live_cells"}) is not None  # what a page asks on connecting
    assert kernel.value("frontend.known_missing") is False


def test_once_a_page_spoke_its_answer_seconds_late_still_counts(kernel: RawKernel) -> None:
    """On a loaded machine a page's extension can take seconds to answer. Once a page has spoken to
    this kernel (it asks on the control comm when it connects), a request waits for it as for a
    page, not the few seconds that bound a frontend without the extension: the proposed cell goes
    to the page, not to a payload no page shows."""
    assert kernel.execute("%load_ext agentik_jupyter").ok
    assert ask(kernel, {"action": "live_cells"}) is not None  # a page connected
    assert kernel.execute(START_INSERT_NO_PAGE).ok
    first = nth_request(kernel, 0)
    kernel.drain(REPLY_TIMEOUT_S + 1.0)  # the page is busy: its standby comes late
    second = named_after_standby(kernel, "page-a", first)
    kernel.drain(FALLBACK_S + 1.0)  # and its answer too
    inserts(kernel, "page-a", second)


def test_a_page_that_connects_while_a_request_waits_gets_a_pages_patience(kernel: RawKernel) -> None:
    """The page opened just before the turn: its control request on connecting reaches the kernel
    after the notebook request went out, and on a loaded machine its standby comes seconds later.
    The request waits for it as for a page from the moment the page spoke."""
    assert kernel.execute("%load_ext agentik_jupyter").ok
    assert kernel.execute(START_INSERT_NO_PAGE).ok
    first = nth_request(kernel, 0)
    kernel.drain(1.0)
    assert ask(kernel, {"action": "live_cells"}) is not None  # the page connects now
    kernel.drain(REPLY_TIMEOUT_S)  # and stands by late
    second = named_after_standby(kernel, "page-a", first)
    inserts(kernel, "page-a", second)


def test_a_console_closing_the_request_does_not_end_the_wait_for_a_page(kernel: RawKernel) -> None:
    """A console on the notebook's kernel has no `agentik.notebook` target and closes the request's
    comm at once; a page with the extension that spoke here may still answer, late on a loaded machine."""
    assert kernel.execute("%load_ext agentik_jupyter").ok
    assert ask(kernel, {"action": "live_cells"}) is not None  # a page connected
    assert kernel.execute(START_INSERT_NO_PAGE).ok
    first = nth_request(kernel, 0)
    kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_close", {"comm_id": first["comm_id"], "data": {}}))
    kernel.drain(CLOSED_GRACE_S + 1.5)
    second = named_after_standby(kernel, "page-a", first)
    inserts(kernel, "page-a", second)
