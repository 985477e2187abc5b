"""Polars LazyFrames: one `select` of aggregates, run as a background query that can be cancelled.

`collect(background=True, engine="streaming")` hands back an InProcessQuery whose `cancel()`
asks Polars to stop; the worker thread polls it, so the tool can always abandon the query
at the deadline or on Stop (Polars may finish a running step first). The fallback sample is the first
SAMPLE_ROWS rows (`head` is pushed down into the scan, so it bounds the work).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from agentik_jupyter.engines.base import ColumnStats, Head, Job, StatsResult, first_rows_sample
from agentik_jupyter.engines.limits import POLL_S, SAMPLE_ROWS


def is_lazy_frame(value: Any) -> bool:
    pl = sys.modules.get("polars")
    kind = getattr(pl, "LazyFrame", None) if pl is not None else None
    return isinstance(kind, type) and isinstance(value, kind)


# Cancelled queries are kept until Polars has delivered their (small) results: dropping one
# that is still running makes Polars' worker panic on the closed channel, on stderr.
_parked: list[Any] = []
_PARKED_MAX = 64


def _park(query: Any) -> None:
    _parked.append(query)
    if len(_parked) > _PARKED_MAX:
        del _parked[: len(_parked) - _PARKED_MAX]


def _collect(lazy: Any) -> Job[Any]:
    """Collect `lazy` in Polars' background pool; cancel() stops it."""
    handle: list[Any] = []
    cancelled: list[bool] = []

    def run() -> Any:
        query = lazy.collect(background=True, engine="streaming")
        handle.append(query)
        while True:
            if cancelled:
                query.cancel()
                _park(query)
                raise RuntimeError("cancelled")
            result = query.fetch()
            if result is not None:
                return result
            time.sleep(POLL_S / 5)

    def cancel() -> None:
        cancelled.append(True)
        for query in handle:
            query.cancel()
            _park(query)

    return Job(run, cancel)


class PolarsLazyEngine:
    label = "polars LazyFrame"

    def __init__(self, lazy: Any) -> None:
        self.lf = lazy
        self.pl = sys.modules["polars"]

    def schema(self) -> list[tuple[str, str]]:
        return [(str(n), str(t)) for n, t in self.lf.collect_schema().items()]

    def layout(self) -> str:
        return "lazy (a query plan; not collected)"

    def cheap_rows(self) -> int | None:
        return None

    def head(self, n: int) -> Job[Head]:
        job = _collect(self.lf.head(n))
        return Job(lambda: _head(job.run()), job.cancel)

    def count(self) -> Job[int]:
        job = _collect(self.lf.select(self.pl.len()))
        return Job(lambda: int(job.run().item()), job.cancel)

    def _stats(self, lazy: Any, columns: list[str]) -> Job[StatsResult]:
        pl = self.pl
        schema = self.lf.collect_schema()
        exprs: list[Any] = [pl.len().alias("__rows")]
        plan: list[tuple[str, list[str]]] = []
        for i, name in enumerate(columns):
            dtype, col = schema[name], pl.col(name)
            parts = ["nulls"]
            exprs.append(col.null_count().alias(f"{i}_nulls"))
            if dtype.is_numeric() or dtype.is_temporal():
                parts += ["min", "max"]
                exprs += [col.min().alias(f"{i}_min"), col.max().alias(f"{i}_max")]
            if dtype.is_numeric():
                parts.append("mean")
                exprs.append(col.mean().alias(f"{i}_mean"))
            if not dtype.is_nested():
                parts.append("distinct")
                exprs.append(col.drop_nulls().approx_n_unique().alias(f"{i}_distinct"))
            plan.append((name, parts))
        job = _collect(lazy.select(exprs))

        def run() -> StatsResult:
            row = job.run().row(0, named=True)
            result: dict[str, ColumnStats] = {}
            for i, (name, parts) in enumerate(plan):
                stats = ColumnStats()
                for part in parts:
                    value = row[f"{i}_{part}"]
                    setattr(stats, part, int(value) if part in ("nulls", "distinct") else value)
                result[name] = stats
            return StatsResult(rows=int(row["__rows"]), columns=result)

        return Job(run, job.cancel)

    def full_stats(self, columns: list[str]) -> Job[StatsResult]:
        return self._stats(self.lf, columns)

    def sample_stats(self, columns: list[str], total_rows: int | None) -> Job[StatsResult]:
        return first_rows_sample(self._stats(self.lf.head(SAMPLE_ROWS), columns), "head")


def _head(frame: Any) -> Head:
    return Head([str(c) for c in frame.columns], list(frame.iter_rows()))
