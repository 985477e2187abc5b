"""A session's events on their way to the widgets, in the order the spec gives.

The spec writes a failed turn's error row before it emits the error: a listener that reads
the sessions file when the Error event arrives (the sidebar, a test, a logger) finds the row.
The orchestrator emits Error and End as the failure happens; the relay holds them from the
Error on until the session has written the row and calls ``release``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from agentik_jupyter.types import ErrorEvent, Event

log = logging.getLogger(__name__)

Listener = Callable[[Event], None]


class EventRelay:
    """Listeners of a session's events; an Error and what follows wait for ``release``."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._held: list[Event] | None = None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def __call__(self, event: Event) -> None:
        if isinstance(event, ErrorEvent) and self._held is None:
            self._held = []
        if self._held is not None:
            self._held.append(event)
        else:
            self._deliver(event)

    def release(self) -> None:
        """The error row is written (or could not be): deliver what was held, in order."""
        held, self._held = self._held or [], None
        for event in held:
            self._deliver(event)

    def _deliver(self, event: Event) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("event listener failed")
