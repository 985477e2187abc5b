"""The server's own line to a notebook's live kernel: comms to `agentik.turns`, answers by comm id.

The send and interrupt routes (server/turns.py) reach a kernel the server runs. Each kernel gets
one client, made from its manager's connection info and kept while the kernel lives: opening a
client per request would lose the first answers (a zmq subscriber misses what is published before
it has joined; `wait_for_ready` waits until it has). One reader task takes the kernel's iopub
messages and hands each comm message to the queue of the request that opened that comm.

Whether the kernel still lives is asked of its manager (the process, and the server's list of
kernels); a kernel that died or was restarted mid-turn ends every open request with `died`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from jupyter_core.utils import ensure_async

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 30.0
LIVENESS_POLL_S = 0.5

Message = tuple[str, dict[str, Any]]
"""("comm_msg" | "comm_close" | "died" | "closed", data); "closed": this side forgot the comm."""


class KernelGone(Exception):
    """The kernel died, was restarted or shut down."""


class KernelLink:
    """One client to one live kernel, shared by every route request for it."""

    def __init__(self, manager: Any, kernel_id: str, kernels: Any) -> None:
        self.manager = manager
        self.kernel_id = kernel_id
        self.kernels = kernels  # the server's MappingKernelManager: is the kernel still listed?
        self.pid = _pid(manager)
        self.client: Any = None
        self.queues: dict[str, asyncio.Queue[Message]] = {}
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        # load time: jupyter_client loads with the first route that talks to a kernel
        from jupyter_client.asynchronous import AsyncKernelClient

        client = AsyncKernelClient()
        client.load_connection_info(self.manager.get_connection_info())
        # no heartbeat: one missed on a loaded machine reads as a dead kernel; `alive` asks the manager
        client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
        try:
            await client.wait_for_ready(timeout=READY_TIMEOUT_S)
        except BaseException:
            client.stop_channels()
            raise
        self.client = client
        self._reader = asyncio.ensure_future(self._read())

    async def alive(self) -> bool:
        """The kernel this link was made for still runs (not dead, not restarted, not shut down)."""
        if self.kernel_id not in self.kernels or _pid(self.manager) != self.pid:
            return False
        try:
            return bool(await ensure_async(self.manager.is_alive()))
        except Exception:
            return False

    def open(self, target: str, data: dict[str, Any]) -> tuple[str, asyncio.Queue[Message]]:
        """Open a comm to `target` with `data`; its messages arrive on the returned queue."""
        comm_id = uuid.uuid4().hex
        queue: asyncio.Queue[Message] = asyncio.Queue()
        self.queues[comm_id] = queue
        msg = self.client.session.msg("comm_open", {"comm_id": comm_id, "target_name": target, "data": data})
        self.client.shell_channel.send(msg)
        return comm_id, queue

    def close(self, comm_id: str, *, tell_kernel: bool = True) -> None:
        """Forget a comm; tell the kernel (so it stops sending) unless it closed it itself."""
        queue = self.queues.pop(comm_id, None)
        if queue is None:
            return
        queue.put_nowait(("closed", {}))  # a request still waiting on it stops waiting
        if tell_kernel and self.client is not None:
            with contextlib.suppress(Exception):
                self.client.shell_channel.send(self.client.session.msg("comm_close", {"comm_id": comm_id, "data": {}}))

    async def next(self, queue: asyncio.Queue[Message]) -> Message:
        """The next message for one comm; raises KernelGone once the kernel is."""
        while True:
            try:
                return await asyncio.wait_for(queue.get(), LIVENESS_POLL_S)
            except TimeoutError:
                if not await self.alive():
                    raise KernelGone() from None

    async def _read(self) -> None:
        while True:
            try:
                msg = await self.client.get_iopub_msg()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("agentik: reading the kernel's messages failed")
                await asyncio.sleep(LIVENESS_POLL_S)
                continue
            kind, content = msg.get("msg_type"), msg.get("content") or {}
            if kind in ("comm_msg", "comm_close"):
                queue = self.queues.get(str(content.get("comm_id")))
                if queue is not None:
                    queue.put_nowait((kind, content.get("data") or {}))
            elif kind == "status" and content.get("execution_state") == "starting":
                for queue in self.queues.values():  # a restarted kernel: its comms are gone
                    queue.put_nowait(("died", {}))

    def stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self.client is not None:
            self.client.stop_channels()
            self.client = None


def _pid(manager: Any) -> Any:
    provisioner = getattr(manager, "provisioner", None)
    return getattr(provisioner, "pid", None) or getattr(getattr(provisioner, "process", None), "pid", None)


class KernelLinks:
    """The links of one server, by kernel id; a link whose kernel is gone is made again."""

    def __init__(self) -> None:
        self._links: dict[str, KernelLink] = {}
        self._lock = asyncio.Lock()

    async def get(self, kernels: Any, kernel_id: str) -> KernelLink:
        async with self._lock:
            for gone in [k for k in self._links if k != kernel_id and k not in kernels]:
                self._links.pop(gone).stop()  # kernels shut down since: their sockets go too
            link = self._links.get(kernel_id)
            if link is not None and await link.alive():
                return link
            if link is not None:
                link.stop()
                del self._links[kernel_id]
            manager = kernels.get_kernel(kernel_id)
            link = KernelLink(manager, kernel_id, kernels)
            await link.start()
            self._links[kernel_id] = link
            return link

    def stop(self) -> None:
        for link in self._links.values():
            link.stop()
        self._links.clear()
