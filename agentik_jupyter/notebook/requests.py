"""Asking the JupyterLab extension about the live notebook: the one request/answer path.

Read its cells, insert a proposed cell (notebook/cells.py), propose an edit, re-run cells.
The kernel opens a comm to `agentik.notebook` per request; the extension answers by
opening `agentik.notebook.reply` with the same `request_id`. The answer travels on a comm
the frontend opens, not on the kernel's: every other client connected to the kernel (a
console, a second browser) closes a comm whose target it does not know, and a close must
not hide the extension's answer.
A proposal is answered twice: `shown` at once (the diff is on the cell), then `result`
when the user decides. No `shown`/`result` within REPLY_TIMEOUT_S means no extension
(VS Code, nbclient, a console), and the callers fall back to the saved file.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from agentik_jupyter.errors import NoFrontend

REQUEST_TARGET = "agentik.notebook"
REPLY_TARGET = "agentik.notebook.reply"
REPLY_TIMEOUT_S = 3.0  # the extension answers in milliseconds; this only bounds a frontend without it
CLOSED_GRACE_S = 1.0  # a client without the extension closed our comm: wait this long for the answer
NO_FRONTEND_MEMORY_S = 60.0  # after no answer, go straight to the fallback for this long


class _Pending:
    """The replies to one request, handed over from whichever thread the comm callback runs on."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.replies: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def put(self, reply: dict[str, Any] | None) -> None:
        self.loop.call_soon_threadsafe(self.replies.put_nowait, reply)


class FrontendNotebook:
    """The conversation with the extension; one instance per kernel process."""

    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}
        self._registered = False
        self._missing_until = 0.0

    @property
    def known_missing(self) -> bool:
        return time.monotonic() < self._missing_until

    async def ask(
        self,
        action: str,
        decision_timeout: float | None = None,
        on_shown: Callable[[dict[str, Any]], None] | None = None,
        **data: Any,
    ) -> dict[str, Any]:
        """Send a request; the extension's final `result` reply (after `shown`, if any, given to `on_shown`).

        Raises NoFrontend when nothing answers in time, and TimeoutError when a shown
        proposal is not decided within `decision_timeout` seconds.
        """
        if self.known_missing:
            raise NoFrontend("no notebook extension answered recently")
        try:
            from comm import create_comm, get_comm_manager
        except ImportError:
            raise NoFrontend("no comm support in this kernel") from None
        if not self._registered:
            get_comm_manager().register_target(REPLY_TARGET, self._on_reply)
            self._registered = True
        request_id = uuid.uuid4().hex
        pending = self._pending[request_id] = _Pending(asyncio.get_running_loop())
        comm = create_comm(target_name=REQUEST_TARGET, data={"action": action, "request_id": request_id, **data})

        def closed(_msg: dict[str, Any]) -> None:
            pending.loop.call_soon_threadsafe(pending.loop.call_later, CLOSED_GRACE_S, pending.replies.put_nowait, None)

        comm.on_close(closed)
        try:
            first = await self._next(pending, REPLY_TIMEOUT_S)
            if first is None:
                self._missing_until = time.monotonic() + NO_FRONTEND_MEMORY_S
                raise NoFrontend("the notebook extension did not answer")
            self._missing_until = 0.0
            if first.get("phase") != "shown":
                return first
            if on_shown is not None:
                on_shown(first)
            reply = await self._next(pending, decision_timeout, allow_close=True)
            if reply is None:
                raise TimeoutError("the proposal was not decided in time")
            return reply
        finally:
            self._pending.pop(request_id, None)
            comm.close()

    @staticmethod
    async def _next(pending: _Pending, timeout: float | None, allow_close: bool = False) -> dict[str, Any] | None:
        while True:
            try:
                reply = await asyncio.wait_for(pending.replies.get(), timeout)
            except TimeoutError:
                return None
            if reply is not None or not allow_close:
                return reply  # a close after `shown` is expected: only the decision counts

    def _on_reply(self, comm: Any, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data") or {}
        pending = self._pending.get(str(data.get("request_id")))
        if pending is not None:
            pending.put(dict(data))


frontend = FrontendNotebook()
