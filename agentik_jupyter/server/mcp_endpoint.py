"""`/agentik/mcp`: the official MCP SDK's streamable HTTP transport, served by Jupyter Server.

The SDK speaks ASGI; Jupyter Server is tornado. `MCPHandler` is a tornado handler behind Jupyter's
own authentication and authorization (the token or the cookie, as the /agentik/api routes; no new
secret) that hands each request to the SDK's `StreamableHTTPSessionManager` as an ASGI call and
streams its answer back. The manager's task group runs on the server's loop from the first request
until the extension unloads.

Before the SDK sees a request: no login is a 403 whose body is a JSON-RPC error a client can show;
an `Origin` header from another site is refused (the MCP specification's defence against DNS
rebinding; Jupyter's `allow_origin` settings still let one in), even with a token, which Jupyter's
own check lets pass; Jupyter checks the `Host`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any
from urllib.parse import urlparse

import tornado.web
from jupyter_server.auth.decorator import authorized
from tornado.iostream import StreamClosedError

from agentik_jupyter.server.base import AgentikHandler

log = logging.getLogger(__name__)

MANAGER_SETTING = "agentik_mcp_manager"
NOT_INSTALLED = "The MCP endpoint needs the official MCP SDK: pip install 'agentik-jupyter[mcp]', then restart Jupyter."
NO_LOGIN = (
    "Not logged in to the Jupyter server: pass its token (Authorization: token <token>, as `jupyter server "
    "list` shows it) or use the agentik-jupyter mcp bridge."
)
FOREIGN_ORIGIN = "Requests from a page of another site (Origin: {origin}) are refused."


def _rpc_error(code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})


class MCPEndpoint:
    """The SDK's session manager for this server, started on the server's loop on first use."""

    def __init__(self, web_settings: dict[str, Any]) -> None:
        # load time: the SDK (an optional extra) loads with the endpoint's first request
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from agentik_jupyter.server.mcp_tools import make_server

        self.server = make_server(web_settings)
        # the SDK's own way (MCPServer.streamable_http_app); an idle client's session ends after 30
        # minutes without a request in flight (a long run_code is one), and the client starts another
        self.manager = StreamableHTTPSessionManager(app=self.server._lowlevel_server)
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def started(self) -> Any:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
        await self._ready.wait()
        return self.manager

    async def _run(self) -> None:
        try:
            async with self.manager.run():
                self._ready.set()
                await self._stop.wait()
        except Exception:
            log.exception("agentik: the MCP session manager stopped")

    def stop(self) -> None:
        self._stop.set()


class MCPHandler(AgentikHandler):
    """GET / POST / DELETE of the streamable HTTP transport, relayed to the SDK."""

    _disconnected: asyncio.Event | None = None

    async def prepare(self) -> None:  # type: ignore[override]  # as jupyter_server's own APIHandler.prepare
        origin = self.request.headers.get("Origin")
        if origin and self._foreign(origin):
            self.set_status(403)
            self.set_header("Content-Type", "application/json")
            self.finish(_rpc_error(-32001, FOREIGN_ORIGIN.format(origin=origin[:200])))
            return
        await super().prepare()

    def _foreign(self, origin: str) -> bool:
        """An Origin other than this server's own (or one Jupyter's allow_origin settings let in).
        Jupyter skips its own Origin check for token logins; the MCP specification does not."""
        if self.allow_origin == "*" or (self.allow_origin and origin == self.allow_origin):
            return False
        if self.allow_origin_pat and re.match(self.allow_origin_pat, origin):
            return False
        return urlparse(origin).netloc.lower() != (self.request.host or "").lower()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Every refusal is a JSON-RPC error an MCP client shows as it is, never a traceback."""
        self.set_header("Content-Type", "application/json")
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = exc.log_message if isinstance(exc, tornado.web.HTTPError) and exc.log_message else None
        if status_code == 403 and self.current_user is None:
            message = NO_LOGIN
        self.finish(_rpc_error(-32001, message or self._reason))

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        await self._relay()

    @tornado.web.authenticated
    @authorized
    async def post(self) -> None:
        await self._relay()

    @tornado.web.authenticated
    @authorized
    async def delete(self) -> None:
        await self._relay()

    def on_connection_close(self) -> None:
        if self._disconnected is not None:
            self._disconnected.set()
        super().on_connection_close()

    async def _relay(self) -> None:
        endpoint = self.settings.get(MANAGER_SETTING)
        if endpoint is None:
            try:
                endpoint = self.settings[MANAGER_SETTING] = MCPEndpoint(self.settings)
            except ImportError:
                raise tornado.web.HTTPError(501, NOT_INSTALLED) from None
        manager = await endpoint.started()
        self._disconnected = asyncio.Event()
        self.clear_header("Content-Type")  # the SDK says what it sends
        await manager.handle_request(self._scope(), self._receive(), self._send)
        if not self._finished:
            self.finish()

    def _scope(self) -> dict[str, Any]:
        request = self.request
        host, _, port = (request.host or "").partition(":")
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": request.protocol,
            "path": request.path,
            "raw_path": request.path.encode("latin-1"),
            "query_string": request.query.encode("latin-1"),
            "root_path": "",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.get_all()],
            "client": (request.remote_ip or "", 0),
            "server": (host, int(port) if port.isdigit() else 80),
        }

    def _receive(self) -> Any:
        body, given = self.request.body, False
        disconnected = self._disconnected

        async def receive() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            assert disconnected is not None
            await disconnected.wait()
            return {"type": "http.disconnect"}

        return receive

    async def _send(self, message: dict[str, Any]) -> None:
        if self._finished:
            return
        if message["type"] == "http.response.start":
            self.set_status(int(message["status"]))
            for key, value in message.get("headers") or []:
                name = key.decode("latin-1")
                if name.lower() in ("content-length", "transfer-encoding"):
                    continue  # tornado frames the body itself
                self.add_header(name, value.decode("latin-1"))
        elif message["type"] == "http.response.body":
            try:
                if message.get("body"):
                    self.write(message["body"])
                if message.get("more_body"):
                    await self.flush()
            except StreamClosedError:  # the client left: the SDK hears it from receive()
                if self._disconnected is not None:
                    self._disconnected.set()
