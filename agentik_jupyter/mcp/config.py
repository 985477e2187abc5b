"""Find and read `mcp.json`, the Claude Desktop `mcpServers` format.

Where it is looked for, first file found wins (files are not merged, so the
servers that run are exactly the ones one file names):

1. `AGENTIK_MCP_CONFIG`: a path to the file (an error if it does not exist);
2. `<notebook dir>/mcp.json`: servers for this project, beside the notebook;
3. `<jupyter config dir>/agentik/mcp.json`, e.g. `~/.jupyter/agentik/mcp.json`
   (`jupyter --config-dir` tells the directory; `JUPYTER_CONFIG_DIR` moves it).

Each server is either `{command, args, env, cwd}` (stdio) or `{url, headers}`
(streamable HTTP), plus the optional `policy` (`auto` | `ask` | `deny`, default
`ask`), `timeout` (seconds per tool call, default 60), `startupTimeout`
(seconds to start and list tools, default 30) and `disabled`. `${VAR}` and
`${VAR:-default}` are expanded in every string. A broken server entry does not
hide the others: its error is kept and reported as that server's status.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from agentik_jupyter.errors import MCPConfigError
from agentik_jupyter.types import ApprovalPolicy

CONFIG_ENV = "AGENTIK_MCP_CONFIG"
CONFIG_NAME = "mcp.json"
DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_STARTUP_TIMEOUT = 30.0
MIN_MASKED_LENGTH = 3  # shorter expanded values (a port, "1") would mask unrelated text

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_HTTP_TYPES = {"http", "streamable-http", "streamable_http", "streamablehttp"}


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    policy: ApprovalPolicy = "ask"
    timeout: float = Field(default=DEFAULT_CALL_TIMEOUT, gt=0)
    startup_timeout: float = Field(default=DEFAULT_STARTUP_TIMEOUT, gt=0, alias="startupTimeout")
    disabled: bool = False
    _expanded: dict[str, str] = PrivateAttr(default_factory=dict)

    def mask(self, text: str) -> str:
        """`text` with every value that came from the environment written back as `${NAME}`.

        Errors from a transport can quote the URL, headers or command it was given;
        what the user sees must never carry an expanded value (a key in a header).
        """
        for name, value in sorted(self._expanded.items(), key=lambda item: -len(item[1])):
            if len(value) < MIN_MASKED_LENGTH:
                continue
            for form in {value, quote(value, safe=""), quote(value), repr(value)[1:-1]}:
                text = text.replace(form, f"${{{name}}}")
        return text


class StdioServerConfig(_ServerBase):
    """A server the kernel runs as a subprocess and talks to over stdin/stdout."""

    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class HttpServerConfig(_ServerBase):
    """A server already running somewhere, reached over streamable HTTP."""

    transport: Literal["http"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value


ServerConfig = Union[StdioServerConfig, HttpServerConfig]


@dataclass
class MCPConfig:
    """The servers one file declares, with per-server errors kept apart."""

    path: Path | None = None
    servers: dict[str, ServerConfig] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [*self.servers, *(n for n in self.errors if n not in self.servers)]


class _Missing(Exception):
    def __init__(self, var: str) -> None:
        super().__init__(var)
        self.var = var


def expand(text: str, environ: Mapping[str, str], used: dict[str, str] | None = None) -> str:
    """Expand `${VAR}` and `${VAR:-default}` (default when unset or empty).

    Each value taken from `environ` is recorded in `used`, so errors can mask it.
    """

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = environ.get(name)
        if value and used is not None:
            used[name] = value
        if default is not None:
            return value if value else default
        if value is None:
            raise _Missing(name)
        return value

    return _VAR.sub(one, text)


def _expand_tree(value: Any, environ: Mapping[str, str], where: str, problems: list[str], used: dict[str, str]) -> Any:
    if isinstance(value, str):
        try:
            return expand(value, environ, used)
        except _Missing as missing:
            problems.append(
                f"field '{where}': environment variable '{missing.var}' is not set "
                f"(write ${{{missing.var}:-default}} to give a default)"
            )
            return value
    if isinstance(value, dict):
        return {
            k: _expand_tree(v, environ, f"{where}.{k}" if where else str(k), problems, used) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_expand_tree(v, environ, f"{where}[{i}]", problems, used) for i, v in enumerate(value)]
    return value


def _known_keys(model: type[BaseModel]) -> set[str]:
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        keys.add(name)
        if info.alias:
            keys.add(info.alias)
    return keys


def _pick_model(raw: dict[str, Any]) -> type[StdioServerConfig] | type[HttpServerConfig]:
    kind = str(raw.get("type", raw.get("transport", ""))).strip().lower()
    if kind == "sse":
        raise ValueError("field 'type': the SSE transport is not supported; use streamable HTTP ('url')")
    if kind and kind != "stdio" and kind not in _HTTP_TYPES:
        raise ValueError(f"field 'type': unknown transport {kind!r} (use 'stdio' or 'http')")
    if "command" in raw and "url" in raw:
        raise ValueError("has both 'command' (stdio) and 'url' (HTTP); keep one")
    if kind in _HTTP_TYPES or ("url" in raw and kind != "stdio"):
        return HttpServerConfig
    if "command" in raw or kind == "stdio":
        return StdioServerConfig
    raise ValueError("needs either 'command' (a stdio server) or 'url' (a streamable-HTTP server)")


def _mask_values(text: str, used: dict[str, str]) -> str:
    probe = StdioServerConfig(command="-")
    probe._expanded = used
    return probe.mask(text)


def _format_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(entry)"
        parts.append(f"field '{loc}': {err['msg']}")
    return "; ".join(parts)


def _resolve_paths(server: StdioServerConfig, base_dir: Path | None) -> StdioServerConfig:
    """Relative `cwd` and `./command` paths are taken from the config file's folder."""
    updates: dict[str, Any] = {}
    if server.cwd is not None:
        cwd = Path(server.cwd).expanduser()
        if not cwd.is_absolute() and base_dir is not None:
            cwd = base_dir / cwd
        updates["cwd"] = str(cwd)
    command = os.path.expanduser(server.command)
    if base_dir is not None and os.sep in command and not os.path.isabs(command):
        command = str(base_dir / command)
    updates["command"] = command
    return server.model_copy(update=updates)


def parse_server(
    name: str, raw: Any, *, environ: Mapping[str, str], base_dir: Path | None = None
) -> tuple[ServerConfig, list[str]]:
    """One `mcpServers` entry as a typed config, with warnings about ignored keys.

    Raises ValueError with a message naming the field (the caller adds the server).
    """
    if not isinstance(raw, dict):
        raise ValueError(f"must be an object, got {type(raw).__name__}")
    problems: list[str] = []
    used: dict[str, str] = {}
    expanded = _expand_tree(raw, environ, "", problems, used)
    if problems:
        raise ValueError("; ".join(problems))
    model = _pick_model(expanded)
    body = {k: v for k, v in expanded.items() if k not in ("type", "transport")}
    try:
        server: ServerConfig = model.model_validate(body)
    except ValidationError as exc:
        raise ValueError(_mask_values(_format_validation(exc), used)) from None
    unknown = sorted(set(body) - _known_keys(model))
    warnings = [f"server '{name}': ignoring unknown field '{key}'" for key in unknown]
    if isinstance(server, StdioServerConfig):
        server = _resolve_paths(server, base_dir)
    server._expanded = used
    return server, warnings


def parse_config(
    data: Any,
    *,
    path: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> MCPConfig:
    """Parse a decoded `mcp.json`; per-server problems land in `errors`, not exceptions."""
    source = str(path) if path else CONFIG_NAME
    env = os.environ if environ is None else environ
    if not isinstance(data, dict):
        raise MCPConfigError(f"{source}: the top level must be a JSON object")
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None:
        raise MCPConfigError(f"{source}: no 'mcpServers' object (expected {{\"mcpServers\": {{name: {{...}}}}}})")
    if not isinstance(servers, dict):
        raise MCPConfigError(f"{source}: 'mcpServers' must be an object mapping names to servers")
    config = MCPConfig(path=path)
    base_dir = path.parent if path else None
    for name, raw in servers.items():
        if not name.strip():
            config.errors[name] = f"{source}: a server has an empty name"
            continue
        try:
            server, warnings = parse_server(name, raw, environ=env, base_dir=base_dir)
        except ValueError as exc:
            config.errors[name] = f"{source}: server '{name}': {exc}"
            continue
        config.warnings.extend(warnings)
        if not server.disabled:
            config.servers[name] = server
    return config


def load_config(path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> MCPConfig:
    """Read and parse one file; MCPConfigError when it is missing or not JSON."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MCPConfigError(f"MCP config file not found: {file}") from None
    except OSError as exc:
        raise MCPConfigError(f"cannot read MCP config {file}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MCPConfigError(f"{file}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    return parse_config(data, path=file.resolve(), environ=environ)


def jupyter_config_path() -> Path | None:
    """`<jupyter config dir>/agentik/mcp.json`, or None without jupyter_core."""
    try:
        from jupyter_core.paths import jupyter_config_dir
    except ImportError:
        return None
    return Path(jupyter_config_dir()) / "agentik" / CONFIG_NAME


def find_config_path(
    notebook_dir: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The first config file in the search order, or None when there is none.

    An `AGENTIK_MCP_CONFIG` that names a missing file is returned as is, so that
    loading it reports the mistake instead of silently using another file.
    """
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    candidates: list[Path] = []
    if notebook_dir is not None:
        candidates.append(Path(notebook_dir) / CONFIG_NAME)
    user = jupyter_config_path()
    if user is not None:
        candidates.append(user)
    return next((c for c in candidates if c.is_file()), None)


def discover_config(
    notebook_dir: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> MCPConfig:
    """The config in effect for a notebook; an empty config when no file exists."""
    path = find_config_path(notebook_dir, environ=environ)
    if path is None:
        return MCPConfig()
    return load_config(path, environ=environ)
