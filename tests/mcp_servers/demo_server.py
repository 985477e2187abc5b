"""A tiny MCP server for the tests, run as a real subprocess.

Usage: `python demo_server.py` (stdio) or `python demo_server.py http PORT`
(streamable HTTP on 127.0.0.1). Its tools cover the cases the adapter must
handle: a plain result (from a tool that declares it only reads), a tool error, a crash, a hang,
an image, and the env.
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = MCPServer("demo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(message: str = "boom") -> str:
    """Always fails with the given message."""
    raise ToolError(message)


@server.tool()
def crash() -> str:
    """Kills the server process mid-call."""
    os._exit(3)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def pixel() -> Image:
    """A 1x1 PNG image."""
    return Image(data=PNG_1X1, format="png")


@server.tool()
def get_env(name: str) -> str:
    """The value of an environment variable in the server process."""
    return os.environ.get(name, "<unset>")


@server.tool()
def shout(text: str, mode: Literal["upper", "lower"] = "upper") -> str:
    """Changes the case of a text."""
    return text.upper() if mode == "upper" else text.lower()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
