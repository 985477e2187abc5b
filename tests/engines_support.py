"""Shared helpers for the engine tests: the tools on a fresh shell, RSS, a timed describe, and Stop."""

from __future__ import annotations

import _thread
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from agentik_jupyter.tools.context import make_context_tools

# The budget the big-frame tests give describe, and what they allow on top: the cancel
# grace (limits.CANCEL_GRACE_S) plus scheduling noise on a loaded 2-core machine.
BIG_BUDGET_S = 4.0
SLACK_S = 2.5
RSS_GROWTH_MB = 200


def tools_for(**variables: Any) -> dict[str, Any]:
    """The context tools on a new in-process shell holding `variables`."""
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance(config=config)
    shell.user_ns.update(variables)
    return {t.name: t.execute for t in make_context_tools(shell)}


@pytest.fixture
def press_stop() -> Iterator[Callable[[float], None]]:
    """`press_stop(after)`: Stop, `after` seconds on, as a kernel gets it: SIGINT in the main thread.

    While a cell runs, a kernel has `signal.default_int_handler` on SIGINT, which raises
    KeyboardInterrupt. A test run started with SIGINT ignored (any command started with `&` by a
    shell without job control) has no such handler, and `_thread.interrupt_main` then does nothing;
    so the handler is installed for the test, and the old one put back after it.
    """
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timers: list[threading.Timer] = []

    def press(after: float) -> None:
        timer = threading.Timer(after, _thread.interrupt_main)
        timers.append(timer)
        timer.start()

    try:
        yield press
    finally:
        for timer in timers:
            timer.cancel()
            timer.join()
        signal.signal(signal.SIGINT, signal.SIG_DFL if old is None else old)


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def timed_describe(tools: dict[str, Any], name: str) -> tuple[str, float, float]:
    """(text, seconds, RSS growth in MB) of describe_dataframe(name)."""
    before = rss_mb()
    started = time.monotonic()
    text = tools["describe_dataframe"](name=name).text
    return text, time.monotonic() - started, rss_mb() - before


def describe_in_fresh_process(frame_from: str, budget_s: float) -> tuple[str, float, float]:
    """timed_describe of `frame_from()` ("module:function", a frame factory in tests/) in a new Python.

    A kernel is a fresh process; this pytest process has the heap of hundreds of earlier tests,
    whose fragmentation (not the describe) decides how much of the engine's freed memory the
    OS gets back, so the RSS growth is measured where a kernel would see it.
    """
    module, function = frame_from.split(":")
    script = (
        "import json, os, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})\n"
        f"os.environ['AGENTIK_DESCRIBE_BUDGET_S'] = {str(budget_s)!r}\n"
        f"from tests.{module} import {function}\n"
        "from tests.engines_support import timed_describe, tools_for\n"
        f"print(json.dumps(timed_describe(tools_for(big={function}()), 'big')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    text, seconds, growth = json.loads(done.stdout.strip().splitlines()[-1])
    return text, seconds, growth
