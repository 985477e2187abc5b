"""Every limit of the engine summaries in one place.

The character budget matches tools/dataframes.py (BUDGET_CHARS) so a lazy frame
costs the model what a pandas frame does; a test keeps the two equal.
"""

from __future__ import annotations

import os

BUDGET_ENV = "AGENTIK_DESCRIBE_BUDGET_S"
DEFAULT_BUDGET_S = 5.0
# Cumulative shares of the budget by which each phase must be done (describe.py):
# first rows, sample statistics, the exact count, whole-data statistics.
HEAD_SHARE = 0.15
SAMPLE_SHARE = 0.45
COUNT_SHARE = 0.65
FULL_STATS_SHARE = 1.0
# Rows (DuckDB, Spark, Polars) or share of partitions (Dask) in the fallback sample.
SAMPLE_ROWS = 100_000
SAMPLE_PARTITION_SHARE = 0.01
MIN_SAMPLE_PARTITIONS = 1
# Threads (so partitions in memory at once) a local Dask describe uses, at most.
MAX_DASK_THREADS = 4
# Hashes kept per column by the Dask distinct-count sketch (k minimum values; ~3% error).
KMV_SIZE = 1_024
# How long a cancelled engine call may take to wind down before the tool returns anyway.
CANCEL_GRACE_S = 0.5
POLL_S = 0.05

BUDGET_CHARS = 8_000
MAX_COLUMNS = 40
HEAD_ROWS = 5
HEAD_CELL_CHARS = 24
HEAD_CHARS = 2_000
COLUMNS_CHARS = 4_500
NAMES_CHARS = 1_000
STATS_CHARS = 110


def describe_budget_s() -> float:
    """The time budget from AGENTIK_DESCRIBE_BUDGET_S (seconds), DEFAULT_BUDGET_S when unset or bad."""
    raw = os.environ.get(BUDGET_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_BUDGET_S
    return value if value > 0 else DEFAULT_BUDGET_S
