"""Drive a notebook's agent over HTTP: send a message to a session, interrupt its turn.

`POST /agentik/api/sessions/<id>/messages?path=nb.ipynb` with `{"content": "..."}` runs a turn in
the live kernel of that notebook (found through Jupyter's own sessions), continuing session <id>,
as a chat panel turn: it queues behind a running turn, shows in the notebook's panel, and is saved
in the sessions file. The reply streams as Server-Sent Events in the chat route's format (`start`,
`delta`, `reasoning`, `tool_call`, then `end` or `error`; plus `queued` and `tool_result`), ids
counting up from 1. `POST .../interrupt?path=` stops that session's running turn.

Answered before any event, as JSON errors: 400 for a hostile id or body, 404 for a session not in
the notebook's sessions file, 409 for a notebook without a live kernel or a kernel without the
agent loaded. A kernel that dies (or is restarted) mid-turn ends the stream with an `error` event.
The client hanging up leaves the turn running in the kernel (interrupt stops it).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from tornado.iostream import StreamClosedError

from agentik_jupyter.persistence import SessionReader
from agentik_jupyter.server.kernel_link import KernelGone, KernelLink, KernelLinks
from agentik_jupyter.server.limits import max_body_bytes, too_large_body
from agentik_jupyter.server.sessions import _session_id, _SessionsBase
from agentik_jupyter.server.sse import EVENT_STREAM, TERMINAL_EVENTS, encode

TARGET = "agentik.turns"
"""The kernel's comm target (kernel/remote_turns.py)."""
MAX_CONTENT_CHARS = 100_000
LINKS_SETTING = "agentik_kernel_links"

NO_EXTENSION = (
    "The notebook's kernel has not loaded the agent: run %load_ext agentik_jupyter in the notebook "
    "(or add it to the kernel's startup), then send again."
)
DIED = (
    "The notebook's kernel died or was restarted during the turn. What the turn said before is in "
    "the session; send again once the kernel runs."
)


class _TurnRoute(_SessionsBase):
    _pump: asyncio.Task[None] | None = None
    _comm: tuple[KernelLink, str] | None = None

    async def _link(self) -> KernelLink:
        """The link to the notebook's live kernel, or 409 when it has none."""
        api_path = self.get_query_argument("path", "").strip().strip("/")
        sessions = await self.session_manager.list_sessions()
        kernel_id = next(
            (
                s["kernel"]["id"]
                for s in sessions
                if str(s.get("path") or "").strip("/") == api_path and s.get("kernel")
            ),
            None,
        )
        if kernel_id is None:
            raise tornado.web.HTTPError(
                409, f"{api_path} has no live kernel: open the notebook (or start its kernel), then send again"
            )
        links = self.settings.setdefault(LINKS_SETTING, KernelLinks())
        try:
            return await links.get(self.kernel_manager, kernel_id)
        except Exception as exc:
            self.log.warning("agentik: could not reach kernel %s: %s", kernel_id, type(exc).__name__)
            raise tornado.web.HTTPError(409, f"{api_path}'s kernel does not answer; is it still starting?") from None

    async def _known(self, conversation_id: str) -> None:
        """404 for a session the notebook's sessions file does not have."""
        path = self._db_path()
        missing = tornado.web.HTTPError(404, f"No session {conversation_id} in this notebook's sessions file")
        if not path.exists():
            raise missing
        try:
            await self._run(SessionReader(path).get_conversation, conversation_id)
        except tornado.web.HTTPError as exc:
            raise missing if exc.status_code == 404 else exc from None

    async def _first(self, link: KernelLink, data: dict[str, Any]) -> tuple[str, asyncio.Queue[Any], dict[str, Any]]:
        """Open the comm and wait for the kernel's first answer (a refusal is the HTTP status)."""
        comm_id, queue = link.open(TARGET, data)
        self._comm = (link, comm_id)
        try:
            kind, first = await link.next(queue)
        except KernelGone:
            link.close(comm_id, tell_kernel=False)
            raise tornado.web.HTTPError(409, DIED) from None
        if kind == "closed":  # the client left before the kernel answered
            raise tornado.web.HTTPError(499, "the client closed the request", reason="Client Closed Request")
        if kind == "comm_close":
            link.close(comm_id, tell_kernel=False)
            raise tornado.web.HTTPError(409, NO_EXTENSION)
        if kind == "died":
            link.close(comm_id, tell_kernel=False)
            raise tornado.web.HTTPError(409, DIED)
        if first.get("event") == "refused":
            link.close(comm_id, tell_kernel=False)
            status = int(first.get("status") or 400)
            raise tornado.web.HTTPError(status if 400 <= status < 600 else 400, str(first.get("message") or ""))
        return comm_id, queue, first

    def on_connection_close(self) -> None:
        """The client left: stop streaming to it (the turn goes on in the kernel)."""
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()
        if self._comm is not None:
            link, comm_id = self._comm
            link.close(comm_id)
        super().on_connection_close()


class MessagesHandler(_TurnRoute):
    """POST {"content"} -> SSE of the turn that answers it, run in the notebook's live kernel."""

    @tornado.web.authenticated
    @authorized
    async def post(self, conversation_id: str) -> None:
        conversation_id = _session_id(conversation_id)
        cap = max_body_bytes()
        if len(self.request.body) > cap:
            self.set_status(413)
            self.finish(json.dumps(too_large_body(cap, len(self.request.body))))
            return
        content = _content(self.request.body)
        self._db_path()  # 400 for a path that is not a notebook in the root
        link = await self._link()
        await self._known(conversation_id)
        comm_id, queue, first = await self._first(
            link, {"action": "send", "session": conversation_id, "content": content}
        )
        self.start_event_stream()
        self._pump = asyncio.ensure_future(self._stream(link, comm_id, queue, first))
        try:
            await self._pump
        except (asyncio.CancelledError, StreamClosedError):
            return
        if not self._finished:
            self.finish(set_content_type=EVENT_STREAM)

    async def _stream(self, link: KernelLink, comm_id: str, queue: asyncio.Queue[Any], first: dict[str, Any]) -> None:
        event_id, data = 0, first
        while True:
            kind = str(data.pop("event", "") or "")
            if kind:
                event_id += 1
                self.write(encode(event_id, kind, data))
                await self.flush()
            if kind in TERMINAL_EVENTS:
                link.close(comm_id, tell_kernel=False)
                return
            try:
                message, data = await link.next(queue)
            except KernelGone:
                message, data = "died", {}
            if message == "closed":  # the client left: the turn goes on in the kernel
                return
            if message != "comm_msg":
                link.close(comm_id, tell_kernel=False)
                error = {"error": "Kernel died", "message": DIED, "code": "kernel_died"}
                if message == "comm_close":
                    error = {"error": "Turn ended", "message": "The kernel closed the turn's stream early."}
                self.write(encode(event_id + 1, "error", error))
                await self.flush()
                return


class InterruptHandler(_TurnRoute):
    """POST -> {"stopped": 1}: the session's running turn stopped (queued turns still run);
    409 when none was running."""

    @tornado.web.authenticated
    @authorized
    async def post(self, conversation_id: str) -> None:
        conversation_id = _session_id(conversation_id)
        self._db_path()  # 400 for a path that is not a notebook in the root
        link = await self._link()
        comm_id, _queue, first = await self._first(link, {"action": "interrupt", "session": conversation_id})
        link.close(comm_id, tell_kernel=False)
        stopped = int(first.get("stopped") or 0)
        if not stopped:
            raise tornado.web.HTTPError(409, f"No turn of session {conversation_id} is running")
        self.finish(json.dumps({"stopped": stopped}))


def _content(body: bytes) -> str:
    try:
        data = json.loads(body or b"null")
    except ValueError:
        raise tornado.web.HTTPError(400, 'body must be JSON: {"content": "..."}') from None
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, str) or not content.strip():
        raise tornado.web.HTTPError(400, 'body must be {"content": "..."} with the message as text')
    if len(content) > MAX_CONTENT_CHARS:
        raise tornado.web.HTTPError(400, f"content is over {MAX_CONTENT_CHARS:,} characters")
    return content
