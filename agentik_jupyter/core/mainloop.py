"""The kernel's main event loop, and how callbacks from other threads reach it.

Cells and the agent's turns run on the kernel's main loop. Since ipykernel 7 the
widget manager's comm messages may be handled on a kernel *subshell*: a thread
with its own event loop. A task, future or timer made there lives on the wrong
loop (a turn there stalls the next cell's turn, a Stop cancels from the wrong
thread). So every widget and comm callback hands its work to the loop captured
here, when the extension loads or the agent is created.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

_main: asyncio.AbstractEventLoop | None = None


def capture(loop: asyncio.AbstractEventLoop | None = None) -> asyncio.AbstractEventLoop | None:
    """Remember the kernel's main loop (the running loop of the main thread by default).

    Only the main thread's loop is taken: a call from a subshell thread never replaces it.
    """
    global _main
    if loop is None:
        if threading.current_thread() is not threading.main_thread():
            return _main
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return _main
    _main = loop
    return _main


def main_loop() -> asyncio.AbstractEventLoop | None:
    """The captured main loop, or None (plain Python, before the extension loaded)."""
    if _main is not None and _main.is_closed():
        return None
    return _main


def on_main(loop: asyncio.AbstractEventLoop | None = None) -> bool:
    """True when the caller runs on the main loop (or no main loop is known)."""
    target = loop or main_loop()
    if target is None:
        return True
    try:
        return asyncio.get_running_loop() is target
    except RuntimeError:
        return False


def on_main_loop(fn: Callable[..., Any], *args: Any) -> None:
    """Run `fn(*args)` on the main loop: now when already there, else soon (thread-safe)."""
    loop = main_loop()
    if loop is None or on_main(loop):
        _call(fn, *args)
    else:
        loop.call_soon_threadsafe(_call, fn, *args)


def run_on_main(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T] | asyncio.Task[T]:
    """Run a coroutine as a task on the main loop, from any thread."""
    loop = main_loop()
    if loop is None or on_main(loop):
        return asyncio.get_running_loop().create_task(coro)
    return asyncio.run_coroutine_threadsafe(coro, loop)


def main_thread_callback(fn: Callable[..., Any]) -> Callable[..., None]:
    """Wrap a widget callback (on_click, on_msg, observe) so that it runs on the main loop."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        on_main_loop(functools.partial(fn, *args, **kwargs))

    return wrapper


def _call(fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except Exception:
        log.exception("callback on the main loop failed")
