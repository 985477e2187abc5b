"""An `mcp.json` as the user sees it before trusting it: read once, hashed, never expanded.

The summary shows what the file would do in its own words: each server's
command and arguments or URL as written (`${VAR}` left as is), the names of the
environment variables it reads, the names it sets for the server, and the
policy it asks for. Nothing here runs, connects or reads a variable's value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..security.trust import TrustStore, digest, is_user_file
from .config import MCPConfigError

_VAR_NAME = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


@dataclass(frozen=True)
class ServerSummary:
    """One server of an untrusted file, as written."""

    name: str
    transport: str
    target: str
    reads: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()
    policy: str | None = None

    def describe(self) -> str:
        parts = [f"{self.name} ({self.transport}): {self.target}"]
        if self.reads:
            parts.append(f"reads ${{{'}, ${'.join(self.reads)}}}")
        if self.sets:
            parts.append(f"sets {', '.join(self.sets)}")
        if self.policy:
            parts.append(f"asks for policy {self.policy!r}")
        return "; ".join(parts)


@dataclass(frozen=True)
class ProjectFile:
    """The bytes of one config file, their hash, and what they declare."""

    path: Path
    content: bytes
    sha256: str
    user_file: bool
    servers: tuple[ServerSummary, ...] = field(default_factory=tuple)

    def data(self) -> Any:
        """The decoded JSON (MCPConfigError when it is not JSON)."""
        try:
            return json.loads(self.content.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MCPConfigError(f"{self.path}: not valid JSON ({exc})") from None

    def trusted(self, store: TrustStore) -> bool:
        return self.user_file or store.is_trusted(self.path, self.sha256)


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return _VAR_NAME.findall(value)
    if isinstance(value, dict):
        return [n for v in value.values() for n in _names(v)]
    if isinstance(value, list):
        return [n for v in value for n in _names(v)]
    return []


def _summary(name: str, raw: Any) -> ServerSummary:
    if not isinstance(raw, dict):
        return ServerSummary(name, "?", f"(not an object: {type(raw).__name__})")
    reads = tuple(dict.fromkeys(_names(raw)))
    policy = raw.get("policy") if isinstance(raw.get("policy"), str) else None
    if "url" in raw:
        headers = raw.get("headers") if isinstance(raw.get("headers"), dict) else {}
        target = str(raw["url"]) + (f" (headers: {', '.join(map(str, headers))})" if headers else "")
        return ServerSummary(name, "http", target, reads, (), policy)
    args = raw.get("args") if isinstance(raw.get("args"), list) else []
    command = " ".join(str(part) for part in [raw.get("command", "(no command)"), *args])
    env = raw.get("env") if isinstance(raw.get("env"), dict) else {}
    return ServerSummary(name, "stdio", command, reads, tuple(map(str, env)), policy)


def summarize(data: Any) -> tuple[ServerSummary, ...]:
    """What each server entry would run or reach, without expanding anything."""
    if not isinstance(data, dict):
        return ()
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, dict):
        return ()
    return tuple(_summary(str(name), raw) for name, raw in servers.items())


def read_project_file(path: Path, *, environ: Mapping[str, str] | None = None) -> ProjectFile:
    """Read the file once: the same bytes are hashed, summarised and (once trusted) parsed."""
    file = Path(path).expanduser()
    try:
        content = file.read_bytes()
    except FileNotFoundError:
        raise MCPConfigError(f"MCP config file not found: {file}") from None
    except OSError as exc:
        raise MCPConfigError(f"cannot read MCP config {file}: {exc}") from None
    resolved = file.resolve()
    project = ProjectFile(resolved, content, digest(content), is_user_file(resolved, environ))
    try:
        servers = summarize(project.data())
    except MCPConfigError:
        servers = ()
    return ProjectFile(resolved, content, project.sha256, project.user_file, servers)
