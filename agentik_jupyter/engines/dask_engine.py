"""Dask DataFrames and Series: reductions computed by Dask, a few whole partitions as the sample.

Everything is one `dask.compute` (or one `Client.compute` when a distributed Client is the
default), so partitions are produced once per phase and reduced where they are; only the
reductions and the first rows come back. Cancel: on the local schedulers a pretask callback
raises once cancelled, so no further task starts; on distributed, `Client.cancel` on the
futures. The sample is SAMPLE_PARTITION_SHARE of the partitions, spread evenly, computed whole:
a true engine-side sample whose row count also estimates the total.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentik_jupyter.engines.base import ColumnStats, Head, Job, StatsResult
from agentik_jupyter.engines.limits import KMV_SIZE, MAX_DASK_THREADS, MIN_SAMPLE_PARTITIONS, SAMPLE_PARTITION_SHARE


class _Cancelled(Exception):
    """Raised inside the local scheduler's loop to stop it starting more tasks."""


def is_dask_frame(value: Any) -> bool:
    dd = sys.modules.get("dask.dataframe")
    if dd is None:
        return False
    kinds = tuple(k for k in (getattr(dd, "DataFrame", None), getattr(dd, "Series", None)) if isinstance(k, type))
    return bool(kinds) and isinstance(value, kinds)


def _client() -> Any | None:
    """The default distributed Client, if the user made one (never starts one)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    try:
        return distributed.default_client()
    except (ValueError, AttributeError):
        return None


def _compute(build: Callable[[], list[Any]]) -> Job[list[Any]]:
    """Compute the collections `build()` returns (built in the worker: dask-expr optimises there); cancellable."""
    client = _client()
    if client is not None:
        futures: list[Any] = []

        def run_distributed() -> list[Any]:
            futures.extend(client.compute(build()))
            return list(client.gather(futures))

        return Job(run_distributed, lambda: client.cancel(futures) if futures else None)

    import dask  # the user's dask.dataframe is loaded, so dask is already imported

    cancelled = threading.Event()

    def pretask(key: Any, dsk: Any, state: Any) -> None:
        if cancelled.is_set():
            raise _Cancelled("cancelled")

    def run_local() -> list[Any]:
        # Passing the scheduler function keeps dask from importing `distributed` (seconds, cold)
        # just to look for a Client we already know is not there.
        scheduler = dask.config.get("scheduler", None) or "threads"
        if isinstance(scheduler, str):
            scheduler = sys.modules["dask.base"].named_schedulers.get(scheduler.lower(), scheduler)
        threaded = sys.modules.get("dask.threaded")
        pool = None
        if threaded is not None and scheduler is threaded.get and dask.config.get("pool", None) is None:
            pool = _own_pool(threaded, dask.config.get("num_workers", None))
        try:
            return list(
                dask.compute(
                    *build(),
                    scheduler=scheduler,
                    callbacks=[(None, None, pretask, None, None)],
                    **({"pool": pool} if pool is not None else {}),
                )
            )
        finally:
            if pool is not None:
                pool.shutdown(wait=True)

    return Job(run_local, cancelled.set)


def _own_pool(threaded: Any, num_workers: int | None) -> Any:
    """Threads for this one call, drained before the call returns.

    A cancel stops dask starting tasks, not the ones running (a partition may take seconds and
    hundreds of MB to make). On dask's shared pool they would go on after the call had failed, beside
    the next phase's; waiting for our own pool keeps them inside the call, so the runner knows when
    the work, and its memory, is really gone. MAX_DASK_THREADS caps the partitions held at once.
    """
    workers = num_workers or min(os.cpu_count() or 1, MAX_DASK_THREADS)
    executor = getattr(threaded, "ContextAwareThreadPoolExecutor", ThreadPoolExecutor)
    return executor(max_workers=workers, thread_name_prefix="agentik-dask")


def _partition_stats(part: Any, keys: list[Any], ordered: set[Any], numeric: set[Any]) -> dict[str, Any]:
    """Reductions of one pandas partition, small enough to send back: counts, extremes, sums, a KMV sketch."""
    hash_object = sys.modules["pandas"].util.hash_pandas_object
    np = sys.modules["numpy"]
    out: dict[Any, Any] = {"__rows": len(part)}
    for key in keys:
        column = part[key]
        valid = column.dropna() if column.hasnans else column
        stats: dict[str, Any] = {"nulls": len(part) - len(valid), "n": len(valid)}
        if len(valid) and key in ordered:
            stats["min"], stats["max"] = valid.min(), valid.max()
        if len(valid) and key in numeric:
            stats["sum"] = float(valid.sum())
        try:
            stats["sketch"] = _smallest_distinct(np, hash_object(valid, index=False).to_numpy())
        except TypeError:
            stats["sketch"] = None
        out[key] = stats
    return out


def _first_rows(part: Any, n: int) -> Any:
    return part.head(n)


def _smallest_distinct(np: Any, hashes: Any) -> Any:
    """The KMV_SIZE smallest distinct hashes (sort + neighbour compare: numpy's unique is far slower here)."""
    ordered = np.sort(hashes)
    if len(ordered) > 1:
        ordered = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
    return ordered[:KMV_SIZE].copy()  # a slice would keep the whole sorted partition alive until the combine


def _distinct(sketches: list[Any]) -> int | None:
    """Distinct values from k-minimum-values sketches: exact below KMV_SIZE, estimated above."""
    if any(s is None for s in sketches) or not sketches:
        return None
    np = sys.modules["numpy"]
    merged = _smallest_distinct(np, np.concatenate(sketches))
    if len(merged) < KMV_SIZE:
        return int(len(merged))
    kth = float(merged[KMV_SIZE - 1]) / float(2**64)
    return int((KMV_SIZE - 1) / kth)


def _combine(partials: list[dict[Any, Any]], keys: list[Any]) -> tuple[int, dict[Any, ColumnStats]]:
    rows = sum(p["__rows"] for p in partials)
    result: dict[Any, ColumnStats] = {}
    for key in keys:
        parts = [p[key] for p in partials]
        mins = [p["min"] for p in parts if "min" in p]
        maxs = [p["max"] for p in parts if "max" in p]
        n = sum(p["n"] for p in parts)
        sums = [p["sum"] for p in parts if "sum" in p]
        result[key] = ColumnStats(
            nulls=sum(p["nulls"] for p in parts),
            min=min(mins) if mins else None,
            max=max(maxs) if maxs else None,
            mean=sum(sums) / n if sums and n else None,
            distinct=_distinct([p["sketch"] for p in parts]),
        )
    return rows, result


def _numeric(dtype: Any) -> bool:
    return getattr(dtype, "kind", "") in "iuf" and str(dtype) != "bool"


def _ordered(dtype: Any) -> bool:
    return _numeric(dtype) or getattr(dtype, "kind", "") in "mM"


class DaskEngine:
    def __init__(self, value: Any) -> None:
        series = type(value).__name__ == "Series"
        self.label = "Dask Series" if series else "Dask DataFrame"
        self.df = value.to_frame() if series else value

    def schema(self) -> list[tuple[str, str]]:
        return [(str(n), str(t)) for n, t in self.df.dtypes.items()]

    def layout(self) -> str:
        where = "distributed Client" if _client() is not None else "local scheduler"
        return f"{self.df.npartitions:,} partitions, lazy ({where})"

    def cheap_rows(self) -> int | None:
        return None

    def head(self, n: int) -> Job[Head]:
        """The first rows of the first partition only (fewer when it is short): one partition's work."""

        def build() -> list[Any]:
            # One delayed task, so no finalize step follows it: once its partition is being made, a
            # cancel cannot stop it, and its rows arrive late rather than not at all (summarize.py).
            first = self.df.partitions[0]
            return [first.map_partitions(_first_rows, n, meta=first._meta).to_delayed()[0]]

        job = _compute(build)

        def run() -> Head:
            frame = job.run()[0]
            return Head([str(c) for c in frame.columns], list(frame.itertuples(index=False, name=None)))

        return Job(run, job.cancel)

    def count(self) -> Job[int]:
        job = _compute(lambda: [self.df.map_partitions(len).sum()])
        return Job(lambda: int(job.run()[0]), job.cancel)

    def _stats(self, frame: Callable[[], Any], columns: list[str]) -> Job[StatsResult]:
        by_name = {str(c): c for c in self.df.columns}
        keys = [by_name[c] for c in columns]
        dtypes = self.df.dtypes
        ordered = {k for k in keys if _ordered(dtypes[k])}
        numeric = {k for k in keys if _numeric(dtypes[k])}

        def build() -> list[Any]:
            delayed = sys.modules["dask"].delayed
            parts = frame()[keys].to_delayed()
            return [delayed(_combine)([delayed(_partition_stats)(p, keys, ordered, numeric) for p in parts], keys)]

        job = _compute(build)

        def run() -> StatsResult:
            rows, result = job.run()[0]
            return StatsResult(rows=rows, columns={str(k): v for k, v in result.items()})

        return Job(run, job.cancel)

    def full_stats(self, columns: list[str]) -> Job[StatsResult]:
        return self._stats(lambda: self.df, columns)

    def sample_stats(self, columns: list[str], total_rows: int | None) -> Job[StatsResult]:
        n = self.df.npartitions
        k = min(n, max(MIN_SAMPLE_PARTITIONS, round(n * SAMPLE_PARTITION_SHARE)))
        picked = sorted({(i * n) // k + (n // k) // 2 for i in range(k)})
        job = self._stats(lambda: self.df.partitions[picked], columns)

        def run() -> StatsResult:
            result = job.run()
            if total_rows is None:
                result.estimated_total = round(result.rows * n / len(picked))
            result.sample_how = f"{len(picked):,} of {n:,} partitions, spread evenly"
            result.covers_all = len(picked) == n
            return result

        return Job(run, job.cancel)
