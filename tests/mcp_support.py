"""What the MCP endpoint's tests share: a notebook open with a live kernel that loaded the agent, and
the official MCP client connected to the endpoint over streamable HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Implementation, TextContent

from tests.jupyter_servers import attach, start_notebook_session


@contextmanager
def live_notebook(server: Any, name: str, *cells: str) -> Iterator[Any]:
    """`name` open as JupyterLab opens it, its kernel attached, `%load_ext agentik_jupyter` and `cells` run."""
    session = start_notebook_session(server, server.path(name))
    kernel = attach(server, session["kernel"]["id"])
    try:
        for source in ("%load_ext agentik_jupyter", *cells):
            kernel.text(source)
        yield kernel
    finally:
        kernel.close()


@asynccontextmanager
async def connected(server: Any, *, token: str | None = None, name: str = "claude-code") -> AsyncIterator[Client]:
    """An MCP client named `name` (its `initialize`), logged in with the server's token (or `token`)."""
    headers = {"Authorization": f"token {server.token if token is None else token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=None)) as http:
        transport = streamable_http_client(f"{server.url}/agentik/mcp", http_client=http)
        async with Client(transport, client_info=Implementation(name=name, version="1.0")) as client:
            yield client


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))
