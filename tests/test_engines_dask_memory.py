"""describe_dataframe on dask.datasets.timeseries: the kernel's memory comes back once the tool has answered.

Each of its 85 partitions (2.6M rows) takes 1-2 s and ~400 MB to generate, so no phase fits its share of
the budget: describe cancels one phase after another. Work a cancelled phase has already started cannot be
stopped mid-partition; it must not pile up beside the next phase's, and what it leaves behind must be handed
back, so the kernel's RSS ends within RSS_BOUND_MB of where it started (it grew by 1.3-1.7 GB).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dask.dataframe")
pytest.importorskip("pandas")

RSS_BOUND_MB = 300
BUDGET_S = 4.0
SETTLE_S = 10.0

SCRIPT = f"""
import json, os, sys, threading, time
sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
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
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    text, seconds, at_answer, settled, still_working, peak = json.loads(done.stdout.strip().splitlines()[-1])
    report = f"{seconds:.1f} s; RSS +{at_answer:.0f} MB at the answer, +{settled:.0f} MB settled, peak +{peak:.0f} MB\n{text}"
    assert "Dask DataFrame 'big': 4 columns, 85 partitions" in text, report
    assert seconds < BUDGET_S + 2.5, report
    assert not still_working, f"engine work still running {SETTLE_S:g} s after the answer; {report}"
    assert settled < RSS_BOUND_MB, report
    print(report)
