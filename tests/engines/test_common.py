"""The engine layer without any engine: budget, cancellation, rendering, and imports it never makes."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from agentik_jupyter.engines import base, limits
from agentik_jupyter.engines.base import ColumnStats, Head, Job, OverBudget, StatsResult, Summary, run_bounded
from agentik_jupyter.engines.render import render
from agentik_jupyter.tools import dataframes
from tests.engines_support import press_stop  # noqa: F401 (a fixture)


def test_output_budget_is_the_pandas_one() -> None:
    assert limits.BUDGET_CHARS == dataframes.BUDGET_CHARS
    assert limits.MAX_COLUMNS == dataframes.MAX_COLUMNS


def test_budget_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(limits.BUDGET_ENV, raising=False)
    assert limits.describe_budget_s() == 5.0
    monkeypatch.setenv(limits.BUDGET_ENV, "2.5")
    assert limits.describe_budget_s() == 2.5
    monkeypatch.setenv(limits.BUDGET_ENV, "soon")
    assert limits.describe_budget_s() == 5.0


def _blocking_job() -> tuple[Job[str], threading.Event]:
    """A job that runs until cancelled, like an engine call; `cancelled` tells the cancel arrived."""
    cancelled = threading.Event()

    def run() -> str:
        if not cancelled.wait(30):
            return "never cancelled"
        raise RuntimeError("cancelled by the engine")

    return Job(run, cancelled.set), cancelled


def test_deadline_cancels_through_the_engine() -> None:
    job, cancelled = _blocking_job()
    started = time.monotonic()
    with pytest.raises(OverBudget):
        run_bounded(job, time.monotonic() + 0.3)
    assert cancelled.is_set()
    assert time.monotonic() - started < 0.3 + limits.CANCEL_GRACE_S


def test_stop_cancels_through_the_engine_and_propagates(press_stop: Callable[[float], None]) -> None:
    """A kernel interrupt (Stop) lands in the waiting thread as KeyboardInterrupt: the engine is cancelled."""
    job, cancelled = _blocking_job()
    press_stop(0.3)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_bounded(job, time.monotonic() + 20)
    assert cancelled.is_set() and time.monotonic() - started < 2


def test_cancel_running_reaches_calls_in_flight() -> None:
    job, cancelled = _blocking_job()
    threading.Timer(0.3, base.cancel_running).start()
    with pytest.raises(RuntimeError, match="cancelled by the engine"):
        run_bounded(job, time.monotonic() + 20)
    assert cancelled.is_set()


def test_errors_of_the_engine_come_back() -> None:
    def fail() -> None:
        raise ValueError("bad column")

    with pytest.raises(ValueError, match="bad column"):
        run_bounded(Job(fail), time.monotonic() + 5)


def test_column_names_are_never_cut() -> None:
    """300 columns with 80-character names: whole names or none, and a count of the left-out ones."""
    names = [f"Trips over the past 24-hours (midnight to 11:59pm), station number {i:04d}" for i in range(300)]
    stats = {
        n: ColumnStats(nulls=i, min=0, max=10**9 + i, mean=1234.5678, distinct=5_000) for i, n in enumerate(names[:40])
    }
    summary = Summary(
        label="Dask DataFrame",
        name="trips",
        schema=[(n, "float64") for n in names],
        layout="200 partitions",
        rows=1_000_000,
        rows_exact=True,
        profiled=names[:40],
        stats=StatsResult(rows=1_000_000, columns=stats),
        head=Head(names, [tuple(range(300))] * 5),
    )
    text = render(summary)
    assert len(text) <= limits.BUDGET_CHARS
    assert "chars cut" not in text
    stem = "Trips over the past 24-hours (midnight to 11:59pm), station number "
    found = re.findall(re.escape(stem) + r"(\d{4})?", text)
    assert found and all(found), "a column name was cut"
    whole = {n for n in names if n in text}
    left = int(text.split("… and ")[1].split(" more columns")[0].replace(",", ""))
    assert len(whole) + left == 300
    assert f"  {names[0]}: float64; no nulls; min 0, max 1,000,000,000; mean 1,234.568; ≈5,000 distinct" in text


def test_no_engine_is_imported_by_us() -> None:
    """Loading the tools and describing pandas leaves dask, duckdb, pyspark, polars and ibis unimported."""
    code = (
        "import sys, pandas as pd\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "from agentik_jupyter.tools.context import make_context_tools\n"
        "sh = InteractiveShell.instance(); sh.user_ns['df'] = pd.DataFrame({'a': [1, 2]})\n"
        "tools = {t.name: t.execute for t in make_context_tools(sh)}\n"
        "tools['list_variables'](); tools['describe_dataframe'](name='df'); tools['inspect_variable'](name='df')\n"
        "print(sorted(m for m in ('dask', 'distributed', 'duckdb', 'pyspark', 'polars', 'ibis') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
