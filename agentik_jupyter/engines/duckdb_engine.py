"""DuckDB relations: SQL aggregates on the relation, `LIMIT` for the head and the sample.

A relation is a query, not data, so nothing is pulled into Python but the aggregate
row and the first rows. Cancel is the connection's `interrupt()`. The fallback sample
is the relation's first SAMPLE_ROWS rows: DuckDB's `USING SAMPLE` still scans (and, for a
generated relation, computes) every row, so it does not bound the time; a `LIMIT` does.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from agentik_jupyter.engines.base import Head, Job, StatsResult, first_rows_sample, stats_from_row
from agentik_jupyter.engines.limits import SAMPLE_ROWS

_VIEW = "agentik_rel"
T = TypeVar("T")
_NUMERIC = re.compile(r"^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|REAL|DECIMAL.*|NUMERIC.*)$")
_ORDERED = re.compile(r"^(DATE|TIME.*|TIMESTAMP.*|INTERVAL)$")
_NESTED = re.compile(r"(\[|STRUCT|MAP|UNION)")


def is_relation(value: Any) -> bool:
    duckdb = sys.modules.get("duckdb")
    relation = getattr(duckdb, "DuckDBPyRelation", None) if duckdb is not None else None
    return isinstance(relation, type) and isinstance(value, relation)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class DuckDBEngine:
    label = "DuckDB relation"

    def __init__(self, relation: Any) -> None:
        self.rel = relation

    def schema(self) -> list[tuple[str, str]]:
        return [(str(n), str(t)) for n, t in zip(self.rel.columns, self.rel.types)]

    def layout(self) -> str:
        return "lazy (a query; rows are not materialised)"

    def cheap_rows(self) -> int | None:
        return None

    def _cancel(self) -> None:
        con = getattr(self.rel, "_con", None)
        if con is not None and hasattr(con, "interrupt"):
            con.interrupt()
            return
        duckdb = sys.modules.get("duckdb")
        if duckdb is not None:
            duckdb.interrupt()

    def _quietly(self, fetch: Callable[[], T]) -> T:
        """Run `fetch` with DuckDB's progress bar off (it would print into the user's cell), then restore it."""
        con = getattr(self.rel, "_con", None)
        if con is None:
            return fetch()
        try:
            was = con.sql("SELECT current_setting('enable_progress_bar')").fetchall()[0][0]
            con.execute("SET enable_progress_bar = false")
        except Exception:
            return fetch()
        try:
            return fetch()
        finally:
            con.execute(f"SET enable_progress_bar = {'true' if was else 'false'}")

    def _query(self, sql: str) -> Job[list[tuple[Any, ...]]]:
        return Job(lambda: self._quietly(lambda: self.rel.query(_VIEW, sql).fetchall()), self._cancel)

    def head(self, n: int) -> Job[Head]:
        def run() -> Head:
            return Head([str(c) for c in self.rel.columns], self._quietly(lambda: self.rel.limit(n).fetchall()))

        return Job(run, self._cancel)

    def count(self) -> Job[int]:
        job = self._query(f"SELECT count(*) FROM {_VIEW}")
        return Job(lambda: int(job.run()[0][0]), job.cancel)

    def _stats(self, columns: list[str], source: str) -> Job[StatsResult]:
        dtypes = dict(self.schema())
        exprs = ["count(*)"]
        plan: list[tuple[str, list[str]]] = []
        for name in columns:
            q, kind = _quote(name), dtypes[name].upper()
            parts = ["nulls"]
            exprs.append(f"count(*) - count({q})")
            if _NUMERIC.match(kind) or _ORDERED.match(kind):
                parts += ["min", "max"]
                exprs += [f"min({q})", f"max({q})"]
            if _NUMERIC.match(kind):
                parts.append("mean")
                exprs.append(f"avg({q})")
            if not _NESTED.search(kind):
                parts.append("distinct")
                exprs.append(f"approx_count_distinct({q})")
            plan.append((name, parts))
        job = self._query(f"SELECT {', '.join(exprs)} FROM {source}")

        def run() -> StatsResult:
            return stats_from_row(list(job.run()[0]), plan)

        return Job(run, job.cancel)

    def full_stats(self, columns: list[str]) -> Job[StatsResult]:
        return self._stats(columns, _VIEW)

    def sample_stats(self, columns: list[str], total_rows: int | None) -> Job[StatsResult]:
        return first_rows_sample(self._stats(columns, f"(SELECT * FROM {_VIEW} LIMIT {SAMPLE_ROWS})"), "LIMIT")
