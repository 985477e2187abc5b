"""DuckDB relations through the real tools: exact statistics, a 200M-row relation within budget, Stop."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

duckdb = pytest.importorskip("duckdb")
pd = pytest.importorskip("pandas")

from tests.engines_support import (  # noqa: E402
    BIG_BUDGET_S,
    RSS_GROWTH_MB,
    SLACK_S,
    press_stop,  # noqa: F401 (a fixture)
    rss_mb,
    timed_describe,
    tools_for,
)

LONG = "Trips over the past 24-hours (midnight to 11:59pm)"
BIG_SQL = (
    "SELECT range AS id, random() AS x, (range % 1000)::VARCHAR AS s, "
    "CASE WHEN range % 7 = 0 THEN NULL ELSE range END AS n FROM range(200000000)"
)


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    yield connection
    connection.close()


@pytest.fixture
def budget(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setenv("AGENTIK_DESCRIBE_BUDGET_S", str(BIG_BUDGET_S))
    return BIG_BUDGET_S


def test_small_relation_exact_statistics_and_whole_names(con: duckdb.DuckDBPyConnection) -> None:
    frame = pd.DataFrame(  # noqa: F841 (DuckDB's SQL reads it by name)
        {
            "age": [22.0, None, 45.0, 31.0, None],
            "city": ["Paris", "Oslo", "Paris", None, "Rome"],
            LONG: [1, 2, 3, 4, 5],
        }
    )
    rel = con.sql("SELECT * FROM frame")
    tools = tools_for(rel=rel)
    text = tools["describe_dataframe"](name="rel").text
    assert "DuckDB relation 'rel': 3 columns" in text
    assert "rows: 5\n" in text and "on the whole data (5 rows)" in text
    assert "  age: DOUBLE; 2 nulls (40.0%); min 22, max 45; mean 32.66667; ≈3 distinct" in text
    assert "  city: VARCHAR; 1 nulls (20.0%); ≈3 distinct" in text
    assert f"  {LONG}: BIGINT; no nulls; min 1, max 5; mean 3; ≈5 distinct" in text
    assert "first 5 rows (engine-side limit):" in text and "Paris" in text
    assert tools["inspect_variable"](name="rel").text == text
    listing = tools["list_variables"]().text
    assert "rel: duckdb.DuckDBPyRelation 3 columns, lazy" in listing and "rows not counted" in listing


def test_requested_columns_and_unknown_ones(con: duckdb.DuckDBPyConnection) -> None:
    rel = con.sql("SELECT range AS a, range * 2 AS b, 'x' AS c FROM range(10)")
    tools = tools_for(rel=rel)
    text = tools["describe_dataframe"](name="rel", columns=["b"]).text
    assert "1 of 3 profiled" in text and "  b: BIGINT; no nulls; min 0, max 18" in text
    assert "other columns (no statistics): a (BIGINT), c (VARCHAR)" in text
    with pytest.raises(KeyError, match="did you mean 'b'"):
        tools["describe_dataframe"](name="rel", columns=["bb"])


def test_listing_a_huge_relation_runs_no_query(con: duckdb.DuckDBPyConnection) -> None:
    rel = con.sql(BIG_SQL)
    tools = tools_for(big=rel)
    started = time.monotonic()
    listing = tools["list_variables"]().text
    assert time.monotonic() - started < 0.5
    assert "big: duckdb.DuckDBPyRelation 4 columns" in listing


def test_200m_rows_within_budget_and_memory(con: duckdb.DuckDBPyConnection, budget: float) -> None:
    rel = con.sql(BIG_SQL)
    tools = tools_for(big=rel)
    text, seconds, growth = timed_describe(tools, "big")
    assert seconds < budget + SLACK_S, f"{seconds:.1f}s\n{text}"
    assert growth < RSS_GROWTH_MB, f"RSS grew {growth:.0f} MB"
    assert "DuckDB relation 'big': 4 columns" in text
    # The whole data cannot be profiled in 4 s here: the text says the statistics come from a sample.
    assert "did not fit the 4 s budget" in text
    assert "a sample of 100,000 rows (its first rows, via LIMIT" in text or "statistics: not computed" in text
    assert "  n: BIGINT" in text and "first 5 rows" in text
    # The connection is usable after the cancelled queries.
    assert con.sql("SELECT 41 + 1").fetchall() == [(42,)]


def test_stop_interrupts_the_query(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, press_stop: Callable[[float], None]
) -> None:
    """A kernel interrupt during describe reaches DuckDB: the tool stops at once, the connection lives on."""
    monkeypatch.setenv("AGENTIK_DESCRIBE_BUDGET_S", "60")
    rel = con.sql(BIG_SQL)
    tools = tools_for(big=rel)
    before = rss_mb()
    press_stop(1.0)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        tools["describe_dataframe"](name="big")
    assert time.monotonic() - started < 4
    assert rss_mb() - before < RSS_GROWTH_MB
    assert con.sql("SELECT count(*) FROM range(10)").fetchall() == [(10,)]
