"""The adapter against an in-process MCP server (the SDK's MCPServer, no subprocess)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from agentik_jupyter.core.orchestrator import Orchestrator
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.mcp import MCPConfig, MCPManager, MCPServerError, MCPToolError
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import ChatMessage, ToolCall, ToolDefinition, ToolOutput

pytestmark = pytest.mark.timeout(30)


def make_server() -> MCPServer:
    server = MCPServer("mem")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail(message: str = "boom") -> str:
        """Always fails."""
        raise ToolError(message)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleeps."""
        await anyio.sleep(seconds)
        return "done"

    @server.tool()
    def greet(name: str, excited: bool | None = None) -> str:
        """Greets."""
        return f"hi {name}{'!' if excited else ''}"

    return server


@pytest.fixture
async def manager():
    registry = ToolRegistry()
    manager = MCPManager(registry, config=MCPConfig())  # no file: only the server added here
    manager.add_server("mem", make_server(), timeout=5)
    try:
        yield manager
    finally:
        await asyncio.wait_for(manager.aclose(), 10)


async def test_tools_registered_with_names_schemas_and_ask_policy(manager: MCPManager) -> None:
    statuses = await asyncio.wait_for(manager.start(), 10)
    assert [(s.name, s.state, s.transport) for s in statuses] == [("mem", "ready", "in-process")]
    registry = manager.registry
    assert sorted(d.name for d in registry.get_all()) == ["mem__add", "mem__fail", "mem__greet", "mem__slow"]
    add = registry.get("mem__add")
    assert add is not None and add.policy == "ask" and add.source == "mcp"
    assert add.description == "Add two integers."
    assert [(p.key, p.type, p.required) for p in add.parameters] == [("a", "integer", True), ("b", "integer", True)]
    assert sorted(statuses[0].tools) == ["mem__add", "mem__fail", "mem__greet", "mem__slow"]


async def test_call_result_error_and_optional_none(manager: MCPManager) -> None:
    await manager.start()
    registry = manager.registry
    out = await registry.get("mem__add").execute(a=2, b=40)  # type: ignore[union-attr]
    assert isinstance(out, ToolOutput) and out.text == "42"
    with pytest.raises(MCPToolError, match="nope"):
        await registry.get("mem__fail").execute(message="nope")  # type: ignore[union-attr]
    greeting = await registry.get("mem__greet").execute(name="Ada", excited=None)  # type: ignore[union-attr]
    assert greeting.text == "hi Ada"


async def test_call_timeout_leaves_server_usable(manager: MCPManager) -> None:
    manager.add_server("short", make_server(), timeout=0.3)
    await manager.start()
    with pytest.raises(MCPServerError, match="did not answer within 0.3 s"):
        await manager.registry.get("short__slow").execute(seconds=5)  # type: ignore[union-attr]
    assert manager.status("short").state == "ready"
    assert (await manager.registry.get("short__add").execute(a=1, b=1)).text == "2"  # type: ignore[union-attr]


async def test_cancelled_call_does_not_wedge_the_session(manager: MCPManager) -> None:
    await manager.start()
    task = asyncio.ensure_future(manager.registry.get("mem__slow").execute(seconds=30))  # type: ignore[union-attr]
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await manager.registry.get("mem__add").execute(a=3, b=4)).text == "7"  # type: ignore[union-attr]


async def test_through_the_orchestrator(manager: MCPManager) -> None:
    """The model sees the MCP tools; isError comes back as a ToolResult error; approval is asked."""
    await manager.start()
    asked: list[str] = []

    async def approve(call: ToolCall, definition: ToolDefinition) -> bool:
        asked.append(call.name)
        return True

    transport = ScriptedTransport(
        [
            Step.calls(("mem__add", {"a": 1, "b": 2}), ("mem__fail", {"message": "kaput"})),
            Step.say("done"),
        ]
    )
    orch = Orchestrator(transport, manager.registry, ChatStore(), AgentStore(), approver=approve)
    outcome = await asyncio.wait_for(orch.run([ChatMessage(role="user", content="go")]), 10)
    assert outcome.reason == "complete"
    assert asked == ["mem__add", "mem__fail"]
    schemas = {s.name: s for s in transport.requests[0].tool_schemas}
    assert "mem__add" in schemas and [p.key for p in schemas["mem__add"].parameters] == ["a", "b"]
    results = [m.tool_result for m in outcome.messages if m.tool_result is not None]
    assert results[0].result == "3" and results[0].error is None
    assert results[1].error is not None and "kaput" in results[1].error


async def test_close_unregisters_and_stops(manager: MCPManager) -> None:
    await manager.start()
    await manager.aclose()
    assert len(manager.registry) == 0
    assert manager.status("mem").state == "stopped"


def test_sync_close_with_the_loop_stopped() -> None:
    """As at interpreter exit (atexit): the loop exists but no longer runs."""
    loop = asyncio.new_event_loop()
    try:
        manager = MCPManager(ToolRegistry(), config=MCPConfig())
        manager.add_server("mem", make_server())
        loop.run_until_complete(asyncio.wait_for(manager.start(), 10))
        assert manager.status("mem").state == "ready"
        manager.close()
        assert manager.status("mem").state == "stopped" and len(manager.registry) == 0
    finally:
        loop.close()


def test_import_without_the_sdk_and_clear_error_when_configured() -> None:
    """Without `mcp` installed the package imports; a configured server fails with the hint."""
    script = textwrap.dedent(
        """
        import asyncio, sys
        sys.modules["mcp"] = None  # as if the extra were not installed
        from agentik_jupyter.mcp import MCPManager, parse_config
        from agentik_jupyter.tools.registry import ToolRegistry
        m = MCPManager(ToolRegistry(), config=parse_config({"mcpServers": {}}))
        assert not m.configured
        m = MCPManager(ToolRegistry(), config=parse_config({"mcpServers": {"s": {"command": "x"}}}))
        [status] = asyncio.run(m.start())
        print(status.state, "|", status.error, "|", m.pop_notices())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("failed | ")
    assert "pip install 'agentik_jupyter[mcp]'" in done.stdout
