"""describe_dataframe on dask.datasets.timeseries: the kernel's memory comes back once the tool has answered.
And the runner rule behind it: an engine call waits for cancelled work still winding down.

Each of its 85 partitions (2.6M rows) takes 1-2 s and ~400 MB to generate, so no phase fits its share of
the budget: describe cancels one phase after another. Work a cancelled phase has already started cannot be
stopped mid-partition; it must not pile up beside the next phase's, and what it leaves behind must be handed
back, so the kernel's RSS ends within RSS_BOUND_MB of where it started (it grew by 1.3-1.7 GB).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentik_jupyter.engines.base import Job, OverBudget, run_bounded

RSS_BOUND_MB = 300
BUDGET_S = 4.0
SETTLE_S = 10.0

SCRIPT = f"""
import json, os, sys, threading, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
os.environ['AGENTIK_DESCRIBE_BUDGET_S'] = {str(BUDGET_S)!r}
import dask
from tests.engines_support import rss_mb, timed_describe, tools_for

def peak_mb():
    with open('/proc/self/status') as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith('VmHWM:'))

frame = dask.datasets.timeseries(start='2000-01-01', end='2006-12-31', freq='1s', partition_freq='30d')
tools = tools_for(big=frame)
before = rss_mb()
text, seconds, _ = timed_describe(tools, 'big')
at_answer = rss_mb() - before
give_up = time.monotonic() + {SETTLE_S!r}
while time.monotonic() < give_up and any(t.name == 'agentik-engine' for t in threading.enumerate()):
    time.sleep(0.1)
still_working = any(t.name == 'agentik-engine' for t in threading.enumerate())
time.sleep(0.5)
print(json.dumps([text, seconds, at_answer, rss_mb() - before, still_working, peak_mb() - before]))
"""


def test_describing_dask_timeseries_gives_the_memory_back() -> None:
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pandas")
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    text, seconds, at_answer, settled, still_working, peak = json.loads(done.stdout.strip().splitlines()[-1])
    report = f"{seconds:.1f} s; RSS +{at_answer:.0f} MB at the answer, +{settled:.0f} MB settled, peak +{peak:.0f} MB\n{text}"
    assert "Dask DataFrame 'big': 4 columns, 85 partitions" in text, report
    assert seconds < BUDGET_S + 2.5, report
    assert not still_working, f"engine work still running {SETTLE_S:g} s after the answer; {report}"
    assert settled < RSS_BOUND_MB, report
    print(report)


def _stubborn(running: list[int], seconds: float) -> Job[str]:
    """A call that ignores its cancel for `seconds`, like a Dask partition already being made."""

    def run() -> str:
        running.append(1)
        time.sleep(seconds)
        running.pop()
        return "late rows"

    return Job(run)


def test_the_next_engine_call_waits_for_cancelled_work_to_stop() -> None:
    running: list[int] = []
    with pytest.raises(OverBudget) as info:
        run_bounded(_stubborn(running, 1.5), time.monotonic() + 0.2)
    assert running == [1]  # the tool went on without it
    seen: list[int] = []

    def next_call() -> str:
        seen.append(len(running))
        return "ok"

    assert run_bounded(Job(next_call), time.monotonic() + 10) == "ok"
    assert seen == [0], "the next call ran beside the cancelled one"
    assert info.value.late(None) == "late rows"  # its value is still there for whoever wants it


def test_a_call_whose_deadline_passes_while_waiting_never_starts() -> None:
    running: list[int] = []
    with pytest.raises(OverBudget):
        run_bounded(_stubborn(running, 1.5), time.monotonic() + 0.2)
    started: list[bool] = []
    with pytest.raises(OverBudget, match="still stopping"):
        run_bounded(Job(lambda: started.append(True)), time.monotonic() + 0.3)
    assert not started
    run_bounded(Job(lambda: None), time.monotonic() + 10)  # leave nothing winding down for the next test
