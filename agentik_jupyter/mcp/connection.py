"""One MCP server's session, owned by one long-lived asyncio task.

The SDK's transports and session are anyio context managers with task groups
inside; anyio requires them to be entered and exited in the same task. So a
`ServerConnection` runs a single task that enters the transport and session,
lists the tools, then serves calls sent to it through a queue, each answered
through a future. Every wait is bounded: start and tool listing by the
server's startup timeout, each call by its call timeout, and stopping by a
grace period after which the task is cancelled.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from agentik_jupyter._version import __version__
from agentik_jupyter.errors import AgentikError, MCPRedirectError, MCPServerError
from agentik_jupyter.mcp.config import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_STARTUP_TIMEOUT,
    HttpServerConfig,
    ServerConfig,
    StdioServerConfig,
)
from agentik_jupyter.mcp.http_client import make_http_client
from agentik_jupyter.mcp.processes import server_group
from agentik_jupyter.types import ApprovalPolicy

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, Tool

ServerState = Literal["stopped", "starting", "ready", "failed", "untrusted"]
INSTALL_HINT = "MCP support is not installed: pip install 'agentik_jupyter[mcp]'"
STOP_GRACE = 8.0
MAX_TOOL_PAGES = 50
_CONNECTION_CLOSED = -32000
_LOST = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError)


class MCPNotInstalledError(AgentikError, ImportError):
    """A server is configured but the `mcp` extra is missing."""

    def __init__(self) -> None:
        super().__init__(INSTALL_HINT)


def require_sdk() -> None:
    """Fail with the install hint when the `mcp` SDK is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise MCPNotInstalledError() from None


@dataclass(eq=False)
class _Call:
    tool: str
    args: dict[str, Any]
    timeout: float
    future: asyncio.Future[CallToolResult]


_STOP = object()


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _is_connection_lost(exc: BaseException) -> bool:
    exc = _leaf(exc)
    if isinstance(exc, _LOST):
        return True
    return getattr(exc, "code", None) == _CONNECTION_CLOSED and "closed" in str(exc).lower()


@dataclass
class ServerConnection:
    """Start, serve and stop one server; its state is read by the manager for statuses."""

    name: str
    config: ServerConfig | None
    target: Any = None
    log_path: Path | None = None
    on_change: Callable[[ServerConnection], None] | None = None
    policy: ApprovalPolicy = "ask"
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    state: ServerState = "stopped"
    error: str | None = None
    tools: list[Tool] = field(default_factory=list)
    was_ready: bool = False
    _task: asyncio.Task[None] | None = field(default=None, repr=False)
    _inbox: asyncio.Queue[Any] | None = field(default=None, repr=False)
    _settled: asyncio.Event | None = field(default=None, repr=False)
    _scope: anyio.CancelScope | None = field(default=None, repr=False)
    _lost: str | None = field(default=None, repr=False)
    _stopping: bool = field(default=False, repr=False)
    _inflight: set[_Call] = field(default_factory=set, repr=False)
    _log_offset: int = field(default=0, repr=False)
    pgid: int | None = field(default=None, repr=False)

    @property
    def transport(self) -> str:
        if isinstance(self.config, HttpServerConfig):
            return "http"
        if isinstance(self.config, StdioServerConfig):
            return "stdio"
        return "in-process"

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Begin starting the server in its own task on the running loop (idempotent)."""
        if self.running:
            return
        self._inbox = asyncio.Queue()
        self._settled = asyncio.Event()
        self._lost = None
        self._stopping = False
        self.tools = []
        self._set("starting", None)
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"agentik-mcp-{self.name}")

    async def wait_settled(self) -> None:
        """Wait until the server is ready or has failed (bounded by the startup timeout)."""
        if self._settled is not None:
            await self._settled.wait()

    async def call(self, tool: str, args: dict[str, Any], timeout: float | None = None) -> CallToolResult:
        """Run one tool call in the session task and wait for its result."""
        if self.state != "ready" or self._inbox is None:
            reason = f": {self.error}" if self.error else ""
            raise MCPServerError(f"MCP server '{self.name}' is not running ({self.state}{reason})")
        limit = timeout or self.call_timeout
        future: asyncio.Future[CallToolResult] = asyncio.get_running_loop().create_future()
        self._inbox.put_nowait(_Call(tool, args, limit, future))
        try:
            return await asyncio.wait_for(future, limit + 2.0)
        except TimeoutError:
            raise MCPServerError(
                f"MCP tool '{tool}' on server '{self.name}' did not answer within {limit:g} s"
            ) from None

    async def stop(self) -> None:
        """Stop the session politely, then by cancellation after a grace period."""
        task = self._task
        if task is None or task.done():
            return
        self._stopping = True
        if self._inbox is not None:
            self._inbox.put_nowait(_STOP)
        if self.state == "starting" and self._scope is not None:
            self._scope.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_GRACE)
        except TimeoutError:
            task.cancel()
            await asyncio.wait({task}, timeout=2.0)
        except asyncio.CancelledError:
            task.cancel()
            raise

    def _mask(self, text: str) -> str:
        """Write values expanded from the environment back as `${NAME}` before anyone sees them."""
        return self.config.mask(text) if self.config is not None else text

    def _set(self, state: ServerState, error: str | None) -> None:
        self.state = state
        self.error = self._mask(error) if error else error
        if state == "ready":
            self.was_ready = True
        if state != "starting" and self._settled is not None:
            self._settled.set()
        if self.on_change is not None:
            self.on_change(self)

    async def _run(self) -> None:
        outcome: str | None = None
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                scope.deadline = anyio.current_time() + self.startup_timeout
                async with AsyncExitStack() as stack:
                    client = await self._connect(stack)
                    self._note_group()
                    tools = await self._list_tools(client)
                    scope.deadline = math.inf
                    self.tools = tools
                    self._set("ready", None)
                    await self._serve(client)
            if scope.cancelled_caught and self.state == "starting" and not self._stopping:
                outcome = f"did not start within {self.startup_timeout:g} s (startupTimeout)"
        except asyncio.CancelledError:
            outcome = None if self._stopping else "cancelled"
            raise
        except MCPNotInstalledError:
            outcome = INSTALL_HINT
        except Exception as exc:  # a failing server must never escape into the kernel
            outcome = self._describe(_leaf(exc))
        finally:
            self._scope = None
            self.pgid = None  # the transport has closed: the group is gone, its number may be reused
            outcome = outcome or self._lost
            if outcome is not None:
                self._set("failed", self._with_stderr(outcome))
            elif self.state != "failed":
                self._set("stopped", None)
            self._drain()
            if self._settled is not None:
                self._settled.set()

    async def _connect(self, stack: AsyncExitStack) -> Client:
        require_sdk()
        from mcp import Client, StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.types import Implementation

        config = self.config
        transport: Any = self.target
        if isinstance(config, StdioServerConfig):
            params = StdioServerParameters(
                command=config.command, args=config.args, env=config.env or None, cwd=config.cwd
            )
            transport = stdio_client(params, errlog=stack.enter_context(self._open_errlog()))
        elif isinstance(config, HttpServerConfig):
            http = make_http_client(config)
            await stack.enter_async_context(http)
            transport = streamable_http_client(config.url, http_client=http)
        client = Client(transport, client_info=Implementation(name="agentik_jupyter", version=__version__))
        return await stack.enter_async_context(client)

    def _note_group(self) -> None:
        """Remember the stdio server's process group, for the kill at kernel exit."""
        self.pgid = None
        if isinstance(self.config, StdioServerConfig) and self.log_path is not None:
            self.pgid = server_group(self.log_path)

    def _open_errlog(self) -> Any:
        """The server's stderr goes to a real file: under ipykernel sys.stderr has no fileno."""
        path = self.log_path or Path(os.devnull)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a", encoding="utf-8", errors="replace")
        self._log_offset = handle.tell()
        return handle

    async def _list_tools(self, client: Client) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _serve(self, client: Client) -> None:
        assert self._inbox is not None
        async with anyio.create_task_group() as group:
            while True:
                item = await self._inbox.get()
                if item is _STOP or self._lost is not None:
                    break
                group.start_soon(self._handle, client, item)
            group.cancel_scope.cancel()

    async def _handle(self, client: Client, call: _Call) -> None:
        if call.future.done():
            return
        self._inflight.add(call)
        with anyio.CancelScope() as scope:
            call.future.add_done_callback(lambda f: scope.cancel() if f.cancelled() else None)
            try:
                with anyio.fail_after(call.timeout):
                    result = await client.call_tool(call.tool, call.args)
            except TimeoutError:
                self._reply_error(
                    call, f"MCP tool '{call.tool}' on server '{self.name}' did not answer within {call.timeout:g} s"
                )
            except Exception as exc:
                if not _is_connection_lost(exc):
                    self._reply_error(call, f"MCP server '{self.name}' refused '{call.tool}': {_leaf(exc)}")
                    return
                self._lost = f"the server stopped unexpectedly during a call to '{call.tool}' (connection lost)"
                assert self._inbox is not None
                self._inbox.put_nowait(_STOP)
                return
            else:
                if not call.future.done():
                    call.future.set_result(result)
            finally:
                if call.future.done():
                    self._inflight.discard(call)

    def _reply_error(self, call: _Call, message: str) -> None:
        if not call.future.done():
            call.future.set_exception(MCPServerError(self._mask(message)))

    def _drain(self) -> None:
        """Answer every call still pending when the session ended, with the reason."""
        reason = self.error or "the server was stopped"
        pending = list(self._inflight)
        self._inflight.clear()
        while self._inbox is not None and not self._inbox.empty():
            item = self._inbox.get_nowait()
            if isinstance(item, _Call):
                pending.append(item)
        for call in pending:
            self._reply_error(call, f"MCP server '{self.name}' ended before '{call.tool}' answered: {reason}")

    def _describe(self, exc: BaseException) -> str:
        config = self.config
        if isinstance(config, StdioServerConfig) and isinstance(exc, FileNotFoundError):
            if config.cwd and exc.filename == config.cwd:
                return f"working directory not found: {config.cwd!r}"
            return f"command not found: {config.command!r} (is it installed and on PATH?)"
        if isinstance(config, StdioServerConfig) and isinstance(exc, PermissionError):
            return f"command is not executable: {config.command!r}"
        if isinstance(exc, MCPRedirectError):
            return str(exc)
        if _is_connection_lost(exc):
            return "the server closed the connection while starting"
        if isinstance(config, HttpServerConfig) and type(exc).__module__.startswith("httpx"):
            verb = "lost the connection to" if self.state == "ready" else "cannot reach"
            return f"{verb} {config.url}: {type(exc).__name__}: {exc}"
        return f"{type(exc).__name__}: {exc}"

    def _with_stderr(self, message: str) -> str:
        """Add the server's last stderr lines: that is where its own explanation is."""
        if self.log_path is None or not isinstance(self.config, StdioServerConfig):
            return message
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                handle.seek(self._log_offset)
                text = handle.read()[-4000:]
        except OSError:
            return message
        lines = [line for line in text.splitlines() if line.strip()][-5:]
        if not lines:
            return message
        return f"{message}; stderr ({self.log_path}):\n" + "\n".join(lines)
