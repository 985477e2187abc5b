"""Real stdio MCP servers in subprocesses: working, failing, missing, mute, crashing.

One manager for the module, so the servers start once (they are real Python
processes and take a second or two each).
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from agentik_jupyter.mcp import MCPManager, MCPServerError, MCPToolError, parse_config
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import ToolOutput

DEMO = str(Path(__file__).parents[1] / "mcp_servers" / "demo_server.py")
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]


def child_commands() -> list[str]:
    """Command lines of this process's live children (Linux /proc)."""
    pids: list[str] = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            pids += (task / "children").read_text().split()
        except OSError:
            continue
    commands = []
    for pid in pids:
        try:
            commands.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return commands


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def manager(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MCPManager]:
    config = parse_config(
        {
            "mcpServers": {
                "demo": {
                    "command": sys.executable,
                    "args": [DEMO],
                    "env": {"GREETING": "${AGENTIK_TEST_UNSET_VAR:-hello from env}"},
                    "timeout": 2,
                    "policy": "auto",
                },
                "victim": {"command": sys.executable, "args": [DEMO]},
                "ghost": {"command": "agentik-no-such-command-xyz"},
                "mute": {
                    "command": sys.executable,
                    "args": ["-c", "import sys; sys.stdin.read()"],
                    "startupTimeout": 1.5,
                },
                "dies": {
                    "command": sys.executable,
                    "args": ["-c", "import sys; print('bad things happened', file=sys.stderr); sys.exit(2)"],
                },
            }
        },
        environ={},
    )
    manager = MCPManager(ToolRegistry(), config=config, log_dir=tmp_path_factory.mktemp("mcp-logs"))
    real_stderr = sys.stderr
    sys.stderr = io.StringIO()  # as under ipykernel: no fileno, so errlog must be a real file
    try:
        await asyncio.wait_for(manager.start(), 45)
    finally:
        sys.stderr = real_stderr
    try:
        yield manager
    finally:
        await asyncio.wait_for(manager.aclose(), 20)


async def test_statuses_report_each_server(manager: MCPManager) -> None:
    status = {s.name: s for s in manager.statuses()}
    assert status["demo"].state == "ready" and status["victim"].state == "ready"
    assert len(status["demo"].tools) == 7
    assert status["ghost"].state == "failed"
    assert status["ghost"].error and "command not found: 'agentik-no-such-command-xyz'" in status["ghost"].error
    assert status["mute"].state == "failed"
    assert status["mute"].error and "did not start within 1.5 s" in status["mute"].error
    assert status["dies"].state == "failed"
    assert status["dies"].error and "bad things happened" in status["dies"].error
    assert "ghost" in status["ghost"].describe() and "failed" in status["ghost"].describe()
    notices = manager.pop_notices()
    assert sorted(n.split("'")[1] for n in notices) == ["dies", "ghost", "mute"]
    assert manager.pop_notices() == []


async def test_calls_results_errors_and_images(manager: MCPManager) -> None:
    registry = manager.registry
    add = registry.get("demo__add")
    assert add is not None and add.policy == "auto"
    assert (await add.execute(a=20, b=22)).text == "42"
    with pytest.raises(MCPToolError, match="boom"):
        await registry.get("demo__fail").execute()  # type: ignore[union-attr]
    pixel = await registry.get("demo__pixel").execute()  # type: ignore[union-attr]
    assert isinstance(pixel, ToolOutput) and pixel.display and pixel.display["image/png"].startswith("iVBOR")
    env = await registry.get("demo__get_env").execute(name="GREETING")  # type: ignore[union-attr]
    assert env.text == "hello from env"
    shout = registry.get("demo__shout")
    assert shout is not None and shout.parameters[1].enum == ["upper", "lower"]
    assert (await shout.execute(text="Hi", mode="lower")).text == "hi"


async def test_hanging_call_times_out_and_server_stays_usable(manager: MCPManager) -> None:
    with pytest.raises(MCPServerError, match="did not answer within 2 s"):
        await manager.registry.get("demo__slow").execute(seconds=30)  # type: ignore[union-attr]
    assert (await manager.registry.get("demo__add").execute(a=1, b=2)).text == "3"  # type: ignore[union-attr]


async def test_server_stderr_goes_to_its_log_file(manager: MCPManager) -> None:
    status = {s.name: s for s in manager.statuses()}
    assert status["demo"].log_path is not None
    assert "fail" in Path(status["demo"].log_path).read_text()


async def test_crash_mid_call_is_reported_and_others_keep_working(manager: MCPManager) -> None:
    with pytest.raises(MCPServerError, match="stopped unexpectedly during a call to 'crash'"):
        await manager.registry.get("victim__crash").execute()  # type: ignore[union-attr]
    status = manager.status("victim")
    assert status.state == "failed" and "stopped unexpectedly" in (status.error or "")
    assert any("'victim'" in n for n in manager.pop_notices())
    with pytest.raises(MCPServerError, match="not running"):
        await manager.registry.get("victim__add").execute(a=1, b=1)  # type: ignore[union-attr]
    assert (await manager.registry.get("demo__add").execute(a=2, b=2)).text == "4"  # type: ignore[union-attr]


async def test_next_start_restarts_a_crashed_server(manager: MCPManager) -> None:
    await asyncio.wait_for(manager.start(), 30)
    assert manager.status("victim").state == "ready"
    assert manager.status("ghost").state == "failed", "a server that never started is not retried each turn"
    assert (await manager.registry.get("victim__add").execute(a=5, b=5)).text == "10"  # type: ignore[union-attr]


async def test_close_stops_every_server_process(manager: MCPManager) -> None:
    assert any(DEMO in c for c in child_commands())
    await asyncio.wait_for(manager.aclose(), 20)
    assert [c for c in child_commands() if DEMO in c or "sys.stdin.read" in c] == []
    assert len(manager.registry) == 0
    assert {s.state for s in manager.statuses() if s.name in ("demo", "victim")} == {"stopped"}


async def test_the_log_folder_the_manager_made_goes_when_it_closes_and_comes_back_on_a_restart() -> None:
    config = parse_config({"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO]}}}, environ={})
    manager = MCPManager(ToolRegistry(), config=config)  # no log folder given: the kernel's way
    await asyncio.wait_for(manager.start(), 30)
    log_path = manager.status("demo").log_path
    assert log_path is not None
    folder = Path(log_path).parent
    assert folder.name.startswith("agentik-mcp-") and folder.is_dir()
    await asyncio.wait_for(manager.aclose(), 20)
    assert not folder.exists(), "the temp folder outlives its manager"
    await asyncio.wait_for(manager.start(), 30)  # started again, its log is written anew
    assert manager.status("demo").state == "ready" and Path(log_path).is_file()
    await asyncio.wait_for(manager.aclose(), 20)
    assert not folder.exists()


async def test_closing_at_kernel_exit_removes_the_log_folder_the_manager_made() -> None:
    config = parse_config({"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO]}}}, environ={})
    manager = MCPManager(ToolRegistry(), config=config)

    def kernel_life() -> str | None:
        """Start the server on a loop of its own, then close as the kernel does at exit: the loop stopped."""
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(asyncio.wait_for(manager.start(), 30))
            log_path = manager.status("demo").log_path
            assert log_path is not None and Path(log_path).parent.is_dir()
            manager.close()
            return log_path
        finally:
            loop.close()

    log_path = await asyncio.to_thread(kernel_life)
    assert log_path is not None and not Path(log_path).parent.exists()
    assert [c for c in child_commands() if DEMO in c] == []
