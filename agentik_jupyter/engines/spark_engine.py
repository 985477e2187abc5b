"""PySpark DataFrames (classic, local or cluster): one `agg` job for the statistics, `limit` for the rest.

Each call runs in its own job group, set in the worker thread that runs it (PySpark pins
Python threads to JVM threads, so the group applies to that call only), and the budget or
Stop calls `cancelJobGroup`, which interrupts the running tasks. The fallback sample is the
first SAMPLE_ROWS rows: `df.sample()` still reads every row, `limit` stops the scan early.
Spark Connect frames are recognised too but cancelled through `interruptTag`.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

from agentik_jupyter.engines.base import Head, Job, StatsResult, first_rows_sample, stats_from_row
from agentik_jupyter.engines.limits import SAMPLE_ROWS

_groups = itertools.count(1)


def is_spark_frame(value: Any) -> bool:
    sql = sys.modules.get("pyspark.sql")
    kind = getattr(sql, "DataFrame", None) if sql is not None else None
    return isinstance(kind, type) and isinstance(value, kind)


def _col(name: str) -> Any:
    functions = sys.modules["pyspark.sql.functions"]
    return functions.col("`" + name.replace("`", "``") + "`")


class SparkEngine:
    label = "PySpark DataFrame"

    def __init__(self, df: Any) -> None:
        self.df = df
        import pyspark.sql.functions  # noqa: F401  (pyspark.sql is loaded, so this is a cached submodule)
        import pyspark.sql.types  # noqa: F401

        self.F = sys.modules["pyspark.sql.functions"]
        self.T = sys.modules["pyspark.sql.types"]

    def schema(self) -> list[tuple[str, str]]:
        return [(f.name, f.dataType.simpleString()) for f in self.df.schema.fields]

    def layout(self) -> str:
        try:
            master = self.df.sparkSession.sparkContext.master
        except Exception:
            master = "Spark Connect"
        return f"lazy (a Spark plan; {master})"

    def cheap_rows(self) -> int | None:
        return None

    def _job(self, action: Any) -> Job[Any]:
        """Run `action()` in its own job group (or tag) so it can be cancelled from another thread."""
        group = f"agentik-describe-{next(_groups)}"
        spark = self.df.sparkSession
        try:
            sc = spark.sparkContext
        except Exception:
            sc = None

        def run() -> Any:
            if sc is not None:
                sc.setJobGroup(group, "agentik describe_dataframe", interruptOnCancel=True)
                try:
                    return action()
                finally:
                    sc.setLocalProperty("spark.jobGroup.id", None)
            spark.addTag(group)
            try:
                return action()
            finally:
                spark.removeTag(group)

        def cancel() -> None:
            if sc is not None:
                sc.cancelJobGroup(group)
            else:
                spark.interruptTag(group)

        return Job(run, cancel)

    def head(self, n: int) -> Job[Head]:
        names = list(self.df.columns)
        return self._job(lambda: Head(names, [tuple(r) for r in self.df.limit(n).collect()]))

    def count(self) -> Job[int]:
        return self._job(lambda: int(self.df.count()))

    def _stats(self, frame: Any, columns: list[str]) -> Job[StatsResult]:
        F, T = self.F, self.T
        types = {f.name: f.dataType for f in self.df.schema.fields}
        exprs = [F.count(F.lit(1))]
        plan: list[tuple[str, list[str]]] = []
        for name in columns:
            dtype, col = types[name], _col(name)
            numeric = isinstance(dtype, T.NumericType)
            parts = ["nulls"]
            exprs.append(F.count(F.when(col.isNull(), 1)))
            if numeric or isinstance(dtype, (T.DateType, T.TimestampType)):
                parts += ["min", "max"]
                exprs += [F.min(col), F.max(col)]
            if numeric:
                parts.append("mean")
                exprs.append(F.avg(col))
            if not isinstance(dtype, (T.ArrayType, T.MapType, T.StructType)):
                parts.append("distinct")
                exprs.append(F.approx_count_distinct(col))
            plan.append((name, parts))

        def action() -> StatsResult:
            return stats_from_row(list(frame.agg(*exprs).collect()[0]), plan)

        return self._job(action)

    def full_stats(self, columns: list[str]) -> Job[StatsResult]:
        return self._stats(self.df, columns)

    def sample_stats(self, columns: list[str], total_rows: int | None) -> Job[StatsResult]:
        return first_rows_sample(self._stats(self.df.limit(SAMPLE_ROWS), columns), "limit")
