"""MCP: a restart keeps the user's `%agent policy` choices; colliding names are reported."""

from __future__ import annotations

import asyncio

import pytest
from mcp.server.mcpserver import MCPServer

from agentik_jupyter.mcp import MCPConfig, MCPManager
from agentik_jupyter.tools.approval import format_tools
from agentik_jupyter.tools.registry import ToolRegistry, tool

pytestmark = pytest.mark.timeout(60)


def server_with(name: str, *tools: str) -> MCPServer:
    server = MCPServer(name)
    for tool_name in tools:
        server.tool(name=tool_name)(lambda tool_name=tool_name: f"{name}:{tool_name}")
    return server


async def test_restart_keeps_the_users_policy() -> None:
    registry = ToolRegistry()
    manager = MCPManager(registry, config=MCPConfig())
    manager.add_server("demo", server_with("demo", "ping", "pong"), policy="auto")
    try:
        await manager.start()
        registry.set_policy("demo__ping", "deny")  # what `%agent policy demo__ping deny` does
        assert (await manager.restart("demo")).state == "ready"
        assert registry.get("demo__ping").policy == "deny", "the restart undid the user's choice"
        assert registry.get("demo__pong").policy == "auto"
    finally:
        await asyncio.wait_for(manager.aclose(), 10)


async def test_colliding_tool_names_are_reported_and_neither_replaces_the_other() -> None:
    registry = ToolRegistry()

    @tool(registry=registry, name="a___c")
    def mine() -> str:
        """The user's own tool."""
        return "mine"

    manager = MCPManager(registry, config=MCPConfig())
    manager.add_server("a_", server_with("a_", "b", "c"))  # a_ + b -> a___b
    manager.add_server("a", server_with("a", "_b", "_c"))  # a + _b -> a___b ; a + _c -> a___c
    try:
        await manager.start()
        first = registry.get("a___b")
        assert first is not None and first.origin == "mcp:a_:b"
        assert registry.get("a___c").execute.__name__ == "mine", "an MCP tool replaced the user's tool"
        assert (await first.execute()).text == "a_:b"

        status = manager.status("a")
        assert status.tools == ()
        listing = "\n".join(s.describe() for s in manager.statuses())
        assert "name collision: tool '_b' would be named 'a___b', which mcp:a_:b already has" in listing
        assert "name collision: tool '_c' would be named 'a___c'" in listing, listing
        assert "name collision: tool 'c' would be named 'a___c'" in listing, listing
        assert any("MCP server 'a': tool '_b' would be named 'a___b'" in n for n in manager.pop_notices())

        await manager.restart("a")  # a restart of the loser takes nothing either
        assert registry.get("a___b").origin == "mcp:a_:b"
        assert "a___b" in format_tools(registry)
    finally:
        await asyncio.wait_for(manager.aclose(), 10)
