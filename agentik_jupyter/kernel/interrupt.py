"""Jupyter's Interrupt (SIGINT to the kernel) stops the agent's turn, like Stop.

An idle ipykernel ignores SIGINT, so a background turn would run on after the
user pressed ■. While no cell runs, this handler takes SIGINT instead: if the
signal lands while the running turn executes synchronous code (a tool, or user
code in `run_code`), it raises KeyboardInterrupt there, which the orchestrator
turns into an interrupted turn; otherwise (the turn waits for the model or for
a worker thread) it stops the turn from the main loop. A cell that is running
keeps ipykernel's own handler; a `%%agent --wait` cell is cancelled by it and
stops its turn itself.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from types import FrameType
from typing import Any, Callable

_ASYNCIO_DIR = os.path.dirname(asyncio.__file__)


def install(running_turn: Callable[[], asyncio.Future[Any] | None], stop: Callable[[], None],
            loop: asyncio.AbstractEventLoop) -> bool:
    """Take SIGINT while the kernel would ignore it; True if the handler is in place."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return False

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        turn = running_turn()
        if turn is None:
            return
        if asyncio.current_task(loop) is turn and not _in_asyncio(frame):
            raise KeyboardInterrupt
        loop.call_soon_threadsafe(stop)

    signal.signal(signal.SIGINT, on_sigint)
    return True


def _in_asyncio(frame: FrameType | None) -> bool:
    """The signal arrived in the loop's own machinery, where an exception must not land."""
    return frame is not None and frame.f_code.co_filename.startswith(_ASYNCIO_DIR)
