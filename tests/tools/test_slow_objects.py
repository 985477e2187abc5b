"""One slow user object must not stall the agent.

`class Slow` stands for a lazy ORM query or a remote dataset: its `shape`, `__len__` and
`__repr__` take 30 s. Building a turn's context reads no user code at all, and the
inspection tools read user code under a time budget, on the main thread, and say
"timed out reading `slow`" instead of hanging. First in-process, then in a real kernel
against the fake LLM server.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from agentik_jupyter.errors import ReadTimeout
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.tools import context as context_tools
from agentik_jupyter.tools.context import make_context_tools, summarize_variables, variables_of
from agentik_jupyter.tools.time_budget import call_with_budget
from tests.kernel_support import RawKernel, kernel_env, wait_for

SLOW_CLASS = """
import time

class Slow:
    '''A lazy remote dataset: every question about it takes 30 s.'''

    @property
    def shape(self):
        time.sleep(30)
        return (10, 2)

    def __len__(self):
        time.sleep(30)
        return 10

    def __repr__(self):
        time.sleep(30)
        return "Slow()"

slow = Slow()
"""

SHORT_BUDGET_S = 0.5

# pytest-timeout's default method owns SIGALRM, which the budget then leaves alone.
pytestmark = pytest.mark.timeout(180, method="thread")


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance(config=config)
    sh.run_cell(SLOW_CLASS + "rows = [1, 2, 3]\n", store_history=True)
    yield sh
    InteractiveShell.clear_instance()


def test_the_turns_context_reads_no_user_code(shell: InteractiveShell) -> None:
    started = time.perf_counter()
    summary = {v.name: v for v in variables_of(shell)}
    assert time.perf_counter() - started < 0.5
    assert summary["slow"].type == "__main__.Slow" and summary["slow"].shape is None
    assert summary["rows"].shape == "len=3"


def test_subclasses_that_override_len_or_shape_are_not_read() -> None:
    import numpy as np

    class LazyList(list):  # type: ignore[type-arg]
        def __len__(self) -> int:
            raise AssertionError("a user-defined __len__ must not run for the context")

    class LazyArray(np.ndarray):
        @property
        def shape(self) -> Any:  # type: ignore[override]
            raise AssertionError("a user-defined shape must not run for the context")

    ns = {"lazy_list": LazyList([1]), "lazy_array": np.zeros(3).view(LazyArray), "plain": np.zeros((2, 3))}
    found = {v.name: v.shape for v in summarize_variables(ns)}
    assert found == {"lazy_list": None, "lazy_array": None, "plain": "(2, 3)"}


def test_list_variables_is_prompt_with_a_slow_object(shell: InteractiveShell) -> None:
    started = time.perf_counter()
    text = {t.name: t.execute for t in make_context_tools(shell)}["list_variables"]().text
    assert time.perf_counter() - started < 0.5
    assert "slow: __main__.Slow" in text


@pytest.mark.parametrize("path", ["slow", "slow.shape"])
def test_inspect_variable_times_out_with_a_message(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    monkeypatch.setattr(context_tools, "INSPECT_TIME_BUDGET_S", SHORT_BUDGET_S)
    inspect_variable = {t.name: t.execute for t in make_context_tools(shell)}["inspect_variable"]
    started = time.perf_counter()
    with pytest.raises(ReadTimeout, match=f"timed out reading `{path}`"):
        inspect_variable(name=path)
    assert time.perf_counter() - started < SHORT_BUDGET_S + 1.0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)


def test_cell_history_marks_a_slow_output(shell: InteractiveShell) -> None:
    """As if the user had evaluated `slow` in a cell (IPython keeps the value as Out[n])."""
    tools = {t.name: t.execute for t in make_context_tools(shell)}
    shell.run_cell("slow_again = slow", store_history=True)
    count = shell.execution_count - 1
    shell.history_manager.output_hist[count] = shell.user_ns["slow"]
    started = time.perf_counter()
    text = tools["get_cell_history"](last_n=1).text
    assert time.perf_counter() - started < 3.0
    assert f"Out[{count}]: <__main__.Slow: repr timed out" in text


def test_the_budget_restores_the_previous_handler_and_lets_interrupts_through() -> None:
    seen: list[int] = []

    def mine(signum: int, frame: Any) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        assert call_with_budget(lambda: 42, 1.0, "x") == 42
        assert signal.getsignal(signal.SIGALRM) is mine

        def interrupted() -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            call_with_budget(interrupted, 1.0, "x")
        assert signal.getsignal(signal.SIGALRM) is mine and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert seen == []


def test_user_code_that_swallows_exceptions_still_times_out() -> None:
    def stubborn() -> str:
        try:
            time.sleep(30)
        except Exception:
            pass
        return "finished"

    started = time.perf_counter()
    with pytest.raises(ReadTimeout):
        call_with_budget(stubborn, SHORT_BUDGET_S, "stubborn")
    assert time.perf_counter() - started < SHORT_BUDGET_S + 1.0


def test_off_the_main_thread_there_is_no_budget_and_no_error() -> None:
    results: list[Any] = []

    def work() -> None:
        results.append(call_with_budget(lambda: time.sleep(0.2) or "done", 0.05, "x"))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(5)
    assert results == ["done"]


# ---- in a real kernel ----


def test_a_slow_object_stalls_neither_a_turn_nor_inspection(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.push(
            Reply.text("Warmed up."),
            Reply.text("Four."),
            Reply.tool_calls([{"name": "inspect_variable", "args": {"name": "slow"}}]),
            Reply.text("slow does not answer in time."),
        )
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "nb.agentik.db")), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            assert kernel.execute("%%agent --wait\nHello.").ok  # the first turn's imports and DB set-up
            kernel.text(SLOW_CLASS)
            started = time.monotonic()
            first = kernel.submit("%%agent --wait\nWhat is 2 + 2?")
            wait_for(lambda: len(server.requests) >= 2, 40, "the request")
            request_delay = time.monotonic() - started
            assert kernel.collect(first, timeout=40).ok
            assert request_delay < 3, f"the request left after {request_delay:.1f} s"

            started = time.monotonic()
            second = kernel.collect(kernel.submit("%%agent --wait\nLook at slow."), timeout=40)
            elapsed = time.monotonic() - started
            assert second.ok, second.text
            assert elapsed < context_tools.INSPECT_TIME_BUDGET_S + 10, f"the turn took {elapsed:.1f} s"
            tool_messages = [m for m in server.requests[-1].messages if m.get("role") == "tool"]
            assert tool_messages and "timed out reading `slow`" in str(tool_messages[-1]["content"])
        finally:
            kernel.close()
