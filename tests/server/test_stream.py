"""The chat route as Server-Sent Events, against a real Jupyter server and the fake LLM over HTTP:
several deltas before `end`, a client that hangs up stops the provider request, and the
server transport streams a turn with the key only in the server's environment."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY
from tests.jupyter_servers import RunningServer, jupyter_for

pytestmark = pytest.mark.timeout(180)

CHUNK_DELAY = 0.05
LONG_ANSWER = " ".join(f"word{i}" for i in range(400))  # ~20 s at CHUNK_DELAY a word


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(chunk_delay=CHUNK_DELAY) as server:
        yield server


@pytest.fixture(scope="module")
def server(llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with jupyter_for(llm, tmp_path_factory) as running:
        yield running


def sse_headers(server: RunningServer) -> dict[str, str]:
    return {"Authorization": f"token {server.token}", "Accept": "text/event-stream"}


def read_events(lines: Iterator[str], stop: int | None = None) -> list[tuple[int, str, dict[str, Any]]]:
    """(id, event, data) for each SSE frame; after `stop` events, stop reading."""
    events: list[tuple[int, str, dict[str, Any]]] = []
    frame: dict[str, str] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            frame[name] = value.lstrip(" ")
            continue
        if "data" in frame:
            events.append((int(frame["id"]), frame["event"], json.loads(frame["data"])))
            if stop is not None and len(events) >= stop:
                break
        frame = {}
    return events


def chat_stream(server: RunningServer, body: dict[str, Any]) -> list[tuple[int, str, dict[str, Any]]]:
    with httpx2.stream(
        "POST", f"{server.url}/agentik/api/chat", json=body, headers=sse_headers(server), timeout=60
    ) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        return read_events(r.iter_lines())


def test_sse_chat_streams_deltas_then_end(server: RunningServer, llm: FakeLLMServer) -> None:
    answer = "one two three four five six"
    llm.push(Reply.text(answer))
    events = chat_stream(server, {"messages": [{"role": "user", "content": "count"}]})
    kinds = [kind for _, kind, _ in events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    deltas = [data["text"] for _, kind, data in events if kind == "delta"]
    assert len(deltas) >= 3 and "".join(deltas) == answer
    assert kinds.index("end") > max(i for i, k in enumerate(kinds) if k == "delta")
    ids = [event_id for event_id, _, _ in events]
    assert ids == list(range(1, len(ids) + 1))
    assert all(data["type"] == kind for _, kind, data in events)
    assert events[-1][2]["content"] == answer and events[-1][2]["toolCalls"] == []
    assert "usage" in kinds
    assert FAKE_API_KEY not in json.dumps([data for _, _, data in events])


def test_sse_tool_calls_and_camel_case_tool_calls_in_request(server: RunningServer, llm: FakeLLMServer) -> None:
    llm.push(Reply.tool_calls([{"name": "row_count", "args": {"table": "sales"}}]))
    tools = [
        {
            "name": "row_count",
            "description": "Rows",
            "parameters": [{"key": "table", "type": "string", "required": True, "description": "t"}],
        }
    ]
    history = [
        {"role": "user", "content": "rows?"},
        {"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "row_count", "args": {"table": "a"}}]},
        {"role": "tool", "tool_result": {"tool_call_id": "c1", "name": "row_count", "result": 42}},
        {"role": "user", "content": "and sales?"},
    ]
    events = chat_stream(server, {"messages": history, "tools": tools})
    calls = [data for _, kind, data in events if kind == "tool_call"]
    assert [(c["name"], c["args"]) for c in calls] == [("row_count", {"table": "sales"})]
    assert events[-1][1] == "end" and events[-1][2]["toolCalls"][0]["name"] == "row_count"
    sent = llm.last_request
    assert sent is not None
    assistant = [m for m in sent.body["messages"] if m["role"] == "assistant"]
    assert assistant[0]["tool_calls"][0]["function"]["name"] == "row_count"  # toolCalls reached the provider
    llm.push(Reply.text("fine"))
    r = httpx2.post(
        f"{server.url}/agentik/api/chat",
        json={"messages": history},
        headers={"Authorization": f"token {server.token}"},
        timeout=30,
    )
    assert r.status_code == 200 and r.json() == {"content": "fine"}  # JSON stays the default


def test_sse_provider_error_is_the_last_event_without_the_key(server: RunningServer, llm: FakeLLMServer) -> None:
    llm.push(Reply.fault("401"))
    events = chat_stream(server, {"messages": [{"role": "user", "content": "x"}]})
    assert [kind for _, kind, _ in events] == ["start", "error"]
    error = events[-1][2]
    assert error["error"] == "LLM provider error" and error["code"] == "authentication"
    assert FAKE_API_KEY not in json.dumps(error)


def test_sse_invalid_body_is_a_plain_400(server: RunningServer) -> None:
    r = httpx2.post(f"{server.url}/agentik/api/chat", json={"messages": []}, headers=sse_headers(server))
    assert r.status_code == 400 and r.json()["error"] == "Invalid request body"


def test_client_hang_up_cancels_the_provider_request(server: RunningServer, llm: FakeLLMServer) -> None:
    llm.push(Reply.text(LONG_ANSWER))
    before = len(llm.hangups)
    with httpx2.stream(
        "POST",
        f"{server.url}/agentik/api/chat",
        headers=sse_headers(server),
        timeout=60,
        json={"messages": [{"role": "user", "content": "Write a long essay."}]},
    ) as r:
        events = read_events(r.iter_lines(), stop=4)
    closed = time.monotonic()
    assert [kind for _, kind, _ in events][:1] == ["start"] and events[-1][1] == "delta"
    while len(llm.hangups) == before:
        assert time.monotonic() - closed < 3, "the provider request was still open 3 s after the client left"
        time.sleep(0.02)
    assert llm.hangups[-1].last_user_text() == "Write a long essay."
    assert time.monotonic() - closed < 2  # a few chunk delays, not the ~20 s the answer would take


async def test_server_transport_streams_deltas_and_stops(server: RunningServer, llm: FakeLLMServer) -> None:
    import asyncio

    from agentik_jupyter.core.transport import ServerTransport
    from agentik_jupyter.providers.base import StreamDone, TextDelta
    from agentik_jupyter.types import ChatMessage

    transport = ServerTransport(server.url, server.token)
    llm.push(Reply.text("alpha beta gamma delta"))
    deltas = [d async for d in transport.stream([ChatMessage(role="user", content="hi")], None, [])]
    texts = [d.text for d in deltas if isinstance(d, TextDelta)]
    assert len(texts) >= 3 and "".join(texts) == "alpha beta gamma delta"
    assert isinstance(deltas[-1], StreamDone) and deltas[-1].response.content == "alpha beta gamma delta"

    llm.push(Reply.text(LONG_ANSWER))
    before = len(llm.hangups)
    seen: list[str] = []

    async def read() -> None:
        async for delta in transport.stream([ChatMessage(role="user", content="long")], None, []):
            if isinstance(delta, TextDelta):
                seen.append(delta.text)

    task = asyncio.ensure_future(read())
    while len(seen) < 3:
        await asyncio.sleep(0.02)
    task.cancel()  # what Stop does to the turn's task
    stopped = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    while len(llm.hangups) == before:
        assert time.monotonic() - stopped < 3, "the server kept the provider request open after Stop"
        await asyncio.sleep(0.02)


async def test_server_transport_reports_provider_errors(server: RunningServer, llm: FakeLLMServer) -> None:
    from agentik_jupyter.core.transport import ServerTransport
    from agentik_jupyter.errors import ProviderError
    from agentik_jupyter.types import ChatMessage

    llm.push(Reply.fault("429"), Reply.fault("429"), Reply.fault("429"))
    with pytest.raises(ProviderError) as info:
        async for _ in ServerTransport(server.url, server.token).stream(
            [ChatMessage(role="user", content="x")], None, []
        ):
            pass
    assert "429" in str(info.value) or "Rate limit" in str(info.value)
    assert FAKE_API_KEY not in str(info.value)


def test_no_server_says_so_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from agentik_jupyter.core.transport import default_transport
    from agentik_jupyter.errors import ConfigurationError
    from agentik_jupyter.types import ChatMessage

    monkeypatch.setenv("AGENTIK_TRANSPORT", "server")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("JPY_PARENT_PID", raising=False)
    transport = default_transport()

    async def first() -> None:
        async for _ in transport.stream([ChatMessage(role="user", content="x")], None, []):
            pass

    with pytest.raises(ConfigurationError, match="no Jupyter server started this kernel"):
        asyncio.run(first())


# ---- a real kernel with AGENTIK_TRANSPORT=server and no key of its own ----


def widget_values(kernel: Any, since: int = 0) -> list[str]:
    """Every `value` the kernel sent to widget views (what the user watched change)."""
    return [
        str(m["content"]["data"]["state"]["value"])
        for m in kernel.iopub[since:]
        if m["msg_type"] in {"comm_msg", "comm_open"} and "value" in m["content"]["data"].get("state", {})
    ]


def stop_button(kernel: Any, since: int) -> str:
    stops = [
        m["content"]["comm_id"]
        for m in kernel.iopub[since:]
        if m["msg_type"] == "comm_open"
        and m["content"]["data"].get("state", {}).get("_model_name") == "ButtonModel"
        and "Stop" in m["content"]["data"].get("state", {}).get("description", "")
    ]
    assert stops, "no Stop button in the cell's view"
    return stops[-1]


def test_kernel_streams_through_the_server_without_the_key(
    server: RunningServer, llm: FakeLLMServer, tmp_path: Path
) -> None:
    import os

    from tests.kernel_support import AGENT_EXPR, RawKernel, kernel_env

    # jupyter_client sets the kernel's JPY_PARENT_PID to its launcher (this process), so this
    # process plays the server that started the kernel: its runtime file is the real server's.
    (info,) = (server.log_path.parent / "runtime").glob("jpserver-*.json")
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / f"jpserver-{os.getpid()}.json").write_text(info.read_text())
    env = kernel_env(
        None,
        AGENTIK_TRANSPORT="server",
        JUPYTER_RUNTIME_DIR=str(runtime),
        AGENTIK_DB_PATH=str(tmp_path / "k.agentik.db"),
    )
    assert not any(k.startswith("LLM_") for k in env)
    s = f"{AGENT_EXPR}.session"
    kernel = RawKernel(env, tmp_path)
    try:
        kernel.text("%load_ext agentik_jupyter")
        assert kernel.value("__import__('os').environ.get('LLM_API_KEY')") is None
        llm.push(Reply.text(" ".join(f"tok{i}" for i in range(40))))
        seen = len(kernel.iopub)
        ex = kernel.execute("%%agent\nStream me an answer.", timeout=30)
        assert ex.ok, ex.text
        kernel.wait_until(f"not {s}.busy and {s}.agent_store.status == 'idle'", timeout=30)
        kernel.drain(0.3)
        values = widget_values(kernel, seen)
        growing = {v for v in values if "tok3" in v and "tok39" not in v}
        assert len(growing) >= 2, "the answer should arrive in more than one widget update"
        # the live text may hold back its last characters while they could begin a secret; the
        # transcript that replaces the view at the end shows the whole answer
        shown = [
            str(m["content"].get("data", {}).get("text/plain", ""))
            for m in kernel.iopub[seen:]
            if m["msg_type"] in {"display_data", "update_display_data"}
        ]
        assert any("tok39" in text for text in shown), shown
        assert kernel.value(f"{s}.chat_store.messages[-1].content").endswith("tok39")

        # Stop in the kernel closes the stream; the server drops the provider request at once.
        llm.push(Reply.text(LONG_ANSWER))
        before, seen = len(llm.hangups), len(kernel.iopub)
        ex = kernel.execute("%%agent\nWrite a long essay.", timeout=30)
        assert ex.ok, ex.text
        stop = stop_button(kernel, seen)
        kernel.wait_until(f"{s}.agent_store.status == 'responding'", timeout=15)
        kernel.click(stop)
        kernel.wait_until(f"not {s}.busy", timeout=5, interval=0.02)
        stopped = time.monotonic()
        while len(llm.hangups) == before:
            assert time.monotonic() - stopped < 3, "the provider request outlived Stop"
            time.sleep(0.02)
    finally:
        kernel.close()


def test_kernel_without_a_server_says_so_in_the_cell(tmp_path: Path) -> None:
    from tests.kernel_support import RawKernel, kernel_env

    env = kernel_env(
        None,
        AGENTIK_TRANSPORT="server",
        JUPYTER_RUNTIME_DIR=str(tmp_path),
        AGENTIK_DB_PATH=str(tmp_path / "k.agentik.db"),
    )
    kernel = RawKernel(env, tmp_path)
    try:
        kernel.text("%load_ext agentik_jupyter")
        ex = kernel.execute("%%agent --wait\nhello", timeout=30)
        assert "no Jupyter server started this kernel" in ex.text + json.dumps([m["content"] for m in ex.messages]), (
            ex.text
        )
    finally:
        kernel.close()
