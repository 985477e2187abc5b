"""One queue per session: turns run one at a time in the order they were started, each with its own Stop.

Mixed into Session: cells and panel sends line up here; a queued turn can leave the queue
(its Stop), the running one is stopped through the StopFlag it shares with the orchestrator.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from agentik_jupyter.core.orchestrator import StopFlag, TurnOutcome

log = logging.getLogger(__name__)

DEQUEUED = "Removed from the queue before it started."


class TurnQueue:
    """The parts of Session that line its turns up and stop them."""

    def __init__(self) -> None:
        self._stop = StopFlag()  # the running turn's, shared with the orchestrator (and a tool's SIGINT)
        self._task: asyncio.Task[TurnOutcome] | None = None
        self._waiting: list[asyncio.Task[TurnOutcome]] = []
        self._dequeued: set[asyncio.Future[Any]] = set()
        self._queue_listeners: list[Callable[[], None]] = []
        self._lock = asyncio.Lock()

    @property
    def busy(self) -> bool:
        """A turn is running (queued ones are counted by `queued`)."""
        return self._task is not None and not self._task.done()

    @property
    def queued(self) -> int:
        return len(self._waiting)

    @property
    def turns(self) -> tuple[asyncio.Task[Any], ...]:
        """The running turn's task (if any), then the queued ones', in order."""
        running = (self._task,) if self._task is not None and not self._task.done() else ()
        return (*running, *self._waiting)

    def ahead_of(self, task: asyncio.Future[Any]) -> int | None:
        """How many turns run before `task` (None once it has started or left the queue)."""
        if task not in self._waiting:
            return None
        return self._waiting.index(task) + (1 if self.busy else 0)

    def on_queue(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` whenever a turn joins, leaves or starts from the queue."""
        self._queue_listeners.append(listener)
        return lambda: self._queue_listeners.remove(listener) if listener in self._queue_listeners else None

    def stop(self) -> bool:
        """Cancel the running turn; True if there was one. Queued turns still run."""
        if not self.busy or self._task is None:
            return False
        self._stop.set()
        self._task.cancel()
        return True

    def request_stop(self) -> None:
        """Mark the running turn as stopped without cancelling it yet (safe in a signal
        handler): it ends before its next model call or tool."""
        if self.busy:
            self._stop.set()

    def stop_all(self) -> int:
        """Empty the queue and stop the running turn; how many turns were stopped."""
        count = sum(1 for task in list(self._waiting) if self.cancel(task))
        return count + (1 if self.stop() else 0)

    def cancel(self, task: asyncio.Future[Any]) -> bool:
        """Stop this turn: remove it from the queue, or stop it if it is the running one."""
        if task is self._task:
            return self.stop()
        if task not in self._waiting:
            return False
        self._waiting.remove(task)
        self._dequeued.add(task)
        task.cancel()
        self._queue_changed()
        return True

    def _enqueue(
        self, run: Callable[[], Awaitable[TurnOutcome]], on_start: Callable[[], None] | None
    ) -> asyncio.Task[TurnOutcome]:
        """Queue `run()` as a task on the running loop: it runs when the turns before it have ended,
        after `on_start`."""
        task = asyncio.get_running_loop().create_task(self._queued(run, on_start))
        self._waiting.append(task)
        self._queue_changed()
        return task

    def _queue_changed(self) -> None:
        for listener in list(self._queue_listeners):
            try:
                listener()
            except Exception:
                log.exception("queue listener failed")

    async def _queued(
        self, run: Callable[[], Awaitable[TurnOutcome]], on_start: Callable[[], None] | None
    ) -> TurnOutcome:
        me = asyncio.current_task()
        try:
            await self._lock.acquire()
        except asyncio.CancelledError:
            if me in self._waiting:
                self._waiting.remove(me)
                self._queue_changed()
            if me not in self._dequeued:
                raise
            self._dequeued.discard(me)
            if me is not None:
                me.uncancel()
            return TurnOutcome(reason="interrupted", error=DEQUEUED, error_code="dequeued")
        try:
            if me in self._waiting:
                self._waiting.remove(me)
            self._task, self._stop.requested = me, False
            self._queue_changed()
            if on_start is not None:
                on_start()
            return await run()
        finally:
            self._task = None
            self._lock.release()
            self._queue_changed()
