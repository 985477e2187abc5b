"""describe_dataframe never cuts a column name.

Real tables have names like `Trips over the past 24-hours (midnight to 11:59pm)`; a name
cut in the middle is a name the model cannot write. The profile stays within its budget
by dropping statistics, then columns, and says how many were left out.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from agentik_jupyter.tools.dataframes import BUDGET_CHARS, describe_frame

TRIPS = "Trips over the past 24-hours (midnight to 11:59pm)"
CUMULATIVE = "Cumulative trips (since launch):"


def long_name(i: int) -> str:
    return f"Average speed of the vehicles on route {i} during the morning peak (units: metres per second)"


def wide_columns(rows: int = 5) -> dict[str, Any]:
    """A DABench-like table: a few long real names, then 60 long measurement columns."""
    columns: dict[str, Any] = {
        TRIPS: np.arange(rows),
        CUMULATIVE: np.arange(rows, dtype=np.float64),
        "Total Annual Memberships Sold": [f"m{i}" for i in range(rows)],
    }
    for i in range(60):
        columns[long_name(i)] = np.arange(rows) * i
    return columns


def names_in(text: str, names: list[str]) -> tuple[list[str], list[str]]:
    """Which names appear whole in the text, and which do not appear at all."""
    whole = [n for n in names if n in text]
    return whole, [n for n in names if n not in text]


def assert_no_cut_names(text: str, names: list[str]) -> None:
    assert "chars cut" not in text, text
    for line in text.splitlines():
        match = re.match(r"  (.+?): (int64|float64|str|object|Int64|Float64|String)\b", line)
        if match:
            assert match.group(1) in names, f"a profiled column line names {match.group(1)!r}"


def left_out_count(text: str) -> int:
    """Columns the text says it left out (not profiled), from its own words."""
    match = re.search(r"… and ([\d,]+) more columns, not profiled", text)
    return int(match.group(1).replace(",", "")) if match else 0


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_long_column_names_are_whole_and_what_is_left_out_is_counted(library: str) -> None:
    columns = wide_columns()
    frame: Any = pd.DataFrame(columns)
    if library == "polars":
        pl = pytest.importorskip("polars")
        frame = pl.DataFrame({k: list(v) for k, v in columns.items()})
    names = list(columns)
    text = describe_frame("trips", frame).text
    assert len(text) <= BUDGET_CHARS
    assert_no_cut_names(text, names)
    assert re.search(rf"^  {re.escape(TRIPS)}: (int64|Int64);", text, re.M)
    profiled = int(re.search(r"columns \((\d+) of 63 profiled\)", text).group(1))  # type: ignore[union-attr]
    assert profiled + left_out_count(text) == 63
    whole, absent = names_in(text, names)
    not_listed = re.search(r"; ([\d,]+) more not listed", text)
    assert len(absent) == (int(not_listed.group(1)) if not_listed else 0)
    assert TRIPS in text[text.index("first 5 rows") :]  # the first rows' table keeps the header whole too


def test_very_long_names_cost_statistics_not_letters() -> None:
    name = "Observed value of " + "the very long measurement " * 6 + "(kg)"
    frame = pd.DataFrame({f"{name} #{i}": np.arange(4.0) for i in range(10)})
    text = describe_frame("obs", frame).text
    assert "chars cut" not in text and len(text) <= BUDGET_CHARS
    for i in range(10):
        assert f"  {name} #{i}: float64" in text
    assert "statistics left out for 10 column(s) with long names" in text


def test_a_name_longer_than_the_whole_section_is_left_out_and_counted() -> None:
    huge = "x" * 6_000
    frame = pd.DataFrame({"short": [1, 2], huge: [3, 4]})
    text = describe_frame("odd", frame).text
    assert len(text) <= BUDGET_CHARS and "chars cut" not in text
    assert "  short: int64" in text and "columns (1 of 2 profiled)" in text
    assert "… and 1 more columns, not profiled" in text and "1 more not listed" in text


def test_short_frames_read_as_before() -> None:
    frame = pd.DataFrame({"age": [31.0, None, 45.0], "city": ["Paris", None, "Lyon"]})
    text = describe_frame("df", frame).text
    assert "columns (2 of 2 profiled):" in text and "age: float64; 1 nulls (33.3%); min 31, max 45" in text
    assert "first 3 rows:" in text and "not profiled" not in text
