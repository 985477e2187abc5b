"""MCP inside a real ipykernel: sys.stderr has no fileno there, the loop is the kernel's."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_async_kernel

DEMO = str(Path(__file__).parents[1] / "mcp_servers" / "demo_server.py")
pytestmark = pytest.mark.timeout(90)


async def run_cell(client, code: str, timeout: float = 40) -> tuple[str, dict]:
    """Execute `code` and collect its stdout; the reply says whether it raised."""
    msg_id = client.execute(code)
    out: list[str] = []
    while True:
        msg = await client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            out.append("\n".join(msg["content"]["traceback"]))
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = await client.get_shell_msg(timeout=timeout)
    return "".join(out), reply["content"]


async def test_stdio_server_in_a_kernel(tmp_path: Path) -> None:
    config = {"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO]}}}
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    km, kc = await start_new_async_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        code = textwrap.dedent(
            f"""
            import sys
            from agentik_jupyter.mcp import MCPManager, load_config
            from agentik_jupyter.tools.registry import ToolRegistry
            try:
                sys.stderr.fileno()
                print("stderr has a fileno")
            except Exception:
                print("stderr has no fileno")
            # a config given by code in the kernel is the user's own (a project file would wait for trust)
            manager = MCPManager(ToolRegistry(), config=load_config({str(tmp_path / "mcp.json")!r}))
            statuses = await manager.start()
            print([s.describe() for s in statuses])
            print("result:", (await manager.registry.get("demo__add").execute(a=2, b=3)).text)
            """
        )
        out, reply = await run_cell(kc, code)
        assert reply["status"] == "ok", out
        assert "stderr has no fileno" in out
        assert "demo (stdio, policy ask): ready, 7 tools" in out
        assert "result: 5" in out

        out, reply = await run_cell(kc, "await manager.aclose(); print(manager.status('demo').state)")
        assert reply["status"] == "ok" and out.strip() == "stopped", out

        # A sync line magic can only schedule the start, and the kernel's shutdown hook the stop.
        setup = textwrap.dedent(
            """
            import asyncio
            from mcp.server.mcpserver import MCPServer
            from agentik_jupyter.mcp import MCPConfig
            mem = MCPServer("mem")
            mem.tool(name="ping")(lambda: "pong")
            sync_manager = MCPManager(ToolRegistry(), config=MCPConfig())
            sync_manager.add_server("mem", mem)
            sync_manager.start_soon()
            print(sync_manager.status("mem").state)
            """
        )
        out, reply = await run_cell(kc, setup)
        assert reply["status"] == "ok" and out.strip() == "stopped", out
        wait = "for _ in range(300):\n    if sync_manager.status('mem').state == {!r}: break\n    await asyncio.sleep(0.05)\n"
        out, reply = await run_cell(kc, wait.format("ready") + "print(sync_manager.status('mem').state)")
        assert out.strip() == "ready", out
        out, reply = await run_cell(kc, "sync_manager.close()")
        assert reply["status"] == "ok", out
        out, reply = await run_cell(kc, wait.format("stopped") + "print(sync_manager.status('mem').state)")
        assert out.strip() == "stopped", out
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
