"""Summarise a lazy frame through its engine in phases that share one time budget.

Phases, each with a cumulative deadline so time one saves rolls over to the next:
the first rows (limit/head); statistics on an engine-side sample, whose work is bounded
(and which is the whole data when the frame is small); statistics and the row count on the
whole data, replacing the sample's when they fit, after an exact count (cheaper, and when
even counting does not fit, the whole-data statistics are not tried). A phase that misses its deadline is
cancelled through the engine and the text says what is missing or estimated.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from typing import TypeVar

from agentik_jupyter.engines.base import Engine, Job, OverBudget, Summary, release_freed_memory, run_bounded
from agentik_jupyter.engines.limits import (
    COUNT_SHARE,
    FULL_STATS_SHARE,
    HEAD_ROWS,
    HEAD_SHARE,
    MAX_COLUMNS,
    SAMPLE_SHARE,
)
from agentik_jupyter.engines.render import render

T = TypeVar("T")


def pick_columns(frame: str, names: list[str], requested: list[str] | None) -> list[str]:
    """The requested columns (a KeyError with suggestions for unknown ones), else the first MAX_COLUMNS."""
    if not requested:
        return names[:MAX_COLUMNS]
    missing = sorted(set(requested).difference(names))
    if missing:
        close = [m for n in missing for m in difflib.get_close_matches(n, names, n=2)]
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise KeyError(f"{frame!r} has no column(s) {', '.join(repr(m) for m in missing)}{hint}")
    wanted = set(requested)
    return [n for n in names if n in wanted][:MAX_COLUMNS]


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _attempt(job: Job[T], deadline: float) -> tuple[T | None, str, Callable[[float | None], T | None]]:
    """(value, '', …) or (None, why, late): over budget and cancelled, or the engine's error.

    `late(until)` is the value of a cancelled call that finishes while winding down (a Dask head whose
    one partition was already being made) by `until`, else None.
    """
    try:
        return run_bounded(job, deadline), "", _none
    except OverBudget as exc:
        return None, "over budget", exc.late
    except Exception as exc:
        return None, _error(exc), _none


def _none(until: float | None = None) -> None:
    return None


def summarize(engine: Engine, name: str, columns: list[str] | None, budget_s: float) -> Summary:
    """Fill a Summary within `budget_s` seconds (plus the cancel grace) using only engine-side work."""
    started = time.monotonic()
    schema = engine.schema()
    names = [n for n, _ in schema]
    summary = Summary(label=engine.label, name=name, schema=schema, layout=engine.layout())
    summary.profiled = pick_columns(name, names, columns)

    def mark(share: float) -> float:
        return started + budget_s * share

    summary.head, why, late_head = _attempt(engine.head(HEAD_ROWS), mark(HEAD_SHARE))
    cheap = engine.cheap_rows()
    if cheap is not None:
        summary.rows, summary.rows_exact, summary.rows_note = cheap, True, "from metadata"
    try:
        if summary.profiled:
            _statistics(engine, summary, budget_s, mark)
        elif not summary.rows_exact:
            _count(engine, summary, mark(1.0))
    finally:
        release_freed_memory()
    if summary.head is None:  # the budget left over is spent waiting for first rows already on their way
        summary.head = late_head(mark(1.0))
    if summary.head is None:
        summary.notes.append(f"first rows: not shown ({why})")
    return summary


def _count(engine: Engine, summary: Summary, deadline: float) -> bool:
    """The exact row count if it fits; False when counting did not fit (whole-data statistics will not either)."""
    count, why, _ = _attempt(engine.count(), deadline)
    if count is not None:
        summary.rows, summary.rows_exact, summary.rows_note = count, True, ""
        return True
    if summary.rows is None:
        summary.rows_note = "counting did not fit the time budget" if why == "over budget" else why
    return why != "over budget"


def _statistics(engine: Engine, summary: Summary, budget_s: float, mark: Callable[[float], float]) -> None:
    """An engine-side sample's statistics first (bounded work), then the whole data's if they fit."""
    total = summary.rows if summary.rows_exact else None
    sample, sample_why, _ = _attempt(engine.sample_stats(summary.profiled, total), mark(SAMPLE_SHARE))
    if sample is not None and sample.covers_all:
        sample.sample_how = ""
        summary.stats = sample
        summary.rows, summary.rows_exact, summary.rows_note = sample.rows, True, ""
        return
    full, why = None, "over budget"
    if summary.rows_exact or _count(engine, summary, mark(COUNT_SHARE)):
        full, why, _ = _attempt(engine.full_stats(summary.profiled), mark(FULL_STATS_SHARE))
    if full is not None:
        summary.stats = full
        summary.rows, summary.rows_exact, summary.rows_note = full.rows, True, ""
        return
    reason = f"the whole data did not fit the {budget_s:g} s budget" if why == "over budget" else f"whole data: {why}"
    if sample is None:
        summary.stats_note = f"not computed ({reason}; the sample: {sample_why})"
        return
    summary.stats, summary.stats_note = sample, reason
    if not summary.rows_exact and sample.estimated_total is not None:
        summary.rows, summary.rows_exact = sample.estimated_total, False
        summary.rows_note = "from the sample"


def describe_text(engine: Engine, name: str, columns: list[str] | None, budget_s: float) -> str:
    return render(summarize(engine, name, columns, budget_s))
