"""MCP through the kernel's own wiring: mcp.json -> tools on the first turn, failures reported,
servers stopped with the kernel."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import RawKernel, kernel_env, transcript

pytestmark = pytest.mark.timeout(120)
DEMO = Path(__file__).parents[1] / "mcp_servers" / "demo_server.py"


def demo_pids() -> set[int]:
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(DEMO) in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    pids.add(int(proc.name))
            except OSError:
                continue
    return pids


def test_mcp_tools_in_a_real_kernel(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {"command": sys.executable, "args": [str(DEMO)], "policy": "auto"},
                    "broken": {"command": "agentik-no-such-command"},
                }
            }
        )
    )
    before = demo_pids()
    with FakeLLMServer() as server:
        server.push(Reply.tool_calls([{"name": "demo__add", "args": {"a": 2, "b": 3}}]), Reply.text("2 + 3 is 5."))
        env = kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "m.db"), AGENTIK_MCP_CONFIG=str(config))
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            assert demo_pids() == before  # started lazily, not at load
            ex = kernel.execute("%%agent --wait\nAdd 2 and 3 with the demo server.", timeout=60)
            assert ex.ok, ex.text
            assert "broken" in ex.text and "agentik-no-such-command" in ex.text  # the failure, in the cell
            assert "2 + 3 is 5." in transcript(ex.outputs)["text/plain"]
            sent = [m for m in server.last_request.messages if m.get("role") == "tool"]
            assert sent and sent[-1]["content"] == "5"
            offered = {t["function"]["name"] for t in server.requests[0].body["tools"]}
            assert {"demo__add", "demo__fail", "list_variables"} <= offered
            tools = kernel.text("%agent tools")
            assert "demo__add" in tools and "broken" in tools and "failed" in tools
            running = demo_pids() - before
            assert running
        finally:
            kernel.close()
    deadline = time.monotonic() + 10
    while demo_pids() & running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not demo_pids() & running, "the MCP server outlived its kernel"


def test_extension_autoloads_from_ipython_config(tmp_path: Path) -> None:
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text("c.InteractiveShellApp.extensions = ['agentik_jupyter']\n")
    kernel = RawKernel(kernel_env(None, IPYTHONDIR=str(tmp_path / "ipython")), tmp_path)
    try:
        assert "Usage: %agent" in kernel.text("%agent help")
    finally:
        kernel.close()
