"""Open and close a comm target of ours in this kernel: the control, turns and tools targets share it.

A request target (`RequestTarget`: the server's turns and tools) takes one request in the comm's
open message and answers on that comm (`CommReply`), on the kernel's main loop; a request that fails
is one scrubbed `refused` answer, never a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from agentik_jupyter.core import mainloop

log = logging.getLogger(__name__)

Handler = Callable[[Any, "CommReply", dict[str, Any]], Awaitable[None]]
"""`handle(shell, reply, data)`: serve one request (data: the open message's, {} when not an object)."""


def register_target(shell: Any, target: str, opened: Callable[[Any, Any, dict[str, Any]], None]) -> bool:
    """Open `target`, handled by `opened(shell, comm, msg)` (False outside a kernel with comms)."""
    if getattr(shell, "kernel", None) is None:
        return False
    try:
        from comm import get_comm_manager
    except ImportError:
        return False
    mainloop.capture()
    get_comm_manager().register_target(target, lambda comm, msg: opened(shell, comm, msg))
    return True


def unregister_target(shell: Any, target: str) -> None:
    """Close `target` if it is open; outside a kernel with comms there is nothing to close."""
    if getattr(shell, "kernel", None) is None:
        return
    try:
        from comm import get_comm_manager
    except ImportError:
        return
    try:
        get_comm_manager().unregister_target(target, None)  # type: ignore[arg-type]
    except KeyError:
        pass


class CommReply:
    """The comm one request answers on; sends stop quietly once the server closed it."""

    def __init__(self, comm: Any, target: str = "agentik") -> None:
        self.comm = comm
        self.target = target
        self.open = True
        self._on_close: list[Callable[[], object]] = []
        comm.on_close(lambda _msg: self._closed())

    def _closed(self) -> None:
        self.open = False
        for callback in self._on_close:
            try:
                callback()
            except Exception:
                log.exception("%s: a comm close callback failed", self.target)

    def on_close(self, callback: Callable[[], object]) -> None:
        """Call `callback()` when the server closes the comm first (its client left)."""
        self._on_close.append(callback)

    def send(self, event: str, **data: Any) -> None:
        if not self.open:
            return
        try:
            self.comm.send({"event": event, **data})
        except Exception:
            self.open = False
            log.exception("%s: could not send %s", self.target, event)

    def close(self) -> None:
        if self.open:
            self.open = False
            try:
                self.comm.close()
            except Exception:
                log.exception("%s: could not close the comm", self.target)

    def refuse(self, status: int, error: str, message: str) -> None:
        self.send("refused", status=status, error=error, message=message)
        self.close()


class RequestTarget:
    """A comm target whose every comm carries one request, served by `handle` on the main loop."""

    def __init__(self, target: str, handle: Handler) -> None:
        self.target = target
        self.handle = handle

    def register(self, shell: Any) -> bool:
        """Open the target in this kernel (False outside a kernel with comms)."""
        return register_target(shell, self.target, self._opened)

    def unregister(self, shell: Any) -> None:
        unregister_target(shell, self.target)

    def _opened(self, shell: Any, comm: Any, msg: dict[str, Any]) -> None:
        """Comm callbacks may run on a subshell thread: requests are served on the kernel's main loop."""
        data = msg.get("content", {}).get("data")
        reply = CommReply(comm, self.target)

        async def serve() -> None:
            try:
                await self.handle(shell, reply, data if isinstance(data, dict) else {})
            except Exception as exc:
                # load time: the target is registered at %load_ext
                from agentik_jupyter.security.scrub import scrub

                log.exception("%s: could not serve the request", self.target)
                reply.refuse(500, "Internal error", scrub(f"{type(exc).__name__}: {exc}"))

        mainloop.run_on_main(serve())
