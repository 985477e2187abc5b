"""MCP: stdio servers, and the children they start, end with their kernel.

A stdio server that spawns a long `sleep` runs in a real kernel (started by the
first `%agent tools`); after a graceful shutdown, and after a restart, neither the
server nor its child is left running.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.kernel_support import RawKernel, kernel_env

pytestmark = pytest.mark.timeout(180)
MARKING = Path(__file__).parents[1] / "mcp_servers" / "marking_server.py"
GONE_WITHIN = 10.0  # seconds after the kernel has shut down or restarted


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper is gone for this purpose)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def wait_gone(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + GONE_WITHIN
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def start_server(tmp_path: Path, name: str) -> tuple[RawKernel, list[int]]:
    mark = tmp_path / f"{name}.json"
    config = tmp_path / f"{name}-mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "spawner": {"command": sys.executable, "args": [str(MARKING), str(mark), "--spawn"]},
                }
            }
        )
    )
    env = kernel_env(None, AGENTIK_MCP_CONFIG=str(config), AGENTIK_DB_PATH=str(tmp_path / f"{name}.db"))
    kernel = RawKernel(env, tmp_path)
    kernel.text("%load_ext agentik_jupyter")
    tools = kernel.text("%agent tools")
    for _ in range(100):
        if "spawner (stdio, policy ask): ready" in tools:
            break
        time.sleep(0.1)
        tools = kernel.text("%agent tools")
    assert "spawner (stdio, policy ask): ready" in tools, tools
    pids = json.loads(mark.read_text())
    procs = [pids["pid"], pids["child"]]
    assert all(alive(p) for p in procs)
    return kernel, procs


def test_shutdown_ends_the_server_and_its_child(tmp_path: Path) -> None:
    kernel, procs = start_server(tmp_path, "shutdown")
    try:
        kernel.km.shutdown_kernel(now=False)  # what Jupyter's "Shut Down Kernel" sends
        assert not wait_gone(procs), "the MCP server or its child outlived the kernel"
    finally:
        kernel.close()
        for pid in procs:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_restart_ends_the_server_and_its_child(tmp_path: Path) -> None:
    kernel, procs = start_server(tmp_path, "restart")
    try:
        kernel.km.restart_kernel(now=False)  # what Jupyter's "Restart Kernel" sends
        assert not wait_gone(procs), "the MCP server or its child outlived the restart"
    finally:
        kernel.close()
        for pid in procs:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
