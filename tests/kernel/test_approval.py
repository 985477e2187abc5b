"""Approval in a real kernel: the card's buttons are comm messages the kernel handles while
the turn waits, in background mode and inside a `--wait` cell's top-level await."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import RawKernel, kernel_env, transcript

pytestmark = pytest.mark.timeout(120)
CODE = "agent_ran = sum(range(10))\nprint(agent_ran)"


def _button(kernel: RawKernel, description: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kernel.drain(0.05)
        found = [
            m["content"]["comm_id"]
            for m in kernel.comm_opens("ButtonModel")
            if m["content"]["data"].get("state", {}).get("description") == description
        ]
        if found:
            return found[-1]
    raise TimeoutError(f"no {description!r} button appeared")


def _tool_messages(server: FakeLLMServer) -> list[Any]:
    request = server.last_request
    assert request is not None
    return [m for m in request.messages if m.get("role") == "tool"]


@pytest.fixture
def env_server() -> Any:
    with FakeLLMServer() as server:
        yield server


def test_approve_inside_a_wait_cell(env_server: FakeLLMServer, tmp_path: Path) -> None:
    server = env_server
    server.push(Reply.tool_calls([{"name": "run_code", "args": {"code": CODE}}]), Reply.text("The sum is 45."))
    kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "a.db")), tmp_path)
    try:
        kernel.text("%load_ext agentik_jupyter")
        pending = kernel.submit("%%agent --wait\nAdd the numbers up.")
        approve = _button(kernel, "Approve")
        cards = [
            m
            for m in kernel.iopub
            if m["msg_type"] == "comm_open" and CODE in str(m["content"]["data"].get("state", {}).get("value", ""))
        ]
        assert cards, "the approval card shows the exact code"
        kernel.click(approve)
        ex = kernel.collect(pending, timeout=30)
        assert ex.ok, ex.text
        text = transcript(ex.outputs)["text/plain"]
        assert "run_code" in text and "45" in text and "The sum is 45." in text
        assert "45" in _tool_messages(server)[-1]["content"]
        assert kernel.value("agent_ran") == 45  # it ran in the user's namespace
    finally:
        kernel.close()


def test_deny_in_background_turn_goes_back_to_the_model(env_server: FakeLLMServer, tmp_path: Path) -> None:
    server = env_server
    server.push(
        Reply.tool_calls([{"name": "run_code", "args": {"code": CODE}}]), Reply.text("Fine, I will not run it.")
    )
    kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "d.db")), tmp_path)
    try:
        kernel.text("%load_ext agentik_jupyter")
        ex = kernel.execute("%%agent\nAdd the numbers up.")
        assert ex.ok
        deny = _button(kernel, "Deny")
        assert kernel.value("1 + 1") == 2  # the kernel runs other cells while the approval waits
        kernel.click(deny)
        s = "__import__('agentik_jupyter').current_session()"
        kernel.wait_until(f"not {s}.busy", timeout=15)
        answer = kernel.value(f"{s}.chat_store.messages[-1].content")
        assert answer == "Fine, I will not run it."
        denial = _tool_messages(server)[-1]["content"]
        assert "did not approve" in denial
        assert kernel.value("'agent_ran' in globals()") is False  # the code never ran
        # The finished background turn replaced its live view in place with the transcript,
        # so the notebook the frontend saves keeps the conversation.
        live_id = next(
            m["content"]["transient"]["display_id"]
            for m in ex.messages
            if m["msg_type"] == "display_data" and "transient" in m["content"]
        )
        kernel.drain(0.3)
        updates = [
            m["content"]
            for m in kernel.iopub
            if m["msg_type"] == "update_display_data" and m["content"]["transient"]["display_id"] == live_id
        ]
        assert updates, "the live view was not replaced by the transcript"
        final = updates[-1]["data"]
        assert "Fine, I will not run it." in final["text/plain"]
        assert final["application/vnd.agentik.transcript+json"]["status"] == "complete"
    finally:
        kernel.close()
