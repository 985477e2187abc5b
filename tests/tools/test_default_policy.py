"""A user's `@tool` asks before it runs unless it says `policy="auto"`.

A tool that sends mail, written without a policy, must show an approval card (and be
denied under `AGENTIK_APPROVE=deny`) instead of running unseen; the same tool marked
`policy="auto"` runs at once. Real kernels, the fake LLM server over HTTP.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.tools.registry import ToolRegistry, tool
from agentik_jupyter.types import ToolDefinition
from tests.kernel_support import NotebookKernel, RawKernel, kernel_env, transcript

pytestmark = pytest.mark.timeout(120)

ADDRESS = "boss@example.com"


def send_mail_cell(policy: str | None) -> str:
    """A notebook cell defining a mail-sending tool, with or without `policy=`."""
    decorator = "@tool" if policy is None else f"@tool(policy={policy!r})"
    return f'''
from agentik_jupyter import tool
sent = []

{decorator}
def send_mail(to: str, body: str) -> str:
    """Send an email."""
    sent.append(to)
    return f"sent to {{to}}"
'''


CALL = Reply.tool_calls([{"name": "send_mail", "args": {"to": ADDRESS, "body": "I quit"}}])


def _tool_messages(server: FakeLLMServer) -> list[str]:
    request = server.last_request
    assert request is not None
    return [str(m.get("content")) for m in request.messages if m.get("role") == "tool"]


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


def test_a_tool_without_a_policy_shows_an_approval_card_and_does_not_run_when_denied(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.push(CALL, Reply.text("I did not send it."))
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "a.db")), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text(send_mail_cell(None))
            assert "send_mail" in kernel.text("%agent tools") and "ask" in kernel.text("%agent tools")
            assert kernel.execute("%%agent\nTell my boss.").ok
            deny = _button(kernel, "Deny")
            cards = [
                m
                for m in kernel.iopub
                if m["msg_type"] == "comm_open"
                and ADDRESS in str(m["content"]["data"].get("state", {}).get("value", ""))
            ]
            assert cards, "the approval card shows the call's arguments"
            assert kernel.value("sent") == []  # waiting for the user: nothing sent
            kernel.click(deny)
            s = "__import__('agentik_jupyter').current_session()"
            kernel.wait_until(f"not {s}.busy", timeout=15)
            assert kernel.value("sent") == []
            assert "did not approve" in _tool_messages(server)[-1]
        finally:
            kernel.close()


def test_a_tool_without_a_policy_is_denied_under_approve_deny(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.push(CALL, Reply.text("I did not send it."))
        kernel = NotebookKernel(
            kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "d.db"), AGENTIK_APPROVE="deny"), tmp_path
        )
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(send_mail_cell(None))
            cell = kernel.run("%%agent --wait\nTell my boss.")
            assert "I did not send it." in transcript(cell.outputs)["text/plain"]
            assert kernel.text("print(sent)").strip() == "[]"
        finally:
            kernel.close()
    assert "did not approve" in _tool_messages(server)[-1]


def test_a_tool_marked_auto_runs_without_a_card(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.push(CALL, Reply.text("Sent."))
        kernel = NotebookKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "r.db")), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(send_mail_cell("auto"))
            kernel.run("%%agent --wait\nTell my boss.")
            assert kernel.text("print(sent)").strip() == repr([ADDRESS])
        finally:
            kernel.close()
    assert _tool_messages(server)[-1] == f"sent to {ADDRESS}"


def test_register_and_the_decorator_default_to_ask_and_keep_an_explicit_policy() -> None:
    registry = ToolRegistry()

    def mail(to: str) -> str:
        return to

    tool(registry=registry)(mail)
    tool(name="lookup", policy="auto", registry=registry)(mail)
    registry.register(ToolDefinition(name="raw", execute=mail))
    registry.register("raw_auto", ToolDefinition(name="raw_auto", execute=mail, policy="auto"))
    policies: dict[str, Any] = {d.name: d.policy for d in registry.get_all()}
    assert policies == {"mail": "ask", "lookup": "auto", "raw": "ask", "raw_auto": "auto"}
