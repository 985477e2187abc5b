"""SIGINT raises KeyboardInterrupt in a turn's tool code, whoever holds the signal.

Plain Python raises KeyboardInterrupt wherever the main thread is; a kernel does not.
An idle ipykernel ignores SIGINT, and while an async cell runs (a `%%agent --wait` cell
is a top-level `await`) ipykernel's handler only schedules the cell's cancellation on
the event loop. A tool that runs synchronously on that loop (run_code's user code, a
plain `@tool`) holds the loop, so the cancellation waited for it: `time.sleep(20)` ran
its 20 s, `while True: pass` forever.

While `interruptible()` is active around a tool call, SIGINT raises KeyboardInterrupt
right where it lands if that is this tool's own code: the running task is the one
that entered the block (a ContextVar tells, so neither another task nor the loop's
idle wait is hit), and the innermost frame is neither asyncio's nor this package's
(its bookkeeping must not break halfway). Anywhere else the signal goes to the
handler that was in place before (which cancels the cell, stops the turn, or raises).
A worker thread (`thread=True`) cannot be interrupted: its await is cancelled instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_MACHINERY = (
    os.path.dirname(asyncio.__file__) + os.sep,
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
)

_region: contextvars.ContextVar[asyncio.Task[Any] | None] = contextvars.ContextVar(
    "agentik_interruptible", default=None
)


def lands_in_tool_code(frame: FrameType | None) -> bool:
    """Whether a signal arriving now, at `frame`, may raise: inside an `interruptible()`
    block's own task, in code that is neither the loop's nor ours."""
    task = _region.get()
    if task is None or _current_task() is not task:
        return False
    return frame is not None and not frame.f_code.co_filename.startswith(_MACHINERY)


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no loop runs in this thread
        return None


class _Handler:
    """The SIGINT handler of one block; after the block it only passes the signal on."""

    def __init__(self, previous: Any, on_interrupt: Callable[[], None] | None) -> None:
        self.previous = previous
        self.on_interrupt = on_interrupt
        self.active = True

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.active and lands_in_tool_code(frame):
            if self.on_interrupt is not None:
                self.on_interrupt()
            raise KeyboardInterrupt
        previous = self.previous
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            raise KeyboardInterrupt


@contextmanager
def interruptible(on_interrupt: Callable[[], None] | None = None) -> Iterator[None]:
    """Let SIGINT raise KeyboardInterrupt in the code this block runs (see the module doc).

    `on_interrupt` runs in the signal handler before the raise (keep it to setting a flag):
    a tool that swallows the KeyboardInterrupt still lets the caller see it happened.
    Outside the main thread, or with no running task, the block changes nothing.
    """
    task = _current_task()
    if task is None:
        yield
        return
    token = _region.set(task)
    handler: _Handler | None = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGINT)
        if previous is not None:  # None: a handler set outside Python, which could not be restored
            handler = _Handler(previous, on_interrupt)
            signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        _region.reset(token)
        if handler is not None:
            handler.active = False  # if someone saved it meanwhile, it now only passes the signal on
            if signal.getsignal(signal.SIGINT) is handler:
                signal.signal(signal.SIGINT, previous)
