"""The public FakeLLMServer, its fixtures and its command line, as a user would drive them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from agentik_jupyter.providers.base import ChatParams, collect
from agentik_jupyter.providers.config import load_config, make_adapter
from agentik_jupyter.testing import FakeLLMServer, RecordedRequest, Reply
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY, PROVIDERS
from agentik_jupyter.types import ChatMessage


def ask(text: str) -> ChatParams:
    return ChatParams(model="fake-model", messages=[ChatMessage(role="user", content=text)])


@pytest.mark.parametrize("llm_provider", PROVIDERS)
async def test_llm_env_points_the_agent_config_at_the_server(
    llm_env: dict[str, str], fake_llm: FakeLLMServer, llm_provider: str
) -> None:
    config = load_config()
    assert config.provider == llm_provider and config.api_key.get_secret_value() == FAKE_API_KEY
    adapter = make_adapter(config)
    response = await collect(adapter.stream(ask("what is 2+2?")))
    await adapter.aclose()
    assert response.content == "Echo: what is 2+2?"
    assert fake_llm.last_request is not None and fake_llm.last_request.api == (
        "anthropic" if llm_provider == "anthropic" else "openai"
    )


async def test_queue_then_responder_then_echo(fake_llm: FakeLLMServer) -> None:
    fake_llm.push("first", Reply.text("second", chunks=2))
    adapter = make_adapter(load_config(fake_llm.env()))
    answers = [(await adapter.chat(ask("q"))).content for _ in range(2)]
    fake_llm.set_responder(lambda request: f"you said {request.last_user_text()!r}")
    answers.append((await adapter.chat(ask("hey"))).content)
    fake_llm.set_responder(None)
    answers.append((await adapter.chat(ask("back"))).content)
    await adapter.aclose()
    assert answers == ["first", "second", "you said 'hey'", "Echo: back"]
    assert fake_llm.pending == 0 and len(fake_llm.requests) == 4
    fake_llm.clear()
    assert fake_llm.requests == []


def test_text_streams_in_the_requested_chunks(fake_llm: FakeLLMServer) -> None:
    """On the wire: one event per chunk (the adapter may join what it reads together)."""
    fake_llm.push(Reply.text("abcdefghij", chunks=5))
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "q"}]}
    with httpx2.stream("POST", f"{fake_llm.base_url}/chat/completions", json=body) as response:
        events = [e.json() for e in httpx2.EventSource(response) if e.data != "[DONE]"]
    pieces = [c["choices"][0]["delta"].get("content") for c in events if c["choices"]]
    assert [p for p in pieces if p] == ["ab", "cd", "ef", "gh", "ij"]


def test_raw_http_routes_and_recording() -> None:
    with FakeLLMServer() as srv:
        with httpx2.Client() as client:
            models = client.get(f"{srv.base_url}/models").json()
            missing = client.post(f"{srv.url}/v2/other", json={})
            not_json = client.post(f"{srv.base_url}/chat/completions", content=b"nope")
            ok = client.post(f"{srv.base_url}/chat/completions", json={"model": "x", "messages": []})
    assert models["data"][0]["id"] == "fake-model"
    assert missing.status_code == 404 and "No route" in missing.json()["error"]["message"]
    assert not_json.status_code == 400
    assert ok.json()["choices"][0]["message"]["content"] == "Echo: "
    recorded = srv.requests
    assert [r.api for r in recorded] == ["other", "openai", "openai"]
    assert isinstance(recorded[-1], RecordedRequest) and recorded[-1].body == {"model": "x", "messages": []}
    assert recorded[-1].headers["content-type"] == "application/json"


def test_fault_names_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        Reply.fault("418")
    assert Reply.fault(429).fault_kind == "429"


def test_replies_from_a_script() -> None:
    replies = [
        Reply.from_dict({"text": "hi", "chunks": 2}),
        Reply.from_dict({"tool_calls": [{"name": "f", "args": {"a": 1}}], "text": "calling"}),
        Reply.from_dict({"fault": "429", "retry_after": 1}),
    ]
    assert replies[0] == Reply.text("hi", chunks=2)
    assert replies[1].calls[0].name == "f" and replies[1].content == "calling"
    assert replies[2].fault_kind == "429" and replies[2].retry_after == 1


def test_runs_as_a_separate_process(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "scripted answer"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentik_jupyter.testing.fake_server", "--port", "0", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("LLM_BASE_URL=http://127.0.0.1:")
        base_url = line.split("=", 1)[1]
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        answer = httpx2.post(f"{base_url}/chat/completions", json=body, timeout=10).json()
        assert answer["choices"][0]["message"]["content"] == "scripted answer"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
