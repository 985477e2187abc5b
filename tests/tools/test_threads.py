"""Tools run on the right thread, and run_code captures only its own output.

The data tools and plain `@tool` functions run on the loop's thread (in a kernel: the
main thread, between the user's executions); `@tool(thread=True)` opts into a worker
thread. `run_code` captures what its own code prints and displays, not what other tasks
print while it awaits. A KeyboardInterrupt (the kernel's Interrupt) in a tool or in
run_code's code is never turned into a tool error.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from agentik_jupyter.core.orchestrator import Orchestrator
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.errors import CodeExecutionError
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.context import make_context_tools, register_context_tools
from agentik_jupyter.tools.execution import run_in_shell
from agentik_jupyter.tools.registry import ToolRegistry, definition_from_function, run_tool, tool
from agentik_jupyter.types import ChatMessage

T = TypeVar("T")


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    yield InteractiveShell.instance(config=config)
    InteractiveShell.clear_instance()


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never waits on the loop, without a loop: a KeyboardInterrupt it
    raises reaches this test directly instead of breaking pytest's event loop."""
    try:
        while True:
            assert coro.send(None) is None, "the coroutine waited on a future"
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


# ---- where tools run ----


async def test_builtin_data_tools_run_on_the_loop_thread(shell: InteractiveShell) -> None:
    shell.run_cell(
        "import threading\nclass Probe:\n    @property\n    def where(self):\n"
        "        seen.append(threading.get_ident())\n        return 1\nseen = []\nprobe = Probe()\n"
    )
    registry = ToolRegistry()
    register_context_tools(registry, shell)
    steps = [
        Step.calls(("inspect_variable", {"name": "probe.where"}), ("list_variables", {}), ("get_cell_history", {})),
        Step.say("done"),
    ]
    chat = ChatStore()
    outcome = await Orchestrator(ScriptedTransport(steps), registry, chat, AgentStore()).run(
        [ChatMessage(role="user", content="go")]
    )
    assert outcome.reason == "complete"
    assert shell.user_ns["seen"] == [threading.get_ident()]
    assert all(m.tool_result.error is None for m in chat.messages if m.role == "tool")


async def test_a_plain_tool_holds_the_loop_and_a_threaded_one_does_not() -> None:
    """The trade-off in numbers: while a 0.3 s tool runs, a ticking task on the loop advances
    only when the tool runs in a worker thread."""
    registry = ToolRegistry()

    @tool(registry=registry, policy="auto")
    def plain_wait() -> str:
        time.sleep(0.3)
        return "plain"

    @tool(registry=registry, thread=True, policy="auto")
    def threaded_wait() -> str:
        time.sleep(0.3)
        return "threaded"

    async def ticks_during(name: str) -> int:
        count = 0

        async def tick() -> None:
            nonlocal count
            while True:
                await asyncio.sleep(0.01)
                count += 1

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0.05)
        before = count
        assert await run_tool(registry.get(name), {}) == name.split("_")[0]  # type: ignore[arg-type]
        during = count - before
        ticker.cancel()
        return during

    assert await ticks_during("plain_wait") == 0
    assert await ticks_during("threaded_wait") >= 5


def test_thread_true_is_for_synchronous_tools_only() -> None:
    async def fetch() -> str:
        """Async."""
        return "x"

    with pytest.raises(TypeError, match="async"):
        definition_from_function(fetch, thread=True, policy="auto")


# ---- KeyboardInterrupt is a Stop, not a tool error ----


def test_keyboard_interrupt_in_a_sync_tool_propagates_from_run_tool() -> None:
    def interrupted() -> str:
        """Interrupted."""
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        drive(run_tool(definition_from_function(interrupted), {}))


def test_keyboard_interrupt_in_run_codes_code_propagates(shell: InteractiveShell) -> None:
    stdout = sys.stdout
    with pytest.raises(KeyboardInterrupt):
        drive(run_in_shell(shell, "print('before')\nraise KeyboardInterrupt"))
    assert sys.stdout is stdout  # the capture is undone on the way out
    with pytest.raises(CodeExecutionError, match="SystemExit"):
        drive(run_in_shell(shell, "raise SystemExit(2)"))  # other errors stay tool errors


@pytest.mark.parametrize("where", ["tool", "run_code"])
def test_keyboard_interrupt_never_becomes_a_tool_error_for_the_model(shell: InteractiveShell, where: str) -> None:
    registry = ToolRegistry()
    register_context_tools(registry, shell)
    registry.set_policy("run_code", "auto")

    @tool(registry=registry, policy="auto")
    def interrupted_tool() -> str:
        """Interrupted."""
        raise KeyboardInterrupt

    call = (
        Step.call("interrupted_tool") if where == "tool" else Step.call("run_code", {"code": "raise KeyboardInterrupt"})
    )
    transport = ScriptedTransport([call, Step.say("the model must not be asked again")])
    chat = ChatStore()
    try:
        outcome = drive(
            Orchestrator(transport, registry, chat, AgentStore()).run([ChatMessage(role="user", content="go")])
        )
    except KeyboardInterrupt:
        outcome = None  # propagated out of the loop: the kernel's turn handling ends the turn
    if outcome is not None:
        assert outcome.reason == "interrupted"
    assert len(transport.requests) == 1
    errors = [m.tool_result.error or "" for m in chat.messages if m.role == "tool" and m.tool_result]
    assert not any("KeyboardInterrupt" in e for e in errors), errors


# ---- run_code captures its own output only ----


async def test_run_code_does_not_capture_other_tasks_output(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    from IPython.display import display

    started = asyncio.Event()

    async def other_task() -> None:
        await started.wait()
        print("printed by another task")
        print("another task's error", file=sys.stderr)
        display({"text/plain": "displayed by another task"}, raw=True)

    shell.user_ns["started"] = started
    other = asyncio.create_task(other_task())
    out = await run_in_shell(
        shell, "import asyncio\nprint('mine before')\nstarted.set()\nawait asyncio.sleep(0.1)\nprint('mine after')\n7"
    )
    await other
    assert "mine before" in out.text and "mine after" in out.text and "result (int):\n7" in out.text
    assert "another task" not in out.text and "another task" not in str(out.display)
    seen = capsys.readouterr()
    assert "printed by another task" in seen.out and "displayed by another task" in seen.out
    assert "another task's error" in seen.err
    assert "mine" not in seen.out


async def test_concurrent_run_codes_keep_their_own_output(shell: InteractiveShell) -> None:
    code = "import asyncio\nfor i in range(5):\n    print('{tag}', i)\n    await asyncio.sleep(0.01)"
    first, second = await asyncio.gather(
        run_in_shell(shell, code.format(tag="first")), run_in_shell(shell, code.format(tag="second"))
    )
    assert first.text.count("first") == 5 and "second" not in first.text
    assert second.text.count("second") == 5 and "first" not in second.text


async def test_output_after_run_code_ends_is_not_lost(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    stdout = sys.stdout
    out = await run_in_shell(
        shell,
        "import asyncio\nasync def later():\n    await asyncio.sleep(0.05)\n    print('printed after run_code returned')\n"
        "pending = asyncio.get_running_loop().create_task(later())\nprint('inside')",
    )
    await shell.user_ns["pending"]
    assert "inside" in out.text and "after run_code" not in out.text
    assert "printed after run_code returned" in capsys.readouterr().out
    assert sys.stdout is stdout


async def test_a_users_own_redirect_inside_run_code_still_works(shell: InteractiveShell) -> None:
    out = await run_in_shell(
        shell,
        "import contextlib, io\nbuf = io.StringIO()\nwith contextlib.redirect_stdout(buf):\n    print('to the buffer')\n"
        "print('to run_code')\nbuf.getvalue()",
    )
    assert "to run_code" in out.text and "'to the buffer\\n'" in out.text


def test_make_context_tools_data_tools_are_plain_functions(shell: InteractiveShell) -> None:
    """Plain functions: run_tool calls them on the loop's thread (they are not coroutines)."""
    import inspect

    tools = {t.name: t for t in make_context_tools(shell)}
    for name in ("list_variables", "inspect_variable", "describe_dataframe", "get_cell_history"):
        assert not inspect.iscoroutinefunction(tools[name].execute) and tools[name].thread is False
