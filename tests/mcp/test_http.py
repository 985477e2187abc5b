"""A real streamable-HTTP MCP server on 127.0.0.1, in a subprocess."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from mcp.server.mcpserver import MCPServer

from agentik_jupyter.mcp import MCPManager, MCPServerError, MCPToolError, parse_config
from agentik_jupyter.tools.registry import ToolRegistry

DEMO = str(Path(__file__).parents[1] / "mcp_servers" / "demo_server.py")
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def http_server() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, DEMO, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the HTTP MCP server exited with {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("the HTTP MCP server did not listen within 30 s")
                time.sleep(0.1)
        yield proc, port
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def manager(http_server: tuple[subprocess.Popen[bytes], int]) -> AsyncIterator[MCPManager]:
    _, port = http_server
    config = parse_config(
        {
            "mcpServers": {
                "web": {
                    "url": "http://127.0.0.1:${TEST_MCP_PORT}/mcp",
                    "headers": {"Authorization": "Bearer ${TEST_MCP_TOKEN:-dev}"},
                    "timeout": 5,
                },
                "down": {"url": f"http://127.0.0.1:{free_port()}/mcp", "startupTimeout": 5},
            }
        },
        environ={"TEST_MCP_PORT": str(port)},
    )
    manager = MCPManager(ToolRegistry(), config=config)
    local = MCPServer("local")

    @local.tool()
    def ping() -> str:
        """Answers pong."""
        return "pong"

    manager.add_server("local", local)
    await asyncio.wait_for(manager.start(), 30)
    try:
        yield manager
    finally:
        await asyncio.wait_for(manager.aclose(), 20)


async def test_http_server_ready_and_unreachable_one_failed(manager: MCPManager) -> None:
    status = {s.name: s for s in manager.statuses()}
    assert status["web"].state == "ready" and status["web"].transport == "http"
    assert "web__add" in status["web"].tools
    assert status["down"].state == "failed"
    assert status["down"].error and "cannot reach http://127.0.0.1:" in status["down"].error
    assert status["local"].state == "ready"


async def test_http_calls_and_errors(manager: MCPManager) -> None:
    assert (await manager.registry.get("web__add").execute(a=3, b=4)).text == "7"  # type: ignore[union-attr]
    with pytest.raises(MCPToolError, match="boom"):
        await manager.registry.get("web__fail").execute()  # type: ignore[union-attr]


async def test_http_server_dying_is_reported_and_other_tools_work(
    manager: MCPManager, http_server: tuple[subprocess.Popen[bytes], int]
) -> None:
    with pytest.raises(MCPServerError, match="web"):
        await manager.registry.get("web__crash").execute()  # type: ignore[union-attr]
    for _ in range(50):
        if manager.status("web").state == "failed":
            break
        await asyncio.sleep(0.05)
    status = manager.status("web")
    assert status.state == "failed" and "127.0.0.1" in (status.error or "")
    with pytest.raises(MCPServerError):
        await manager.registry.get("web__add").execute(a=1, b=1)  # type: ignore[union-attr]
    assert (await manager.registry.get("local__ping").execute()).text == "pong"  # type: ignore[union-attr]
    assert http_server[0].wait(timeout=5) == 3
