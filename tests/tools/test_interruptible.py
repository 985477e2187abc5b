"""`interruptible()`: SIGINT raises in the block's own code, and only there.

Real signals to this process, a real event loop on the main thread, and a previous handler
that does what ipykernel's does during an async cell: it only records the signal (ipykernel
schedules the cell's cancellation on the loop). The kernel-level behaviour is in
test_interrupt_wait_code.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from agentik_jupyter.tools.interruptible import interruptible

pytestmark = pytest.mark.timeout(30)


class Recorder:
    """The handler in place before the block (ipykernel's would schedule a cancellation)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.calls += 1


@pytest.fixture
def previous() -> Iterator[Recorder]:
    recorder = Recorder()
    saved = signal.signal(signal.SIGINT, recorder)
    try:
        yield recorder
    finally:
        signal.signal(signal.SIGINT, saved)


def sigint_after(seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def run(coro_fn: Callable[[], Any]) -> Any:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro_fn())
    finally:
        loop.close()


def spin(seconds: float) -> bool:
    """Hold the thread (as `while True: pass` would); True if it ran its whole time."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return True


def test_a_signal_in_the_blocks_code_raises_there(previous: Recorder) -> None:
    flagged: list[bool] = []

    async def turn() -> str:
        sigint_after(0.2)
        started = time.monotonic()
        try:
            with interruptible(on_interrupt=lambda: flagged.append(True)):
                spin(10)
        except KeyboardInterrupt:
            assert time.monotonic() - started < 5
            return "interrupted"
        return "ran to the end"

    assert run(turn) == "interrupted"
    assert flagged == [True] and previous.calls == 0
    assert signal.getsignal(signal.SIGINT) is previous, "the previous handler is back in place"


def test_a_signal_while_the_block_awaits_goes_to_the_previous_handler(previous: Recorder) -> None:
    async def turn() -> str:
        sigint_after(0.2)
        deadline = time.monotonic() + 60
        with interruptible():
            while not previous.calls and time.monotonic() < deadline:
                await asyncio.sleep(0.05)  # the loop waits: nothing of the block's code runs
        return "slept"

    assert run(turn) == "slept"
    assert previous.calls == 1


def test_another_tasks_code_is_not_hit(previous: Recorder) -> None:
    async def blocked_turn() -> None:
        with interruptible():
            await asyncio.sleep(1.0)

    async def other() -> bool:
        await asyncio.sleep(0.1)  # the block awaits (its sleep ends later, however slow the machine)
        os.kill(os.getpid(), signal.SIGINT)  # handled at the next line of this task's code: not the block's
        return spin(0.1)

    async def both() -> list[Any]:
        return await asyncio.gather(blocked_turn(), other())

    assert run(both)[1] is True
    assert previous.calls == 1


def test_a_handler_saved_by_someone_else_only_passes_the_signal_on(previous: Recorder) -> None:
    """ipykernel saves the handler in place when a cell starts and restores it when the cell
    ends, maybe after the block is over: then it must only hand the signal on."""
    kept: list[Any] = []

    async def turn() -> None:
        with interruptible():
            kept.append(signal.signal(signal.SIGINT, signal.default_int_handler))  # a cell starts
        signal.signal(signal.SIGINT, kept[0])  # the cell ends, after the block

    run(turn)
    assert signal.getsignal(signal.SIGINT) is kept[0] and kept[0] is not previous
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)
    assert previous.calls == 1
