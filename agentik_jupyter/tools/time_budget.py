"""A time budget for reading user objects, so a slow property or repr cannot hang a turn.

Inspection runs user code: a property, `__repr__`, `__len__` or `__getattr__` of the
user's objects (lazy ORM queries, remote datasets). The data tools run on the kernel's
main thread, where a SIGALRM timer can interrupt that code: the handler raises a private
exception, `call_with_budget` turns it into a `ReadTimeout` the model reads, and the
previous handler and timer state are restored. Off the main thread, or when someone else
already owns SIGALRM, the call runs without a budget (a signal cannot reach it there).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from agentik_jupyter.errors import ReadTimeout

T = TypeVar("T")

INSPECT_TIME_BUDGET_S = 5.0
"""How long one inspection tool may spend in the user's code (properties, repr, len)."""

HISTORY_ITEM_BUDGET_S = 1.0
"""How long get_cell_history may spend on one Out[n] value's repr."""

REFIRE_S = 0.25
"""After expiry the timer fires again at this interval, in case user code swallowed the first."""


class _Expired(BaseException):
    """Raised by the SIGALRM handler inside user code. A BaseException so `except Exception`
    in the user's code does not swallow it; it never leaves this module."""


class _Alarm:
    """The SIGALRM handler of one budgeted call; it raises only while the call is running."""

    def __init__(self) -> None:
        self.armed = True

    def __call__(self, signum: int, frame: Any) -> None:
        if self.armed:
            raise _Expired()


def budget_available() -> bool:
    """True when a SIGALRM budget can be armed here: the main thread, and no one else's alarm."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(signal.SIGALRM)
    if current not in (signal.SIG_DFL, signal.SIG_IGN, None) and not isinstance(current, _Alarm):
        return False
    return signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def call_with_budget(fn: Callable[[], T], seconds: float, what: str) -> T:
    """`fn()`, or a ReadTimeout naming `what` once `seconds` have passed in it.

    Nested calls run under the outer budget. KeyboardInterrupt and every exception of `fn`
    pass through unchanged.
    """
    if not budget_available():
        return fn()
    alarm = _Alarm()
    previous = signal.signal(signal.SIGALRM, alarm)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_S)
            return fn()
        finally:
            _disarm(alarm, previous)
    except _Expired:
        _disarm(alarm, previous)  # the alarm may have fired inside the `finally` above
        raise ReadTimeout(timeout_message(what, seconds)) from None


def _disarm(alarm: _Alarm, previous: Any) -> None:
    alarm.armed = False
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


def timeout_message(what: str, seconds: float) -> str:
    return (
        f"timed out reading `{what}` (no answer within {seconds:g} s): its properties, len() or repr "
        "compute or wait on something. Try a specific cheaper attribute, or ask the user about it."
    )
