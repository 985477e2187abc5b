"""Waiting on the test's own event loop until the widgets show something, failing with what they show instead."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

TRIES = 500
STEP_S = 0.01


async def until(check: Callable[[], bool], what: Callable[[], str]) -> None:
    """Let the loop run until `check()` holds (5 s at most); else fail with `what()`."""
    for _ in range(TRIES):
        if check():
            return
        await asyncio.sleep(STEP_S)
    raise AssertionError(what())
