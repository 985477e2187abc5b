"""PySpark DataFrames in local mode: exact statistics, 200M rows within budget, cancelled job groups.

One SparkSession for the module (local[1], one shuffle partition, no UI): Spark is heavy on a
2-core machine. Skipped, saying why, where Java is missing.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("Java not found: PySpark local mode needs a JVM (Java 17)", allow_module_level=True)

from tests.engines_support import BIG_BUDGET_S, RSS_GROWTH_MB, SLACK_S, timed_describe, tools_for  # noqa: E402

LONG = "Trips over the past 24-hours (midnight to 11:59pm)"
# Spark answers even a tiny job in seconds on a loaded 2-core machine: the small-frame tests
# give it room so they check the statistics, not the machine's load.
SMALL_BUDGET_S = "120"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("agentik-engine-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    # A user with a Spark frame has run jobs before: the JVM's first job (class loading, JIT)
    # takes tens of seconds on a loaded 2-core machine and is not the tool's cost.
    session.range(10).selectExpr("min(id)", "approx_count_distinct(id)").collect()
    try:
        yield session
    finally:
        session.stop()


def test_small_frame_exact(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTIK_DESCRIBE_BUDGET_S", SMALL_BUDGET_S)
    df = spark.createDataFrame(
        [(22.0, "Paris", 1), (None, "Oslo", 2), (45.0, "Paris", 3), (31.0, None, 4), (None, "Rome", 5)],
        f"age double, city string, `{LONG}` long",
    )
    tools = tools_for(df=df)
    text = tools["describe_dataframe"](name="df").text
    assert "PySpark DataFrame 'df': 3 columns, lazy (a Spark plan; local[1])" in text
    assert "rows: 5\n" in text and "on the whole data (5 rows)" in text
    assert "  age: double; 2 nulls (40.0%); min 22, max 45; mean 32.66667; ≈3 distinct" in text
    assert "  city: string; 1 nulls (20.0%); ≈3 distinct" in text
    assert f"  {LONG}: bigint; no nulls; min 1, max 5; mean 3; ≈5 distinct" in text
    # Under load a Spark limit job can miss the head's share of the budget; the text then says so.
    assert (
        "first 5 rows (engine-side limit):" in text and "Rome" in text
    ) or "first rows: not shown (over budget)" in text
    started = time.monotonic()
    listing = tools["list_variables"]().text
    assert time.monotonic() - started < 1.0
    assert "df: pyspark.DataFrame 3 columns, lazy (a Spark plan; local[1]); rows not counted" in listing


def test_200m_rows_within_budget_and_jobs_cancelled(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.sql import functions as F

    monkeypatch.setenv("AGENTIK_DESCRIBE_BUDGET_S", str(BIG_BUDGET_S))
    df = (
        spark.range(200_000_000)
        .withColumn("x", F.rand(0))
        .withColumn("s", (F.col("id") % 1000).cast("string"))
        .withColumn("n", F.when(F.col("id") % 7 == 0, None).otherwise(F.col("id")))
    )
    tools = tools_for(big=df)
    text, seconds, growth = timed_describe(tools, "big")
    assert seconds < BIG_BUDGET_S + SLACK_S, f"{seconds:.1f}s\n{text}"
    assert growth < RSS_GROWTH_MB, f"RSS grew {growth:.0f} MB"
    assert "PySpark DataFrame 'big': 4 columns" in text and "  n: bigint" in text
    assert "did not fit the 4 s budget" in text
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and tracker.getActiveJobsIds():
        time.sleep(0.2)
    assert tracker.getActiveJobsIds() == [], "Spark jobs kept running after the tool answered"
