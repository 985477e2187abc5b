"""run_code and rewind over the MCP endpoint, with the official MCP client against a real Jupyter
server and the notebook's live kernel: the kernel's approval gate decides (AGENTIK_APPROVE set in the
kernel, as a headless run sets it), the client is a session of the notebook's sessions file with
every call in its audit log, progress comes while code runs, cancelling stops it, rewind restores."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp_types import CallToolResult

from agentik_jupyter.testing import Reply
from tests.jupyter_servers import server_fixtures
from tests.mcp_support import connected, live_notebook, text_of

pytestmark = pytest.mark.timeout(240)

llm, server = server_fixtures()


@pytest.fixture(scope="module")
def kernel(server: Any) -> Iterator[Any]:
    """runs.ipynb open with a live kernel that loaded the agent."""
    with live_notebook(server, "runs.ipynb") as attached:
        yield attached


def approve(kernel: Any, mode: str) -> None:
    kernel.text(f"import os; os.environ['AGENTIK_APPROVE'] = {mode!r}")


async def run(client: Client, server: Any, code: str) -> CallToolResult:
    return await client.call_tool("run_code", {"notebook": server.path("runs.ipynb"), "code": code})


async def test_run_code_is_denied_when_the_user_denies(server: Any, kernel: Any) -> None:
    approve(kernel, "deny")
    async with connected(server) as client:
        result = await run(client, server, "secret_plan = 1")
    assert result.is_error
    assert "The user did not approve running 'run_code'" in text_of(result)
    assert kernel.value("'secret_plan' in globals()") is False


async def test_an_approved_run_returns_its_output(server: Any, kernel: Any) -> None:
    approve(kernel, "auto")
    async with connected(server) as client:
        result = await run(client, server, "price = 10\nprint('computed')\nprice * 4 + 2")
    assert not result.is_error, text_of(result)
    assert "computed" in text_of(result) and "42" in text_of(result)
    assert kernel.value("price") == 10


async def test_the_client_is_a_session_with_every_call_in_its_audit_log(server: Any, kernel: Any) -> None:
    auth = {"Authorization": f"token {server.token}"}
    path = server.path("runs.ipynb")
    listing = httpx2.get(f"{server.url}/agentik/api/sessions", params={"path": path}, headers=auth, timeout=30)
    listing.raise_for_status()
    mine = [s for s in listing.json()["sessions"] if s["title"] == "claude-code"]
    assert len(mine) == 1
    detail = httpx2.get(f"{server.url}/agentik/api/sessions/{mine[0]['id']}", params={"path": path}, headers=auth)
    detail.raise_for_status()
    text = detail.text
    assert text.count("claude-code called run_code") == 2
    assert "secret_plan = 1" in text and "price * 4 + 2" in text
    assert "did not approve" in text and "computed" in text


async def test_rewind_restores_a_variable_the_client_s_run_changed(server: Any, kernel: Any) -> None:
    approve(kernel, "auto")
    async with connected(server) as client:
        changed = await run(client, server, "price = 99")
        assert not changed.is_error, text_of(changed)
        assert kernel.value("price") == 99
        rewound = await client.call_tool("rewind", {"notebook": server.path("runs.ipynb")})
    assert not rewound.is_error, text_of(rewound)
    assert "names restored: price" in text_of(rewound)
    assert kernel.value("price") == 10


async def test_rewind_refuses_to_undo_what_the_notebook_s_own_turn_changed_since(
    server: Any, kernel: Any, llm: Any
) -> None:
    approve(kernel, "auto")
    async with connected(server) as client:
        assert not (await run(client, server, "price = 5")).is_error
        llm.push(Reply.tool_calls([{"name": "run_code", "args": {"code": "price = 7"}}]), Reply.text("Set it."))
        assert "Set it." in kernel.text("%%agent --wait\nset price to 7", timeout=90)
        refused = await client.call_tool("rewind", {"notebook": server.path("runs.ipynb")})
    assert refused.is_error
    assert "the notebook's own turns changed price after your calls did" in text_of(refused)
    assert kernel.value("price") == 7


async def test_progress_while_code_runs_and_cancelling_stops_it(server: Any, kernel: Any) -> None:
    approve(kernel, "auto")
    progressed = asyncio.Event()
    messages: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")
        progressed.set()

    async with connected(server) as client:
        call = asyncio.ensure_future(
            client.call_tool(
                "run_code",
                {"notebook": server.path("runs.ipynb"), "code": "import time\nfor _ in range(3000): time.sleep(0.1)"},
                progress_callback=on_progress,
            )
        )
        await asyncio.wait_for(progressed.wait(), 60)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert any("run_code running in the kernel" in m for m in messages)
        after = await run(client, server, "'still here'")  # the kernel answers again, the queue is free
    assert not after.is_error, text_of(after)
    assert "still here" in text_of(after)


GATE = "__import__('agentik_jupyter.kernel.agent').kernel.agent.get_agent(get_ipython()).gate"


async def kernel_value(kernel: Any, expr: str) -> Any:
    """The kernel's answer, read off the loop: the MCP client's call goes on meanwhile."""
    return await asyncio.to_thread(kernel.value, expr)


async def test_in_auto_mode_an_in_kernel_change_runs_without_a_card(server: Any, kernel: Any) -> None:
    kernel.text("import os; os.environ.pop('AGENTIK_APPROVE', None)")  # the session's mode decides now
    kernel.text("%agent panel")  # where a card would show
    assert "Mode: Auto" in kernel.text("%agent mode auto")
    ran_before = kernel.value(f"{GATE}.auto_ran")
    async with connected(server) as client:
        result = await run(client, server, "auto_total = 6 * 7\nauto_total")
    assert not result.is_error, text_of(result)
    assert "42" in text_of(result)
    assert kernel.value(f"{GATE}.auto_ran") == ran_before + 1
    assert kernel.value(f"{GATE}.last is None")  # no card was ever shown


async def test_in_auto_mode_a_file_write_still_asks_saying_why(server: Any, kernel: Any) -> None:
    async with connected(server) as client:
        call = asyncio.ensure_future(run(client, server, "open('auto_out.txt', 'w').write('x')"))
        for _ in range(240):  # the card, as the panel shows it
            if await kernel_value(kernel, f"len({GATE}.pending)") == 1 or call.done():
                break
            await asyncio.sleep(0.25)
        assert not call.done(), text_of(call.result())  # the call waits for the user
        reasons = await kernel_value(kernel, f"[r.asks_because for r in {GATE}.pending.values()]")
        assert reasons == [["writes to auto_out.txt"]]
        card = await kernel_value(
            kernel, f"__import__('agentik_jupyter.widgets.approval_card').widgets.approval_card.auto_html({GATE}.last)"
        )
        assert "Auto asks: writes to auto_out.txt" in card
        await kernel_value(kernel, f"{GATE}.deny_pending('not now')")
        result = await asyncio.wait_for(call, 60)
    assert result.is_error
    assert "The user did not approve running 'run_code'" in text_of(result)
    assert kernel.value("__import__('os').path.exists('auto_out.txt')") is False


async def test_in_ask_and_plan_modes_a_client_reads_and_runs_or_edits_nothing(server: Any, kernel: Any) -> None:
    """The session's mode holds for an outside agent too: Ask and Plan only read (a client has no
    plan of ours to propose), and the refusal tells it how the user lets it act."""
    path = server.path("runs.ipynb")
    kernel.text("approve_env = __import__('os').environ.pop('AGENTIK_APPROVE', None)\nask_seen = 5")
    async with connected(server) as client:
        for mode in ("Ask", "Plan"):
            assert f"Mode: {mode}" in kernel.text(f"%agent mode {mode.lower()}")
            ran = await run(client, server, "ask_changed = 1")
            inserted = await client.call_tool("insert_cell", {"notebook": path, "source": "ask_cell = 1"})
            looked = await client.call_tool("inspect_variable", {"notebook": path, "name": "ask_seen"})
            for refused in (ran, inserted):
                assert refused.is_error, text_of(refused)
                assert f"in {mode} mode" in text_of(refused) and "Agent or Auto" in text_of(refused)
            assert not looked.is_error and "5" in text_of(looked)
    assert kernel.value("'ask_changed' in globals()") is False
    assert "Mode: Auto" in kernel.text("%agent mode auto")


async def test_a_kernel_dying_mid_call_is_an_error_the_client_can_act_on(server: Any, kernel: Any) -> None:
    """The kernel dies under run_code: the client hears it (not a hang, not a traceback); once Jupyter
    restarted the kernel and the user loaded the agent again, the next call works and goes to the
    client's same session, whose audit log says the call never finished."""
    path = server.path("runs.ipynb")
    approve(kernel, "auto")
    async with connected(server) as client:
        died = await asyncio.wait_for(run(client, server, "import os; os._exit(1)"), 120)
        assert died.is_error
        assert "kernel died or was restarted during the call" in text_of(died)
        assert "Traceback" not in text_of(died)
        for _ in range(240):  # Jupyter restarts a dead kernel
            listed = text_of(await client.call_tool("list_notebooks", {}))
            if f"{path} (kernel live)" in listed:
                break
            await asyncio.sleep(0.5)
        unloaded = await client.call_tool("list_variables", {"notebook": path})
        assert unloaded.is_error and "%load_ext agentik_jupyter" in text_of(unloaded)
        # the new kernel process answers on its own time (a busy machine: after "live" is listed)
        await asyncio.to_thread(kernel.kc.wait_for_ready, timeout=120)
        kernel.text("%load_ext agentik_jupyter")
        approve(kernel, "auto")
        after = await run(client, server, "'alive again'")
    assert not after.is_error, text_of(after)
    assert "alive again" in text_of(after)
    auth = {"Authorization": f"token {server.token}"}
    listing = httpx2.get(f"{server.url}/agentik/api/sessions", params={"path": path}, headers=auth, timeout=30)
    mine = [s for s in listing.json()["sessions"] if s["title"] == "claude-code"]
    assert len(mine) == 1  # the client's session goes on after the restart
    detail = httpx2.get(f"{server.url}/agentik/api/sessions/{mine[0]['id']}", params={"path": path}, headers=auth)
    assert "os._exit(1)" in detail.text and "alive again" in detail.text
    assert "The kernel died or was restarted before this call finished" in detail.text


async def test_a_call_that_needs_approval_with_no_panel_to_show_it_says_how_to_get_one(server: Any, llm: Any) -> None:
    """An outside call's card shows in the notebook's chat panel. With none open, it has nowhere the
    user would look (before any turn; or in a finished `%%agent` cell's view, where it used to go and
    wait unseen): the call is refused at once, saying how to open the panel; with the panel open,
    the card waits there."""
    with live_notebook(server, "no_panel.ipynb") as kernel:
        kernel.text("import os; os.environ.pop('AGENTIK_APPROVE', None)")  # the user decides
        async with connected(server) as client:
            path = server.path("no_panel.ipynb")
            before_any_turn = await client.call_tool("run_code", {"notebook": path, "code": "early = 1"})
            llm.push(Reply.text("Hello."))
            assert "Hello." in kernel.text("%%agent --wait\nHi.", timeout=90)
            after_a_cell_turn = await asyncio.wait_for(
                client.call_tool("run_code", {"notebook": path, "code": "late = 1"}), 60
            )
            for result in (before_any_turn, after_a_cell_turn):
                assert result.is_error
                assert "no chat panel is open" in text_of(result) and "%agent panel" in text_of(result), text_of(result)
            assert kernel.value("'early' in globals() or 'late' in globals()") is False

            kernel.text("%agent panel")
            call = asyncio.ensure_future(client.call_tool("run_code", {"notebook": path, "code": "shown = 1"}))
            for _ in range(240):
                if await kernel_value(kernel, f"len({GATE}.pending)") == 1 or call.done():
                    break
                await asyncio.sleep(0.25)
            assert not call.done(), text_of(call.result())  # its card waits in the panel
            await kernel_value(kernel, f"{GATE}.deny_pending('not now')")
            assert "The user did not approve running 'run_code'" in text_of(await asyncio.wait_for(call, 60))
