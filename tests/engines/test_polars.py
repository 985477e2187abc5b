"""Polars LazyFrames through the engine: exact statistics, and 200M rows that are never collected."""

from __future__ import annotations

import time

import pytest

pl = pytest.importorskip("polars")
np = pytest.importorskip("numpy")

from tests.engines_support import BIG_BUDGET_S, RSS_GROWTH_MB, SLACK_S, timed_describe, tools_for  # noqa: E402

LONG = "Trips over the past 24-hours (midnight to 11:59pm)"


def big_lazy() -> pl.LazyFrame:
    """200M rows as 2,000 lazily concatenated copies of one 100k-row frame (1.6 MB held, 3.2 GB if collected)."""
    block = pl.DataFrame({"id": np.arange(100_000), "x": np.random.default_rng(0).random(100_000)}).lazy()
    return pl.concat([block] * 2_000)


def test_small_lazy_frame_exact() -> None:
    lazy = pl.LazyFrame(
        {"age": [22.0, None, 45.0, 31.0, None], "city": ["Paris", "Oslo", "Paris", None, "Rome"], LONG: [1, 2, 3, 4, 5]}
    ).with_columns(pl.col("age") * 1)
    tools = tools_for(lazy=lazy)
    text = tools["describe_dataframe"](name="lazy").text
    assert "polars LazyFrame 'lazy': 3 columns" in text and "not collected" in text
    assert "rows: 5\n" in text and "on the whole data (5 rows)" in text
    assert "  age: Float64; 2 nulls (40.0%); min 22, max 45; mean 32.66667; ≈3 distinct" in text
    assert "  city: String; 1 nulls (20.0%); ≈3 distinct" in text
    assert f"  {LONG}: Int64; no nulls; min 1, max 5; mean 3; ≈5 distinct" in text
    assert "first 5 rows (engine-side limit):" in text and "Rome" in text
    assert "lazy: polars.LazyFrame 3 columns, lazy (a query plan; not collected); rows not counted" in (
        tools["list_variables"]().text
    )


def test_listing_does_not_collect() -> None:
    tools = tools_for(big=big_lazy())
    started = time.monotonic()
    assert "big: polars.LazyFrame 2 columns" in tools["list_variables"]().text
    assert time.monotonic() - started < 0.5


def test_200m_rows_within_budget_and_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTIK_DESCRIBE_BUDGET_S", str(BIG_BUDGET_S))
    tools = tools_for(big=big_lazy())
    text, seconds, growth = timed_describe(tools, "big")
    assert seconds < BIG_BUDGET_S + SLACK_S, f"{seconds:.1f}s\n{text}"
    assert growth < RSS_GROWTH_MB, f"RSS grew {growth:.0f} MB"
    assert "polars LazyFrame 'big': 2 columns" in text
    assert "on the whole data (200,000,000 rows)" in text or "did not fit the 4 s budget" in text
    assert "first 5 rows (engine-side limit):" in text
