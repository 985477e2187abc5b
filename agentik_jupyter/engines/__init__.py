"""Lazy and distributed frames (Dask, Polars LazyFrame, DuckDB, PySpark), summarised by their engine.

`engine_of(obj)` recognises one through the modules the user already imported (never
importing an engine to test a type), `describe(obj, name, budget)` is the bounded text for
describe_dataframe / inspect_variable, and `one_line(obj)` the metadata-only shape for
list_variables and the turn's context. See base.py for how the budget and Stop reach the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentik_jupyter.engines.base import Engine, cancel_running
from agentik_jupyter.engines.dask_engine import DaskEngine, is_dask_frame
from agentik_jupyter.engines.duckdb_engine import DuckDBEngine, is_relation
from agentik_jupyter.engines.limits import BUDGET_CHARS, BUDGET_ENV, describe_budget_s
from agentik_jupyter.engines.polars_lazy import PolarsLazyEngine, is_lazy_frame
from agentik_jupyter.engines.spark_engine import SparkEngine, is_spark_frame
from agentik_jupyter.engines.summarize import describe_text

__all__ = ["BUDGET_CHARS", "BUDGET_ENV", "Engine", "cancel_running", "describe", "engine_of", "one_line"]

# The module a frame's class lives in, first part, for each engine: a cheap gate before isinstance.
_ROOTS: dict[str, tuple[Callable[[Any], bool], Callable[[Any], Any]]] = {
    "dask": (is_dask_frame, DaskEngine),
    "dask_expr": (is_dask_frame, DaskEngine),
    "polars": (is_lazy_frame, PolarsLazyEngine),
    "duckdb": (is_relation, DuckDBEngine),
    "_duckdb": (is_relation, DuckDBEngine),
    "pyspark": (is_spark_frame, SparkEngine),
}


def engine_of(obj: Any) -> Engine | None:
    """The engine adapter for a lazy or distributed frame, None for anything else (pandas included)."""
    root = (type(obj).__module__ or "").split(".")[0]
    entry = _ROOTS.get(root)
    if entry is None:
        return None
    test, make = entry
    try:
        return make(obj) if test(obj) else None
    except Exception:
        return None


def describe(obj: Any, name: str, budget: float | None = None, columns: list[str] | None = None) -> str:
    """The engine-computed summary of `obj` within `budget` seconds (AGENTIK_DESCRIBE_BUDGET_S by default)."""
    engine = engine_of(obj)
    if engine is None:
        raise TypeError(f"{name!r} is not a Dask, Polars lazy, DuckDB or PySpark frame")
    return describe_text(engine, name, columns, describe_budget_s() if budget is None else budget)


def one_line(obj: Any) -> str | None:
    """`lazy: 4 columns, 200 partitions` from metadata only (no engine work), None if not an engine frame."""
    engine = engine_of(obj)
    if engine is None:
        return None
    try:
        n_columns = len(engine.schema())
        layout = engine.layout()
    except Exception as exc:
        return f"lazy (schema unavailable: {type(exc).__name__})"
    return f"{n_columns:,} columns, {layout}; rows not counted"
