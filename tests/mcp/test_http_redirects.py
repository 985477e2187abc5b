"""An MCP HTTP server that redirects: its headers (a key from `${LLM_API_KEY}`) go nowhere else.

Real HTTP on 127.0.0.1: one listener answers every request with a 3xx; the target is a
second listener (another origin) or another path on the same server (same origin, another
service behind a path-routing proxy). The target must receive nothing, and the server's
status must name the status and the target's host, without the key, path or query.
"""

from __future__ import annotations

import asyncio
import http.server
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.mcp import MCPManager, MCPServerError, parse_config
from agentik_jupyter.tools.registry import ToolRegistry

pytestmark = [pytest.mark.timeout(60)]

KEY = "sk-agentik-LEAKCHECK-mcp-redirect-1234567890"
REDIRECTING = str(Path(__file__).parents[1] / "mcp_servers" / "redirecting_server.py")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class Redirecting(http.server.BaseHTTPRequestHandler):
    """`/mcp` answers with `server.status` to `server.location`; any other path is recorded."""

    server: Any

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.startswith("/mcp"):
            self.send_response(self.server.status)
            self.send_header("Location", self.server.location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.server.reached.append((self.command, self.path, dict(self.headers), body))
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        pass


HTTP_REQUEST = re.compile(rb"[A-Z]+ \S+ HTTP/1\.[01]\r\n")


class Listener:
    """A bare TCP listener that keeps the first bytes of every connection it accepts.

    Its port is a free one the system chose, which a kernel of another test may have held a moment
    before: that kernel's ZeroMQ clients, dialling again, can connect too (a ZMTP greeting, not
    HTTP). `http_requests` is what an HTTP client sent; nothing else of ours speaks to it.
    """

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    self.received.append(conn.recv(65536))
                except OSError:
                    self.received.append(b"")

    def http_requests(self) -> list[bytes]:
        return [data for data in self.received if HTTP_REQUEST.match(data)]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def redirector() -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), Redirecting)
    server.reached = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


async def start_web(port: int) -> MCPManager:
    config = parse_config(
        {
            "mcpServers": {
                "web": {
                    "url": f"http://127.0.0.1:{port}/mcp",
                    "headers": {"Authorization": "Bearer ${LLM_API_KEY}", "X-Api-Key": "${LLM_API_KEY}"},
                    "startupTimeout": 10,
                }
            }
        },
        environ={"LLM_API_KEY": KEY},
    )
    manager = MCPManager(ToolRegistry(), config=config)
    await asyncio.wait_for(manager.start(), 30)
    return manager


@pytest.mark.parametrize("status", [307, 308, 302])
async def test_a_redirect_to_another_listener_sends_it_nothing(redirector: _Server, status: int) -> None:
    elsewhere = Listener()
    redirector.status = status  # type: ignore[attr-defined]
    redirector.location = f"http://127.0.0.1:{elsewhere.port}/mcp?token=abc"  # type: ignore[attr-defined]
    manager = await start_web(redirector.server_address[1])
    try:
        web = manager.status("web")
    finally:
        await asyncio.wait_for(manager.aclose(), 20)
        await asyncio.sleep(0.3)
        elsewhere.close()
    assert elsewhere.http_requests() == [], "the redirect target was contacted"
    assert not any(KEY.encode() in data for data in elsewhere.received)
    assert web.state == "failed"
    error = web.error or ""
    assert f"HTTP {status}" in error and f"http://127.0.0.1:{elsewhere.port}" in error, error
    assert KEY not in error and "token=abc" not in error and "/mcp?" not in error


async def test_a_redirect_within_the_same_origin_is_not_followed_either(redirector: _Server) -> None:
    """Same scheme, host and port, another path: behind a routing proxy that is another program."""
    port = redirector.server_address[1]
    redirector.status = 307  # type: ignore[attr-defined]
    redirector.location = "/other-service/mcp"  # type: ignore[attr-defined]
    manager = await start_web(port)
    try:
        web = manager.status("web")
    finally:
        await asyncio.wait_for(manager.aclose(), 20)
    assert redirector.reached == [], "the request (with the key in its headers) followed the redirect"  # type: ignore[attr-defined]
    assert web.state == "failed"
    assert f"HTTP 307, a redirect to http://127.0.0.1:{port}" in (web.error or ""), web.error
    assert KEY not in (web.error or "")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_server_that_starts_redirecting_mid_session_sends_nothing_elsewhere() -> None:
    """A real MCP server that answers, then redirects every request: the call fails, says why."""
    elsewhere = Listener()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, REDIRECTING, str(port), f"http://127.0.0.1:{elsewhere.port}/mcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "the MCP server did not listen"
                time.sleep(0.1)
        manager = await start_web(port)
        try:
            assert manager.status("web").state == "ready"
            assert (await manager.registry.get("web__add").execute(a=3, b=4)).text == "7"  # type: ignore[union-attr]
            await manager.registry.get("web__start_redirecting").execute()  # type: ignore[union-attr]
            with pytest.raises(MCPServerError) as caught:
                await manager.registry.get("web__add").execute(a=1, b=1)  # type: ignore[union-attr]
            web = manager.status("web")
        finally:
            await asyncio.wait_for(manager.aclose(), 20)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        await asyncio.sleep(0.3)
        elsewhere.close()
    assert elsewhere.http_requests() == [], "the redirect target was contacted"
    assert not any(KEY.encode() in data for data in elsewhere.received)
    message = str(caught.value)
    assert f"HTTP 307, a redirect to http://127.0.0.1:{elsewhere.port}" in message and KEY not in message
    assert web.state == "failed" and "HTTP 307" in (web.error or "")
