"""POST /agentik/api/chat refuses what it should not take: huge bodies (413, answered before reading
them), deeply nested JSON (400, no 500), and models outside AGENTIK_ALLOWED_MODELS (400). Real Jupyter Server."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx2
import pytest

from agentik_jupyter.core.chat_route import parse_request
from agentik_jupyter.errors import ChatRouteError
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY
from tests.jupyter_servers import RunningServer, jupyter, server_fixtures

pytestmark = pytest.mark.timeout(180)

llm, server = server_fixtures()

SMALL_CAP = 64 * 1024
ALLOWED = "fake-model, small-model"
HELLO = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def limited(llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server whose operator set a 64 KiB body cap and a model allow-list."""
    root, home = tmp_path_factory.mktemp("root"), tmp_path_factory.mktemp("home")
    env = {**llm.env(api_key=FAKE_API_KEY), "AGENTIK_MAX_BODY_BYTES": str(SMALL_CAP), "AGENTIK_ALLOWED_MODELS": ALLOWED}
    with jupyter(root, home, env=env) as running:
        yield running


def post(server: RunningServer, body: bytes | str | dict[str, object], accept: str | None = None) -> httpx2.Response:
    headers = {"Authorization": f"token {server.token}", "Content-Type": "application/json"}
    if accept:
        headers["Accept"] = accept
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx2.post(f"{server.url}/agentik/api/chat", content=data, headers=headers, timeout=60)


def raw_post(
    server: RunningServer, length: int, sent: bytes, chunked: bool = False
) -> tuple[int, dict[str, object], float]:
    """Announce `length` bytes (or send chunks), send only `sent`, and read the answer: (status, JSON, seconds)."""
    address = urlsplit(server.url)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}"
    head = (
        f"POST /agentik/api/chat HTTP/1.1\r\nHost: {address.netloc}\r\nAuthorization: token {server.token}\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()
    started = time.monotonic()
    with socket.create_connection((address.hostname, address.port), timeout=20) as sock:
        sock.sendall(head + sent)
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < _length(reply):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    status = int(reply.split(b" ", 2)[1])
    return status, json.loads(reply.split(b"\r\n\r\n", 1)[1] or b"null"), time.monotonic() - started


def _length(reply: bytes) -> int:
    for line in reply.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 1 << 30


def nested(depth: int) -> str:
    return json.dumps({"messages": HELLO, "context": None})[: -len("null}")] + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [100_000, 200])
def test_deeply_nested_json_is_a_clear_400(server: RunningServer, depth: int) -> None:
    r = post(server, nested(depth))
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] == "Invalid request body" and "nested" in body["message"], body
    assert "Traceback" not in r.text and "Recursion" not in r.text


def test_deeply_nested_json_is_400_on_the_event_stream_too(server: RunningServer) -> None:
    r = post(server, nested(100_000), accept="text/event-stream")
    assert r.status_code == 400 and "nested" in r.json()["message"], r.text


def test_a_60_mb_body_is_refused_before_it_is_sent(server: RunningServer) -> None:
    """The default cap is 8 MiB; the 413 comes back while the client has sent 1 KB of its 60 MB."""
    status, body, seconds = raw_post(server, 60 * 1024 * 1024, b'{"messages": [' + b" " * 1000)
    assert status == 413, body
    assert isinstance(body, dict) and body["error"] == "Request body too large"
    assert "8 MiB" in str(body["message"]) and "AGENTIK_MAX_BODY_BYTES" in str(body["message"])
    assert seconds < 10


def test_the_cap_is_configurable_and_bodies_under_it_still_work(limited: RunningServer, llm: FakeLLMServer) -> None:
    over = json.dumps({"messages": [{"role": "user", "content": "x" * (SMALL_CAP + 10)}]})
    r = post(limited, over)
    assert r.status_code == 413 and "64 KiB" in r.json()["message"], r.text
    llm.push(Reply.text("Small enough."))
    r = post(limited, {"messages": [{"role": "user", "content": "x" * (SMALL_CAP // 2)}]})
    assert r.status_code == 200 and r.json() == {"content": "Small enough."}, r.text


def test_a_chunked_body_over_the_cap_is_413(limited: RunningServer) -> None:
    payload = b'{"messages": [{"role": "user", "content": "' + b"x" * (2 * SMALL_CAP) + b'"}]}'
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(part), part) for part in (payload[i : i + 8192] for i in range(0, len(payload), 8192))
    )
    status, body, _ = raw_post(limited, 0, chunks + b"0\r\n\r\n", chunked=True)
    assert status == 413 and isinstance(body, dict) and body["error"] == "Request body too large"


def test_a_model_outside_the_allow_list_is_400_naming_the_allowed(limited: RunningServer, llm: FakeLLMServer) -> None:
    served = len(llm.requests)
    for accept in (None, "text/event-stream"):
        r = post(limited, {"messages": HELLO, "model": "o1-pro"}, accept=accept)
        assert r.status_code == 400, r.text
        message = r.json()["message"]
        assert "'o1-pro'" in message and "fake-model, small-model" in message and "AGENTIK_ALLOWED_MODELS" in message
    assert len(llm.requests) == served  # refused before any provider call
    llm.push(Reply.text("Allowed."))
    r = post(limited, {"messages": HELLO, "model": "small-model"})
    assert r.status_code == 200 and r.json() == {"content": "Allowed."}
    assert llm.last_request is not None and llm.last_request.body["model"] == "small-model"
    llm.push(Reply.text("Default."))
    assert post(limited, {"messages": HELLO}).json() == {"content": "Default."}  # no model named: the server's own


def test_without_an_allow_list_any_model_is_taken() -> None:
    assert parse_request(json.dumps({"messages": HELLO, "model": "anything"}), environ={}).model == "anything"
    with pytest.raises(ChatRouteError) as info:
        parse_request(json.dumps({"messages": HELLO, "model": "anything"}), environ={"AGENTIK_ALLOWED_MODELS": "a,b"})
    assert info.value.status == 400 and "a, b" in info.value.body["message"]


def test_the_server_log_has_no_traceback_for_these(server: RunningServer) -> None:
    post(server, nested(100_000))
    assert "RecursionError" not in server.log() and "Uncaught exception" not in server.log()
