"""An MCP server with one two-argument tool, for the approval-card browser test (stdio).

`move_file(source, destination)` moves nothing: it answers what it was asked to do, so the
test sees the call arrive through MCP without touching any file.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("files")


@server.tool()
def move_file(source: str, destination: str) -> str:
    """Move a file from source to destination."""
    return f"dry run: would move {source} to {destination}"


if __name__ == "__main__":
    server.run()
