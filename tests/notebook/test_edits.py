"""edit_cell / delete_cell in a real kernel, with this test playing the notebook extension.

The kernel asks on ``agentik.notebook``; the extension answers on ``agentik.notebook.reply``
(``shown`` when the diff is on the cell, then the user's decision). The model is driven by
the fake LLM server, so each test checks what the model is told.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.notebook.edits import ReadLedger, diff_html, unified_diff
from agentik_jupyter.notebook.requests import REPLY_TARGET, REQUEST_TARGET
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import RawKernel, kernel_env, wait_for

pytestmark = pytest.mark.timeout(120)

LIVE_CELLS = [
    {
        "id": "c-load",
        "cell_type": "code",
        "source": "total = price * 2  # unsaved edit",
        "execution_count": 1,
        "outputs": [
            {"output_type": "error", "ename": "NameError", "evalue": "name 'price' is not defined", "traceback": []}
        ],
    },
    {"id": "c-note", "cell_type": "markdown", "source": "# Notes", "outputs": []},
]


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def kernel(llm: FakeLLMServer, tmp_path: Path) -> Iterator[RawKernel]:
    k = RawKernel(kernel_env(llm, AGENTIK_APPROVAL_TIMEOUT="20"), tmp_path)
    try:
        assert k.execute("%load_ext agentik_jupyter").ok
        yield k
    finally:
        k.close()


def requests(k: RawKernel) -> list[dict[str, Any]]:
    k.drain(0.05)
    return [m["content"] for m in k.comm_opens() if m["content"]["target_name"] == REQUEST_TARGET]


def next_request(k: RawKernel, seen: int, timeout: float = 15.0) -> dict[str, Any]:
    return wait_for(lambda: (requests(k)[seen:] or [None])[0], timeout, f"request #{seen + 1} to the notebook")


def reply(k: RawKernel, request: dict[str, Any], **data: Any) -> None:
    """What the extension does: open a reply comm carrying the request id, and close it."""
    comm_id = f"reply-{time.monotonic_ns()}"
    content = {
        "comm_id": comm_id,
        "target_name": REPLY_TARGET,
        "data": {"request_id": request["data"]["request_id"], **data},
    }
    k.kc.shell_channel.send(k.kc.session.msg("comm_open", content))
    k.kc.shell_channel.send(k.kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}}))


def tool_texts(llm: FakeLLMServer) -> list[str]:
    """The tool results the model was sent in its last request."""
    last = llm.requests[-1].messages
    return [m["content"] for m in last if m.get("role") == "tool"]


def run_turn(k: RawKernel, llm: FakeLLMServer, *calls: dict[str, Any]) -> None:
    llm.push(*[Reply.tool_calls([c]) for c in calls], Reply.text("Done."))
    assert k.execute("%%agent\nFix the first cell.").ok


def finish(k: RawKernel, llm: FakeLLMServer, requests_expected: int) -> None:
    wait_for(
        lambda: (
            len(llm.requests) >= requests_expected
            and k.value(
                "__import__('agentik_jupyter.kernel.agent', fromlist=['x']).get_agent(get_ipython()).session.busy"
            )
            is False
        ),
        30,
        "the turn to end",
    )


def test_the_model_reads_the_live_document_and_a_rejected_edit_changes_nothing(
    kernel: RawKernel, llm: FakeLLMServer
) -> None:
    run_turn(
        kernel,
        llm,
        {"name": "read_notebook", "args": {}},
        {"name": "edit_cell", "args": {"cell_id": "c-load", "new_source": "price = 3\ntotal = price * 2"}},
    )
    read = next_request(kernel, 0)
    assert read["data"]["action"] == "read"
    reply(kernel, read, phase="result", status="ok", path="analysis.ipynb", cells=LIVE_CELLS)
    edit = next_request(kernel, 1)
    assert edit["data"]["action"] == "edit_cell" and edit["data"]["cell_id"] == "c-load"
    assert edit["data"]["expected_source"] == LIVE_CELLS[0]["source"]  # the version check starts from what was read
    assert edit["data"]["new_source"] == "price = 3\ntotal = price * 2"
    reply(kernel, edit, phase="shown")
    time.sleep(0.3)
    assert len(llm.requests) == 2  # the model waits for the user's decision
    reply(kernel, edit, phase="result", status="rejected")
    finish(kernel, llm, 3)
    read_text, edit_text = tool_texts(llm)
    assert "live document in the editor (includes unsaved edits)" in read_text and "# unsaved edit" in read_text
    assert "error NameError" in read_text
    assert "rejected the edit" in edit_text and "unchanged" in edit_text


def test_an_unread_cell_is_refused_and_a_stale_edit_is_reported(kernel: RawKernel, llm: FakeLLMServer) -> None:
    run_turn(
        kernel,
        llm,
        {"name": "edit_cell", "args": {"cell_id": "c-load", "new_source": "x = 1"}},
        {"name": "read_notebook", "args": {"cell_id": "c-load"}},
        {"name": "edit_cell", "args": {"cell_id": "c-load", "new_source": "x = 1"}},
    )
    read = next_request(kernel, 0)
    assert read["data"]["action"] == "read"  # the unread edit never reached the notebook
    reply(kernel, read, phase="result", status="ok", path="analysis.ipynb", cells=LIVE_CELLS)
    edit = next_request(kernel, 1)
    reply(kernel, edit, phase="result", status="stale")  # the user typed in the cell meanwhile
    finish(kernel, llm, 4)
    unread, _read, stale = tool_texts(llm)
    assert "read cell 'c-load' with read_notebook before proposing" in unread
    assert "changed since you read it" in stale


def test_accept_and_run_is_reported_and_delete_asks_too(kernel: RawKernel, llm: FakeLLMServer) -> None:
    run_turn(
        kernel,
        llm,
        {"name": "read_notebook", "args": {}},
        {"name": "edit_cell", "args": {"cell_id": "c-load", "new_source": "price = 3\ntotal = price * 2"}},
        {"name": "delete_cell", "args": {"cell_id": "c-note"}},
    )
    reply(kernel, next_request(kernel, 0), phase="result", status="ok", path="a.ipynb", cells=LIVE_CELLS)
    edit = next_request(kernel, 1)
    reply(kernel, edit, phase="shown")
    reply(
        kernel,
        edit,
        phase="result",
        status="accepted_and_run",
        ran_ok=True,
        outputs=[{"output_type": "stream", "name": "stdout", "text": "TOTAL 6\n"}],
    )
    reply(kernel, next_request(kernel, 2), phase="result", status="ok", path="a.ipynb", cells=LIVE_CELLS)
    delete = next_request(kernel, 3)
    assert delete["data"]["action"] == "delete_cell" and delete["data"]["new_source"] == ""
    reply(kernel, delete, phase="shown")
    reply(kernel, delete, phase="result", status="accepted")
    finish(kernel, llm, 4)
    _, ran, deleted = tool_texts(llm)
    assert "accepted the edit and ran cell c-load: it ran without an error" in ran and "stdout: TOTAL 6" in ran
    assert "No later cell uses what it defines" in ran
    assert "cell c-note was deleted" in deleted


def test_without_the_extension_the_diff_goes_to_the_card_and_nothing_is_applied(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    notebook = tmp_path / "saved.ipynb"
    notebook.write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "id": "c1",
                        "cell_type": "code",
                        "source": "a = 1",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": None,
                    }
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    before = notebook.read_bytes()
    k = RawKernel(kernel_env(llm, JPY_SESSION_NAME=str(notebook)), tmp_path)
    try:
        assert k.execute("%load_ext agentik_jupyter").ok
        llm.push(
            Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
            Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": "c1", "new_source": "a = 2"}}]),
            Reply.text("Done."),
        )
        assert k.execute("%%agent --wait\nChange a to 2.", timeout=60).ok
    finally:
        k.close()
    read_text, edit_text = tool_texts(llm)
    assert "saved version on disk, may be stale" in read_text
    assert "Not applied" in edit_text and "-a = 1" in edit_text and "+a = 2" in edit_text
    assert notebook.read_bytes() == before


def test_diff_rendering_is_escaped_and_ledger_tracks_reads() -> None:
    diff = unified_diff("x = '<b>'\n", "x = '<i>'\n", "c")
    assert "-x = '<b>'" in diff and "+x = '<i>'" in diff
    assert "<b>'" not in diff_html(diff) and "&lt;b&gt;" in diff_html(diff)
    assert ReadLedger().sources == {}


AFTER_FIX = [
    {"id": "c-load", "cell_type": "code", "source": "price = 3\ntotal = price * 2", "outputs": []},
    {"id": "c-other", "cell_type": "code", "source": "unrelated = 5", "outputs": []},
    {"id": "c-use", "cell_type": "code", "source": "double = total * 2\nprint(double)", "outputs": []},
    {"id": "c-ask", "cell_type": "code", "source": "%%agent\nExplain total", "outputs": []},
    {"id": "c-chain", "cell_type": "code", "source": "print('DOUBLE', double)", "outputs": []},
    {"id": "c-magic", "cell_type": "code", "source": "%matplotlib inline\nprint(total)", "outputs": []},
    {"id": "c-time", "cell_type": "code", "source": "%time print(total)", "outputs": []},
    {"id": "c-cd", "cell_type": "code", "source": "%cd /tmp", "outputs": []},
    {"id": "c-md", "cell_type": "markdown", "source": "total is shown above", "outputs": []},
]


def _fix_and_run(tmp_path: Path, llm: FakeLLMServer, approve: str) -> tuple[RawKernel, dict[str, Any]]:
    k = RawKernel(kernel_env(llm, AGENTIK_APPROVE=approve, AGENTIK_APPROVAL_TIMEOUT="20"), tmp_path)
    assert k.execute("%load_ext agentik_jupyter").ok
    run_turn(
        k,
        llm,
        {"name": "read_notebook", "args": {}},
        {"name": "edit_cell", "args": {"cell_id": "c-load", "new_source": AFTER_FIX[0]["source"]}},
    )
    reply(k, next_request(k, 0), phase="result", status="ok", path="a.ipynb", cells=LIVE_CELLS)
    edit = next_request(k, 1)
    reply(k, edit, phase="shown")
    reply(
        k,
        edit,
        phase="result",
        status="accepted_and_run",
        ran_ok=True,
        outputs=[{"output_type": "stream", "name": "stdout", "text": "fixed\n"}],
    )
    again = next_request(k, 2)  # the kernel reads the notebook again to find the cells after the fix
    assert again["data"]["action"] == "read"
    reply(k, again, phase="result", status="ok", path="a.ipynb", cells=AFTER_FIX)
    return k, again


def test_after_accept_and_run_the_dependent_cells_are_rerun_in_order_and_reported(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    k, _ = _fix_and_run(tmp_path, llm, "auto")
    try:
        rerun = next_request(k, 3)
        assert rerun["data"]["action"] == "run_cells"
        # uses `total` directly, uses `double` (from a dependent cell), a cell with a magic line, the code
        # `%time` runs; never the unrelated cell, the %%agent cell, a magic on other things, or Markdown
        assert rerun["data"]["cell_ids"] == ["c-use", "c-chain", "c-magic", "c-time"]
        reply(
            k,
            rerun,
            phase="result",
            status="ok",
            cells=[
                {
                    "cell_id": "c-use",
                    "status": "ok",
                    "outputs": [{"output_type": "stream", "name": "stdout", "text": "12\n"}],
                },
                {
                    "cell_id": "c-chain",
                    "status": "failed",
                    "outputs": [
                        {"output_type": "error", "ename": "TypeError", "evalue": "bad operand", "traceback": []}
                    ],
                },
            ],
        )
        finish(k, llm, 3)
    finally:
        k.close()
    _, edit_text = tool_texts(llm)
    assert "it ran without an error" in edit_text and "stdout: fixed" in edit_text
    assert "Later cells that use what it defines (total): c-use, c-chain, c-magic, c-time." in edit_text
    assert "- cell c-use: ran without an error\n    -> stdout: 12" in edit_text
    assert "- cell c-chain: it fails\n    -> error TypeError: bad operand" in edit_text
    assert "the other 2 cell(s) were not run" in edit_text


def test_dependent_cells_are_not_rerun_without_approval(tmp_path: Path, llm: FakeLLMServer) -> None:
    k, _ = _fix_and_run(tmp_path, llm, "deny")
    try:
        finish(k, llm, 3)
        assert [r["data"]["action"] for r in requests(k)] == ["read", "edit_cell", "read"]  # no run_cells
    finally:
        k.close()
    _, edit_text = tool_texts(llm)
    assert "did not approve re-running them" in edit_text and "c-use, c-chain, c-magic, c-time" in edit_text
