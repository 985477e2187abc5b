"""Jupyter's Interrupt (SIGINT to the kernel) stops the agent's turn, like Stop.

An idle ipykernel ignores SIGINT, so a background turn would run on after the
user pressed ■. While no cell runs, this handler takes SIGINT instead: if the
signal lands in a tool's own code (a plain tool, or user code in `run_code`;
see agentik_jupyter/tools/interruptible.py, whose handler the orchestrator puts on top
of this one while a tool runs), it raises KeyboardInterrupt there, which the
orchestrator turns into an interrupted turn; otherwise (the turn waits for the
model or for a worker thread, or the signal hit the loop's or our own machinery)
it stops the turn from the main loop. A cell that is running keeps ipykernel's
own handler; a `%%agent --wait` cell is cancelled by it and stops its turn
itself, and a tool of its turn is interrupted by the handler of tools/interruptible.py.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from agentik_jupyter.tools.interruptible import lands_in_tool_code


def install(
    kernel: Any,
    running_turn: Callable[[], asyncio.Future[Any] | None],
    mark: Callable[[], None],
    stop: Callable[[], object],
    loop: asyncio.AbstractEventLoop,
) -> bool:
    """Take SIGINT while the kernel would ignore it; True if the handler is in place.

    During a cell ipykernel has its own handler in place and restores the idle one
    (`saved_sigint_handler`, SIG_IGN) afterwards: ours takes that place.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    during_cell = getattr(kernel, "saved_sigint_handler", None) is signal.SIG_IGN
    if not during_cell and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return False

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        turn = running_turn()
        if turn is None:
            return
        mark()  # even if a tool swallows the KeyboardInterrupt, no further model call is made
        if asyncio.current_task(loop) is turn and lands_in_tool_code(frame):
            # tools/interruptible.py's handler usually raises first; but an async cell that ends while the
            # tool runs puts this one back in its place (tests/kernel/test_interrupt_after_cell.py): raise here too
            raise KeyboardInterrupt  # the turn's tool code runs: it ends there, and records itself
        loop.call_soon_threadsafe(stop)

    if during_cell:
        kernel.saved_sigint_handler = on_sigint
    else:
        signal.signal(signal.SIGINT, on_sigint)
    return True
