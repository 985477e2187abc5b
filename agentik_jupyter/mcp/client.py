"""MCP servers as tools: the manager the kernel keeps, one per ToolRegistry.

Servers start lazily (on the first turn or the first `%agent tools`), all at
once and each in its own task, so a slow or broken server costs at most its
startup timeout and never blocks the others. Every tool a server lists is
registered as `<server>__<tool>` with the server's policy (default `ask`)
by a `ToolPublisher` (tools.py).
What went wrong is kept as a status per server, for `%agent tools`, and as
notices the next cell shows once.

A project `mcp.json` (beside the notebook) is read but neither parsed nor
expanded until the user trusts its exact bytes (`security.trust`); until then
its servers are listed as `untrusted` and nothing starts.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentik_jupyter.errors import MCPConfigError, MCPServerError, MCPToolError
from agentik_jupyter.mcp.config import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_STARTUP_TIMEOUT,
    HttpServerConfig,
    MCPConfig,
    ServerConfig,
    StdioServerConfig,
    find_config_path,
    parse_config,
)
from agentik_jupyter.mcp.connection import INSTALL_HINT, ServerConnection, ServerState
from agentik_jupyter.mcp.processes import kill_groups
from agentik_jupyter.mcp.project import ProjectFile, read_project_file
from agentik_jupyter.mcp.tools import ToolPublisher
from agentik_jupyter.security.trust import TrustStore
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import ApprovalPolicy

log = logging.getLogger(__name__)

MAX_AUTO_RESTARTS = 2
CLOSE_TIMEOUT = 10.0

StatusListener = Callable[[list["ServerStatus"]], None]


@dataclass(frozen=True)
class ServerStatus:
    """What `%agent tools` shows for one server."""

    name: str
    state: ServerState
    transport: str
    policy: ApprovalPolicy
    error: str | None = None
    tools: tuple[str, ...] = ()
    log_path: str | None = None
    collisions: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line (plus the error's and collisions' lines) for a listing."""
        head = f"{self.name} ({self.transport}, policy {self.policy}): {self.state}"
        if self.state == "ready":
            head = f"{head}, {len(self.tools)} tool{'s' if len(self.tools) != 1 else ''}"
        elif self.error:
            head = f"{head}: {self.error}"
        return "\n".join([head, *(f"  name collision: {c}" for c in self.collisions)])


def _pick_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class MCPManager:
    """Owns the configured servers, their tools in `registry`, and their lifecycle."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        config: MCPConfig | None = None,
        notebook_dir: str | Path | None = None,
        log_dir: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
        trust_store: TrustStore | None = None,
    ) -> None:
        self.registry = registry
        self.notebook_dir = notebook_dir
        self.environ = environ
        self.config_error: str | None = None
        self.project: ProjectFile | None = None
        self._trust_store = trust_store
        self._given = config
        self._config = config
        self._file_servers: set[str] = set()
        self.publisher = ToolPublisher(registry)
        self._log_dir = Path(log_dir) if log_dir is not None else None
        self._made_log_dir: Path | None = None
        self._connections: dict[str, ServerConnection] = {}
        self._failed_config: dict[str, tuple[str, str]] = {}
        self._restarts: dict[str, int] = {}
        self._notices: list[str] = []
        self._listeners: list[StatusListener] = []
        self._loaded = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._starting: asyncio.Task[list[ServerStatus]] | None = None
        self._closing: asyncio.Task[None] | None = None

    # ---- configuration ----

    @property
    def trust_store(self) -> TrustStore:
        if self._trust_store is None:
            self._trust_store = TrustStore()
        return self._trust_store

    def _load(self) -> None:
        """Read the config once, on first use, so env and files set before it count.

        A config object given by code in the kernel is the user's own. A file is
        read once: the same bytes are hashed, checked against the trust store and,
        only when trusted, parsed and expanded.
        """
        if self._loaded:
            return
        self._loaded = True
        config = self._given
        if config is None:
            try:
                path = find_config_path(self.notebook_dir, environ=self.environ)
                if path is None:
                    return
                self.project = read_project_file(path, environ=self.environ)
                if not self.project.trusted(self.trust_store):
                    return
                config = parse_config(self.project.data(), path=self.project.path, environ=self.environ)
            except MCPConfigError as exc:
                self.config_error = str(exc)
                self._notices.append(f"MCP config error: {exc}")
                return
        self._config = config
        for warning in config.warnings:
            log.warning("%s", warning)
        for name, message in config.errors.items():
            self._failed_config[name] = ("config", message)
            self._notices.append(f"MCP server '{name}' failed: {message}")
        for name, server in config.servers.items():
            self._add(name, server, None)
            self._file_servers.add(name)

    @property
    def pending_trust(self) -> ProjectFile | None:
        """The project file in effect while the user has not trusted it (its servers wait)."""
        self._load()
        if self.project is None or self.project.trusted(self.trust_store):
            return None
        return self.project

    def _file_changed(self) -> bool:
        if self._given is not None:
            return False
        try:
            path = find_config_path(self.notebook_dir, environ=self.environ)
        except MCPConfigError:
            return False
        if path is None or self.project is None:
            return (path is None) != (self.project is None)
        if path.expanduser().resolve() != self.project.path:
            return True
        try:
            return read_project_file(path, environ=self.environ).sha256 != self.project.sha256
        except MCPConfigError:
            return True

    async def reload(self) -> None:
        """Stop the file's servers and read the file again (after a change or a trust decision)."""
        names = list(self._file_servers)
        await asyncio.gather(*(self._connections[n].stop() for n in names if n in self._connections))
        for name in names:
            self._unregister(name)
            self._connections.pop(name, None)
            self._failed_config.pop(name, None)
            self._restarts.pop(name, None)
        for name in [n for n, (kind, _) in self._failed_config.items() if kind == "config"]:
            self._failed_config.pop(name)
        self._file_servers.clear()
        self.project = None
        self.config_error = None
        self._config = self._given
        self._loaded = False
        self._load()

    async def refresh(self) -> None:
        """Reload when the config file changed since it was read: a changed file asks again."""
        self._load()
        if self._file_changed():
            await self.reload()

    def _project_at(self, path: str | Path | None) -> ProjectFile:
        if path is None:
            self._load()
            if self.project is None:
                found = find_config_path(self.notebook_dir, environ=self.environ)
                if found is None:
                    raise MCPConfigError("No mcp.json is in effect for this notebook.")
                return read_project_file(found, environ=self.environ)
            return read_project_file(self.project.path, environ=self.environ)
        return read_project_file(Path(path), environ=self.environ)

    async def trust(self, path: str | Path | None = None, sha256: str | None = None) -> ProjectFile:
        """Trust the file as it is now (or the version with `sha256`, the one a card showed)."""
        project = self._project_at(path)
        self.trust_store.trust(project.path, sha256 or project.sha256)
        await self.reload()
        return project

    async def untrust(self, path: str | Path | None = None, sha256: str | None = None) -> ProjectFile:
        """Record "don't trust" for the file, stop its servers and remove their tools."""
        project = self._project_at(path)
        self.trust_store.decline(project.path, sha256 or project.sha256)
        await self.reload()
        return project

    def add_server(
        self,
        name: str,
        server: ServerConfig | Any,
        *,
        policy: ApprovalPolicy | None = None,
        timeout: float | None = None,
        startup_timeout: float | None = None,
    ) -> None:
        """Add a server besides the config file's: a ServerConfig, or an SDK server object
        (`MCPServer` / low-level `Server`) run in-process. It starts with the others."""
        self._load()
        if name in self._connections:
            raise ValueError(f"An MCP server named {name!r} already exists.")
        if isinstance(server, (StdioServerConfig, HttpServerConfig)):
            updates = {"policy": policy, "timeout": timeout, "startup_timeout": startup_timeout}
            self._add(name, server.model_copy(update={k: v for k, v in updates.items() if v is not None}), None)
            return
        connection = self._add(name, None, server)
        connection.policy = policy or "ask"
        connection.call_timeout = timeout or DEFAULT_CALL_TIMEOUT
        connection.startup_timeout = startup_timeout or DEFAULT_STARTUP_TIMEOUT

    def _add(self, name: str, config: ServerConfig | None, target: Any) -> ServerConnection:
        # only a stdio server writes a stderr log: no folder is made for the others
        log_path = self._log_path(name) if isinstance(config, StdioServerConfig) else None
        connection = ServerConnection(
            name=name, config=config, target=target, log_path=log_path, on_change=self._changed
        )
        if config is not None:
            connection.policy = config.policy
            connection.call_timeout = config.timeout
            connection.startup_timeout = config.startup_timeout
        self._connections[name] = connection
        return connection

    def _log_path(self, name: str) -> Path:
        if self._log_dir is None:
            self._log_dir = self._made_log_dir = Path(tempfile.mkdtemp(prefix="agentik-mcp-"))
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return self._log_dir / f"{safe}.stderr.log"

    @property
    def configured(self) -> bool:
        """Whether any server is configured (or the config itself is broken, or awaits trust)."""
        self._load()
        return bool(self._connections or self._failed_config or self.config_error or self.project)

    # ---- lifecycle ----

    async def start(self) -> list[ServerStatus]:
        """Start every server not yet started and wait until each is ready or failed.

        Idempotent and cheap once done; a server that crashed after it was ready is
        restarted here (at most twice). Never raises for a server's failure.
        """
        self._load()
        if self._connections:
            self._check_sdk()
        self._loop = asyncio.get_running_loop()
        for name, connection in self._connections.items():
            if connection.running or name in self._failed_config:
                continue
            if connection.state == "stopped":
                connection.start()
            elif connection.state == "failed" and connection.was_ready:
                if self._restarts.get(name, 0) < MAX_AUTO_RESTARTS:
                    self._restarts[name] = self._restarts.get(name, 0) + 1
                    connection.start()
        await asyncio.gather(*(c.wait_settled() for c in self._connections.values()))
        return self.statuses()

    def start_soon(self) -> None:
        """Schedule `start()` from sync code running on the kernel's loop (e.g. a line magic)."""
        loop = _pick_loop()
        if loop is None or not self.configured:
            return
        if self._starting is None or self._starting.done():
            self._starting = loop.create_task(self.start(), name="agentik-mcp-start")

    async def restart(self, name: str) -> ServerStatus:
        """Stop and start one server again, e.g. after fixing what made it fail."""
        connection = self._connections.get(name)
        if connection is None:
            raise KeyError(f"No MCP server named {name!r}.")
        await connection.stop()
        self._restarts.pop(name, None)
        self._check_sdk()
        if name not in self._failed_config:
            connection.start()
            await connection.wait_settled()
        return self.status(name)

    def _check_sdk(self) -> None:
        """Without the `mcp` SDK every configured server fails with the install hint."""
        try:
            import mcp  # noqa: F401
        except ImportError:
            for name in self._connections:
                if name not in self._failed_config:
                    self._failed_config[name] = ("sdk", INSTALL_HINT)
                    self._notices.append(f"MCP server '{name}' failed: {INSTALL_HINT}")

    async def aclose(self) -> None:
        """Stop every server and remove its tools; safe to call twice."""
        connections = list(self._connections.values())
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)
        for name in self.publisher.servers():
            self._unregister(name)
        self._remove_made_log_dir()

    def _remove_made_log_dir(self) -> None:
        """The stderr logs' folder this manager made goes with its servers (a folder given to it
        stays): every kernel with a stdio server used to leave one in the temp folder. A server
        started again writes its log there anew (`ServerConnection._open_errlog` makes the folder)."""
        if self._made_log_dir is not None:
            shutil.rmtree(self._made_log_dir, ignore_errors=True)

    def close(self) -> None:
        """Sync shutdown for atexit or IPython's shutdown hook.

        On the loop's own thread (a hook called from a coroutine) it schedules
        the orderly `aclose()`. Otherwise (kernel shutdown or restart: the loop is
        stopped or about to be) it signals each stdio server's process group
        itself, which reaches the servers' own children too and needs no loop.
        """
        running = _pick_loop()
        if running is not None and running is self._loop:
            self._closing = running.create_task(self.aclose(), name="agentik-mcp-close")
            return
        groups = [c.pgid for c in self._connections.values() if c.pgid is not None]
        if groups:
            kill_groups(groups)
        loop = self._loop
        if loop is None or loop.is_closed() or not any(c.running for c in self._connections.values()):
            self._remove_made_log_dir()
            return
        try:
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(CLOSE_TIMEOUT)
            else:
                loop.run_until_complete(asyncio.wait_for(self.aclose(), CLOSE_TIMEOUT))
        except Exception:
            log.exception("stopping MCP servers failed")

    # ---- tools ----

    def _changed(self, connection: ServerConnection) -> None:
        if connection.state == "ready":
            self._register(connection)
        elif connection.state == "failed":
            self._notices.append(f"MCP server '{connection.name}' failed: {connection.error}")
        statuses = self.statuses()
        for listener in list(self._listeners):
            try:
                listener(statuses)
            except Exception:
                log.exception("MCP status listener failed")

    def _register(self, connection: ServerConnection) -> None:
        self._notices.extend(self.publisher.publish(connection))

    def _unregister(self, server: str) -> None:
        connection = self._connections.get(server)
        self.publisher.withdraw(server, connection.policy if connection else None)

    # ---- reporting ----

    def status(self, name: str) -> ServerStatus:
        if name in self._failed_config:
            connection = self._connections.get(name)
            transport = connection.transport if connection else "config"
            policy: ApprovalPolicy = connection.policy if connection else "ask"
            return ServerStatus(name, "failed", transport, policy, self._failed_config[name][1])
        connection = self._connections[name]
        return ServerStatus(
            name=name,
            state=connection.state,
            transport=connection.transport,
            policy=connection.policy,
            error=connection.error,
            tools=self.publisher.names(name),
            log_path=str(connection.log_path) if connection.transport == "stdio" else None,
            collisions=self.publisher.collisions(name),
        )

    def statuses(self) -> list[ServerStatus]:
        """Every server's status, in config order (not started yet: `stopped`; awaiting trust: `untrusted`)."""
        self._load()
        names = [*self._connections, *(n for n in self._failed_config if n not in self._connections)]
        statuses = [self.status(name) for name in names]
        pending = self.pending_trust
        if pending is not None:
            why = f"{pending.path} is not trusted; nothing was started (%agent mcp trust)"
            statuses += [ServerStatus(s.name, "untrusted", s.transport, "ask", why) for s in pending.servers]
        return statuses

    def pop_notices(self) -> list[str]:
        """Problems not yet shown to the user (a cell shows them once, then they are gone)."""
        notices, self._notices = self._notices, []
        return notices

    def subscribe(self, listener: StatusListener) -> Callable[[], None]:
        """Call `listener(statuses)` on every server state change; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None


__all__ = ["MCPManager", "ServerStatus", "MCPServerError", "MCPToolError"]
