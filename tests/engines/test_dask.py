"""Dask DataFrames and Series: local threads and a distributed LocalCluster (processes=False)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

dd = pytest.importorskip("dask.dataframe")
np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

from tests.engines_support import (  # noqa: E402
    BIG_BUDGET_S,
    RSS_GROWTH_MB,
    SLACK_S,
    describe_in_fresh_process,
    timed_describe,
    tools_for,
)

LONG = "Trips over the past 24-hours (midnight to 11:59pm)"
ROWS_PER_PART = 200_000
BIG_PARTS = 1_000
SLOW_PARTS = 60
SLOW_PART_S = 0.2

_calls: list[int] = []
_calls_lock = threading.Lock()


def random_part(i: int) -> Any:
    rng = np.random.default_rng(i)
    return pd.DataFrame(
        {
            "id": np.arange(i * ROWS_PER_PART, (i + 1) * ROWS_PER_PART),
            "x": rng.random(ROWS_PER_PART),
            "k": rng.integers(0, 1000, ROWS_PER_PART),
        }
    )


def slow_part(i: int) -> Any:
    """A partition that takes SLOW_PART_S to produce and counts how often it was produced."""
    with _calls_lock:
        _calls.append(i)
    time.sleep(SLOW_PART_S)
    return pd.DataFrame({"v": np.arange(i * 1000, (i + 1) * 1000, dtype="float64")})


def big_frame() -> Any:
    """200M rows (4.8 GB as pandas) that exist only as 1,000 partitions generated on demand."""
    return dd.from_map(random_part, list(range(BIG_PARTS)), meta=random_part(0).iloc[:0], enforce_metadata=False)


def slow_frame() -> Any:
    return dd.from_map(
        slow_part,
        list(range(SLOW_PARTS)),
        meta=pd.DataFrame({"v": pd.Series([], dtype="float64")}),
        enforce_metadata=False,
    )


def small_pandas() -> Any:
    return pd.DataFrame(
        {
            "age": [22.0, np.nan, 45.0, 31.0, np.nan, 50.0],
            "city": ["Paris", "Oslo", "Paris", None, "Rome", "Oslo"],
            LONG: [1, 2, 3, 4, 5, 6],
        }
    )


def check_small(text: str, label: str = "Dask DataFrame") -> None:
    assert f"{label} 'ddf': 3 columns, 3 partitions" in text
    assert "rows: 6\n" in text and "on the whole data (6 rows)" in text
    assert "  age: float64; 2 nulls (33.3%); min 22, max 50; mean 37; ≈4 distinct" in text
    assert "≈3 distinct" in text.split("  city:")[1].splitlines()[0]
    assert f"  {LONG}: int64; no nulls; min 1, max 6; mean 3.5; ≈6 distinct" in text
    assert "first 2 rows (engine-side limit):" in text  # head reads the first partition only


def test_small_frame_exact_on_local_threads() -> None:
    ddf = dd.from_pandas(small_pandas(), npartitions=3)
    tools = tools_for(ddf=ddf)
    text = tools["describe_dataframe"](name="ddf").text
    check_small(text)
    assert "local scheduler" in text
    assert tools["inspect_variable"](name="ddf").text.startswith("Dask DataFrame 'ddf'")
    listing = tools["list_variables"]().text
    assert "ddf: dask.DataFrame 3 columns, 3 partitions, lazy (local scheduler); rows not counted" in listing


def test_series() -> None:
    s = dd.from_pandas(pd.Series([1.0, None, 3.0], name="price"), npartitions=2)
    text = tools_for(s=s)["describe_dataframe"](name="s").text
    assert "Dask Series 's': 1 columns" in text
    assert "  price: float64; 1 nulls (33.3%); min 1, max 3; mean 2; ≈2 distinct" in text


def test_listing_does_not_compute() -> None:
    _calls.clear()
    tools = tools_for(slow=slow_frame())
    started = time.monotonic()
    listing = tools["list_variables"]().text
    assert time.monotonic() - started < 0.5 and not _calls
    assert "slow: dask.DataFrame 1 columns, 60 partitions" in listing


def test_over_budget_uses_a_partition_sample_and_cancels_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """60 partitions of 0.2 s cannot all be made in 3 s on 2 threads: a sample of them is, the rest never starts."""
    monkeypatch.setenv("AGENTIK_DESCRIBE_BUDGET_S", "3")
    _calls.clear()
    tools = tools_for(slow=slow_frame())
    text, seconds, _ = timed_describe(tools, "slow")
    assert seconds < 3 + SLACK_S, text
    assert "statistics computed by the engine on a sample of 1,000 rows (1 of 60 partitions, spread evenly" in text
    assert "the whole data did not fit the 3 s budget" in text
    assert "rows: ≈60k (estimated; from the sample)" in text or "rows: 60,000" in text
    time.sleep(1.0)
    produced = len(_calls)
    time.sleep(1.0)
    assert len(_calls) == produced, "partitions kept being computed after the tool answered"
    assert produced < 3 * SLOW_PARTS


def test_200m_rows_within_budget_and_memory() -> None:
    text, seconds, growth = describe_in_fresh_process("engines.test_dask:big_frame", BIG_BUDGET_S)
    assert seconds < BIG_BUDGET_S + SLACK_S, f"{seconds:.1f}s\n{text}"
    assert growth < RSS_GROWTH_MB, f"RSS grew {growth:.0f} MB"
    assert "Dask DataFrame 'big': 3 columns, 1,000 partitions" in text
    assert "the whole data did not fit the 4 s budget" in text
    # the count is exact when it fits the budget's share, estimated from the sample otherwise
    assert (
        re.search(r"\(10 of 1,000 partitions, spread evenly, ~1% of ~?200M rows\)", text)
        or "statistics: not computed" in text
    )


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def test_small_frame_exact_on_a_distributed_client(client: Any) -> None:
    ddf = dd.from_pandas(small_pandas(), npartitions=3)
    text = tools_for(ddf=ddf)["describe_dataframe"](name="ddf").text
    check_small(text)
    assert "distributed Client" in text


def test_distributed_futures_are_cancelled(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """5 s, not 3: under a busy machine the in-process scheduler needs more than 1.35 s for one partition."""
    monkeypatch.setenv("AGENTIK_DESCRIBE_BUDGET_S", "5")
    _calls.clear()
    text, seconds, _ = timed_describe(tools_for(slow=slow_frame()), "slow")
    assert seconds < 5 + SLACK_S, text
    assert "1 of 60 partitions" in text and "did not fit the 5 s budget" in text
    time.sleep(1.0)
    produced = len(_calls)
    time.sleep(1.0)
    assert len(_calls) == produced, "the cluster kept computing after the tool answered"

    def processing(dask_scheduler: Any) -> int:
        return sum(1 for t in dask_scheduler.tasks.values() if t.state == "processing")

    assert client.run_on_scheduler(processing) == 0
