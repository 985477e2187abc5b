"""What every engine adapter provides, and the bounded runner that executes its work.

Why a worker thread: the built-in data tools run on the kernel's main thread (DESIGN.md),
and an engine call (a Spark action, `dask.compute`, a DuckDB query, a Polars collect)
blocks in native code where neither a deadline nor Stop can reach it. So each engine call
runs in a short-lived daemon thread while the calling thread waits on an Event in
POLL_S slices. Reaching the deadline, or any exception raised in the waiting thread
(KeyboardInterrupt from a kernel interrupt, i.e. Stop, or the kernel's own signal-based
time budget), cancels the work *through the engine* — Spark `cancelJobGroup`, a Dask
callback that stops the local scheduler or `Client.cancel` on distributed futures, DuckDB
`interrupt()`, Polars `InProcessQuery.cancel()` — so no CPU keeps burning and no data
keeps arriving after the tool has answered. The thread is given CANCEL_GRACE_S to wind
down; it is a daemon and holds no user state, so the tool answers without it. But the next
engine call waits for it (within its own deadline) rather than run beside it: a cancelled
Dask phase finishes the partitions it had started, and phases overlapping that way held
1.3 GB of a 220M-row frame at once.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from agentik_jupyter.engines.limits import CANCEL_GRACE_S, POLL_S, SAMPLE_ROWS

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


def _not_late(until: float | None = None) -> None:
    return None


class OverBudget(Exception):
    """The engine's work did not finish before its deadline and was cancelled.

    `late(until)` is its value if the call, left to wind down, finishes anyway by the monotonic
    time `until` (waited for; now if None), else None.
    """

    def __init__(self, message: str, late: Callable[[float | None], Any] = _not_late) -> None:
        super().__init__(message)
        self.late = late


@dataclass
class Job(Generic[T_co]):
    """One engine call: `run` does it (in the worker thread), `cancel` stops it from another thread."""

    run: Callable[[], T_co]
    cancel: Callable[[], None] = lambda: None


@dataclass
class ColumnStats:
    nulls: int | None = None
    min: Any = None
    max: Any = None
    mean: float | None = None
    distinct: int | None = None


@dataclass
class StatsResult:
    """Statistics over `rows` rows; `sample_how` says which rows when they are a sample."""

    rows: int
    columns: dict[str, ColumnStats]
    sample_how: str = ""
    estimated_total: int | None = None
    covers_all: bool = False


@dataclass
class Head:
    names: list[str]
    rows: list[tuple[Any, ...]]


@dataclass
class Summary:
    """Everything the text is rendered from; engines fill it, describe.py orchestrates."""

    label: str
    name: str
    schema: list[tuple[str, str]]
    layout: str = ""
    rows: int | None = None
    rows_exact: bool = False
    rows_note: str = ""
    profiled: list[str] = field(default_factory=list)
    stats: StatsResult | None = None
    stats_note: str = ""
    head: Head | None = None
    notes: list[str] = field(default_factory=list)


class Engine(Protocol):
    """An adapter around one lazy or distributed frame; every method is metadata or a Job."""

    label: str

    def schema(self) -> list[tuple[str, str]]: ...

    def layout(self) -> str: ...

    def cheap_rows(self) -> int | None: ...

    def head(self, n: int) -> Job[Head]: ...

    def count(self) -> Job[int]: ...

    def full_stats(self, columns: list[str]) -> Job[StatsResult]: ...

    def sample_stats(self, columns: list[str], total_rows: int | None) -> Job[StatsResult]: ...


_running: set[Callable[[], None]] = set()
_abandoned: list[threading.Event] = []  # the done events of cancelled calls still winding down
_running_lock = threading.Lock()


def stats_from_row(row: list[Any], plan: list[tuple[str, list[str]]]) -> StatsResult:
    """One aggregate row (the row count, then each column's parts in `plan` order) as StatsResult."""
    values = iter(row)
    rows = int(next(values))
    result: dict[str, ColumnStats] = {}
    for name, parts in plan:
        stats = ColumnStats()
        for part in parts:
            value = next(values)
            setattr(stats, part, int(value) if part in ("nulls", "distinct") else value)
        result[name] = stats
    return StatsResult(rows=rows, columns=result)


def first_rows_sample(job: Job[StatsResult], via: str) -> Job[StatsResult]:
    """Statistics on the first SAMPLE_ROWS rows (`job` computes them), labelled as such.

    DuckDB, Spark and Polars read every row for a random sample, so their fallback is a prefix.
    """

    def run() -> StatsResult:
        result = job.run()
        result.sample_how = f"its first rows, via {via}"
        result.covers_all = result.rows < SAMPLE_ROWS
        return result

    return Job(run, job.cancel)


def cancel_running() -> int:
    """Cancel every engine call in flight (for a Stop arriving from another thread); returns how many."""
    with _running_lock:
        cancels = list(_running)
    for cancel in cancels:
        _cancel_quietly(cancel)
    return len(cancels)


def _cancel_quietly(cancel: Callable[[], None]) -> None:
    try:
        cancel()
    except Exception:
        pass


def _wait_for_abandoned(deadline: float) -> None:
    """Wait until cancelled calls that were still winding down have ended, or raise OverBudget.

    A cancel stops an engine starting work, not the piece it is on (a Dask partition can take
    seconds and hundreds of MB to make); starting the next call beside it would hold both in memory,
    and every phase of a describe that misses its deadline would add one more.
    """
    while True:
        with _running_lock:
            pending = [event for event in _abandoned if not event.is_set()]
            _abandoned[:] = pending
        if not pending:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise OverBudget("earlier cancelled engine work is still stopping")
        pending[0].wait(min(POLL_S, left))


def run_bounded(job: Job[T], deadline: float) -> T:
    """Run `job` until the monotonic `deadline`; cancel it through the engine on timeout or interrupt.

    A call that has not stopped CANCEL_GRACE_S after its cancel is left to finish in its thread; the
    next call waits for it (within its own deadline), and it hands its freed memory back when it ends.
    A cancelled call's error is dropped, never kept: its traceback holds the engine's frames, and
    with them the partitions they were working on, in a cycle only a full collection would free.
    """
    box: dict[str, Any] = {}
    done = threading.Event()
    state = {"finished": False, "abandoned": False}
    state_lock = threading.Lock()

    def target() -> None:
        try:
            box["value"] = job.run()
        except BaseException as exc:
            box["error"] = exc
        finally:
            with state_lock:
                state["finished"] = True
                if state["abandoned"]:
                    box.pop("error", None)
            if state["abandoned"]:
                release_freed_memory()
            done.set()

    def give_up() -> None:
        """After a cancel: drop the error, or leave the call to drop it when it ends."""
        done.wait(CANCEL_GRACE_S)
        with state_lock:
            if state["finished"]:
                box.pop("error", None)
                return
            state["abandoned"] = True
        with _running_lock:
            _abandoned.append(done)

    def late(until: float | None = None) -> Any:
        if until is not None:
            done.wait(max(until - time.monotonic(), 0.0))
        return box.get("value") if done.is_set() else None

    if deadline - time.monotonic() <= 0:
        raise OverBudget("no time left")
    _wait_for_abandoned(deadline)
    with _running_lock:
        _running.add(job.cancel)
    try:
        threading.Thread(target=target, name="agentik-engine", daemon=True).start()
        try:
            while not done.wait(min(POLL_S, max(deadline - time.monotonic(), 0.0))):
                if time.monotonic() >= deadline:
                    break
        except BaseException:
            _cancel_quietly(job.cancel)
            give_up()
            raise
        if not done.is_set():
            _cancel_quietly(job.cancel)
            give_up()
            raise OverBudget("cancelled at the deadline", late)
    finally:
        with _running_lock:
            _running.discard(job.cancel)
    error = box.pop("error", None)
    if error is not None:
        try:
            raise error
        finally:
            del error
    return box["value"]


def release_freed_memory() -> None:
    """Hand the memory an engine call freed back to the OS (glibc and Arrow's pool; elsewhere a no-op).

    The engines' worker threads each get a malloc arena, and glibc keeps what pandas/NumPy freed
    there: one 200M-row Dask describe left RSS ~150-250 MB higher with under 10 MB still in use.
    pandas' string columns live in Arrow's pool (mimalloc/jemalloc), which keeps freed pages too
    (dask.datasets.timeseries: up to 300 MB for seconds). distributed's workers trim the same way.
    """
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        try:
            arrow.default_memory_pool().release_unused()
        except Exception:
            pass
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
