"""The Jupyter Server extension's routes, against a real server and the fake LLM over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from agentik_jupyter.persistence import SessionDB
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY
from agentik_jupyter.types import ChatMessage, UserMessage
from tests.jupyter_servers import RunningServer, jupyter, server_fixtures

pytestmark = pytest.mark.timeout(180)


llm, server = server_fixtures()


def post(server: RunningServer, body: object, token: str | None = "default") -> httpx2.Response:
    headers = {"Authorization": f"token {server.token if token == 'default' else token}"} if token else {}
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx2.post(f"{server.url}/agentik/api/chat", content=data, headers=headers, timeout=30)


def test_chat_answers_content_and_tool_calls(server: RunningServer, llm: FakeLLMServer) -> None:
    llm.push(Reply.text("Forty-two."))
    r = post(server, {"messages": [{"role": "user", "content": "meaning?"}]})
    assert r.status_code == 200, r.text
    assert r.json() == {"content": "Forty-two."}
    llm.push(Reply.tool_calls([{"name": "list_variables", "args": {}}]))
    tools = [{"name": "list_variables", "description": "List", "parameters": []}]
    r = post(
        server,
        {
            "messages": [{"role": "user", "content": "vars?"}],
            "tools": tools,
            "context": {"notebook_path": "/w/a.ipynb"},
        },
    )
    assert r.status_code == 200
    calls = r.json()["toolCalls"]
    assert [c["name"] for c in calls] == ["list_variables"] and calls[0]["args"] == {}
    sent = llm.last_request
    assert sent is not None and sent.body["tools"][0]["function"]["name"] == "list_variables"
    assert "Notebook: a.ipynb" in json.dumps(sent.body["messages"][0])  # the system prompt names the notebook


@pytest.mark.parametrize("body", [b"not json", {"messages": []}, {"messages": [{"role": "robot", "content": "x"}]}, {}])
def test_invalid_body_is_400(server: RunningServer, body: object) -> None:
    r = post(server, body)
    assert r.status_code == 400
    assert r.json()["error"] == "Invalid request body" and r.json()["message"]


def test_auth_is_required(server: RunningServer) -> None:
    r = post(server, {"messages": [{"role": "user", "content": "x"}]}, token=None)
    assert r.status_code == 403
    r = post(server, {"messages": [{"role": "user", "content": "x"}]}, token="wrong")
    assert r.status_code == 403


def test_provider_error_is_502_without_the_key(server: RunningServer, llm: FakeLLMServer) -> None:
    llm.push(Reply.fault("401"))
    r = post(server, {"messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 502
    body = r.json()
    assert body["error"] == "LLM provider error" and body["code"] == "authentication"
    assert FAKE_API_KEY not in r.text and "LLM_API_KEY" in body["message"]


def test_missing_configuration_is_502(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    with jupyter(tmp_path / "r", tmp_path / "h", env={"LLM_PROVIDER": ""}) as s:
        r = post(s, {"messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 502
    assert r.json()["error"] == "Missing configuration" and "LLM_PROVIDER" in r.json()["message"]


def test_sessions_api_lists_and_pages_history(server: RunningServer) -> None:
    nb = server.root / "analysis.ipynb"
    nb.write_text("{}")
    with SessionDB(server.root / "analysis.agentik.db") as db:
        conv = db.create_conversation()
        turn = db.begin_turn(conv.id, UserMessage(content="hello"))
        db.commit_turn(
            conv.id, turn, [ChatMessage(role="user", content="hello"), ChatMessage(role="assistant", content="hi")]
        )
    headers = {"Authorization": f"token {server.token}"}
    r = httpx2.get(f"{server.url}/agentik/api/sessions", params={"path": "analysis.ipynb"}, headers=headers)
    assert r.status_code == 200 and [s["id"] for s in r.json()["sessions"]] == [conv.id]
    r = httpx2.get(f"{server.url}/agentik/api/sessions/{conv.id}", params={"path": "analysis.ipynb"}, headers=headers)
    assert r.status_code == 200 and [e["record"]["kind"] for e in r.json()["entries"]] == ["user"]
    r = httpx2.get(f"{server.url}/agentik/api/sessions", params={"path": "../etc.ipynb"}, headers=headers)
    assert r.status_code == 400
    r = httpx2.get(f"{server.url}/agentik/api/sessions", params={"path": "none.ipynb"}, headers=headers)
    assert r.json()["sessions"] == [] and r.json()["total"] == 0


async def test_a_turn_through_the_server_transport(server: RunningServer, llm: FakeLLMServer) -> None:
    from agentik_jupyter.core.session import Session
    from agentik_jupyter.core.transport import ServerTransport
    from agentik_jupyter.tools.registry import ToolRegistry, tool

    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    def row_count(table: str) -> int:
        """Rows in a table."""
        return 42

    llm.push(Reply.tool_calls([{"name": "row_count", "args": {"table": "sales"}}]), Reply.text("It has 42 rows."))
    session = Session(ServerTransport(server.url, server.token), reg, temporary=True)
    outcome = await session.send("How many rows?")
    assert outcome.reason == "complete" and session.chat_store.messages[-1].content == "It has 42 rows."
    sent = llm.requests[-1].body
    assert sent["tools"][0]["function"]["name"] == "row_count"
    assert any(m.get("role") == "tool" and m.get("content") == "42" for m in sent["messages"])
    llm.push(Reply.fault("401"))
    failed = await session.send("again")
    assert failed.reason == "error" and "401" in (failed.error or "") and FAKE_API_KEY not in (failed.error or "")
    bad = Session(ServerTransport(server.url, "wrong-token"), reg, temporary=True)
    denied = await bad.send("hi")
    assert denied.reason == "error" and "refused the agent's request (403)" in (denied.error or "")
