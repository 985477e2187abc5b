"""The chat route (JSON or SSE) and the routing table; every route checks auth *and* authorization."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.utils import url_path_join
from tornado.iostream import StreamClosedError

from agentik_jupyter.core.chat_route import MISSING_CONFIGURATION, error_body, handle, load_body
from agentik_jupyter.errors import ChatRouteError, ConfigurationError
from agentik_jupyter.server.base import AgentikHandler
from agentik_jupyter.server.limits import max_body_bytes, too_large_body
from agentik_jupyter.server.mcp_endpoint import MCPHandler
from agentik_jupyter.server.provider_env import provider_environ
from agentik_jupyter.server.sessions import EventsHandler, SessionHandler, SessionsHandler
from agentik_jupyter.server.sse import EVENT_STREAM, chat_events, encode, normalise, parse, wants_event_stream
from agentik_jupyter.server.turns import InterruptHandler, MessagesHandler
from agentik_jupyter.tools.registry import default_registry


@tornado.web.stream_request_body
class ChatHandler(AgentikHandler):
    """POST {messages, context?, tools?, model?} -> {content, toolCalls?}, or SSE with Accept: text/event-stream.

    400 invalid body (not JSON, nested too deep, a model outside AGENTIK_ALLOWED_MODELS), 413 a body
    over AGENTIK_MAX_BODY_BYTES (answered before it is read), 502 provider/config (JSON); a stream
    ends with `end` or `error`. Closing the stream cancels the provider request at once.
    The body is streamed in so its size is known before it is held: over the cap, nothing more is kept.
    """

    _turn: asyncio.Task[None] | None = None
    _cap: int = 0
    _chunks: list[bytes]
    _received: int = 0

    async def prepare(self) -> None:  # type: ignore[override]  # as jupyter_server's own APIHandler.prepare
        self._cap, self._chunks, self._received = max_body_bytes(), [], 0
        await super().prepare()
        if self._finished:
            return
        length = self._content_length()
        if length is not None and length > self._cap:
            self._reply(413, too_large_body(self._cap, length))

    def data_received(self, chunk: bytes) -> None:
        self._received += len(chunk)
        if self._received <= self._cap:
            self._chunks.append(chunk)
        else:
            self._chunks.clear()  # over the cap: read on (chunked) but keep nothing

    @tornado.web.authenticated
    @authorized
    async def post(self) -> None:
        if self._received > self._cap:
            self._reply(413, too_large_body(self._cap))
            return
        raw = b"".join(self._chunks)
        self._chunks = []
        try:
            body = normalise(load_body(raw))  # parsed and depth-checked once, here
        except ChatRouteError as exc:
            self._reply(exc.status, exc.body)
            return
        try:
            environ = provider_environ()
        except ConfigurationError as exc:  # the key file the server could not read
            self._log_failure(502, {"error": MISSING_CONFIGURATION, "message": exc.message})
            self._reply(502, {"error": MISSING_CONFIGURATION, "message": exc.message})
            return
        if wants_event_stream(self.request.headers.get("Accept")):
            await self._stream(body, environ)
            return
        try:
            result = await handle(body, environ=environ)
        except ChatRouteError as exc:
            self._log_failure(exc.status, exc.body)
            self._reply(exc.status, exc.body)
            return
        except Exception as exc:
            self.log.exception("agentik chat route failed")
            self._reply(500, error_body(exc))
            return
        self.finish(json.dumps(result))

    def _content_length(self) -> int | None:
        try:
            return int(self.request.headers.get("Content-Length", ""))
        except ValueError:
            return None

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        self.set_status(status)
        self.finish(json.dumps(body))

    async def _stream(self, body: Any, environ: dict[str, str]) -> None:
        try:
            request = parse(body)
        except ChatRouteError as exc:
            self._reply(exc.status, exc.body)
            return
        tools = request.tools
        if tools is None:
            tools = default_registry.to_tool_schemas()
        self.start_event_stream()
        self._turn = asyncio.ensure_future(self._pump(request, tools, environ))
        try:
            await self._turn
        except (asyncio.CancelledError, StreamClosedError):
            return  # the client went away: the provider request is already closed
        if not self._finished:
            self.finish(set_content_type=EVENT_STREAM)

    async def _pump(self, request: Any, tools: Any, environ: dict[str, str]) -> None:
        """Write the events as they come; what arrived while the last flush was on its way goes out
        in the next one, consecutive text joined into one event. At a model's pace every delta is
        its own event at once; a model faster than the socket costs one flush per batch, not per token."""
        ready: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

        async def produce() -> None:
            try:
                async for item in chat_events(request, tools, environ=environ):
                    ready.put_nowait(item)
            finally:
                ready.put_nowait(None)

        producer = asyncio.ensure_future(produce())
        event_id, ended = 0, False
        try:
            while not ended:
                batch = [await ready.get()]
                while not ready.empty():
                    batch.append(ready.get_nowait())
                for item in joined(batch):
                    if item is None:
                        ended = True
                        break
                    kind, data = item
                    if kind == "error":
                        self._log_failure(502, data)
                    event_id += 1
                    self.write(encode(event_id, kind, data))
                await self.flush()
        finally:
            producer.cancel()
        await producer  # (re-raises what failed in it: never a half-written stream passed off as whole)

    def _log_failure(self, status: int, body: dict[str, Any]) -> None:
        """A provider or configuration failure is the operator's business too: one warning line."""
        if status >= 500:
            self.log.warning("agentik chat: %s: %s", body.get("error"), body.get("message"))

    def on_connection_close(self) -> None:
        """The client closed the stream (Stop in the kernel): stop the provider request now."""
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()
        super().on_connection_close()


def joined(
    batch: list[tuple[str, dict[str, Any]] | None],
) -> list[tuple[str, dict[str, Any]] | None]:
    """`batch` with each run of `delta` (or `reasoning`) events made one event of their joined text."""
    out: list[tuple[str, dict[str, Any]] | None] = []
    for item in batch:
        last = out[-1] if out else None
        if item is not None and last is not None and item[0] in TEXT_EVENTS and last[0] == item[0]:
            out[-1] = (item[0], {"text": last[1]["text"] + item[1]["text"]})
        else:
            out.append(item)
    return out


TEXT_EVENTS = ("delta", "reasoning")


def setup_handlers(web_app: Any, serverapp: Any = None) -> None:
    base = web_app.settings["base_url"]
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "agentik/api/chat"), ChatHandler),
            (url_path_join(base, "agentik/api/events"), EventsHandler),
            (url_path_join(base, "agentik/api/sessions"), SessionsHandler),
            (url_path_join(base, r"agentik/api/sessions/([^/]+)"), SessionHandler),
            (url_path_join(base, r"agentik/api/sessions/([^/]+)/messages"), MessagesHandler),
            (url_path_join(base, r"agentik/api/sessions/([^/]+)/interrupt"), InterruptHandler),
            (url_path_join(base, "agentik/mcp"), MCPHandler),
        ],
    )
