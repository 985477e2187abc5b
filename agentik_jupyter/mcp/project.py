"""An `mcp.json` as the user sees it before trusting it: read once, hashed, never expanded.

The summary shows what the file would do in its own words: each server's
command and arguments or URL as written (`${VAR}` left as is), the names of the
environment variables it reads, every variable it sets for the server with the
value as written (a literal secret under a secret-looking name masked by the
scrubber; `${VAR}` references shown as is, never expanded), the folder it would run
in, and the policy it asks for. Nothing here runs, connects or reads a variable's value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentik_jupyter.errors import MCPConfigError
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.security.trust import TrustStore, digest, is_user_file, launch_env_warning

_VAR_NAME = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


@dataclass(frozen=True)
class ServerSummary:
    """One server of an untrusted file, as written."""

    name: str
    transport: str
    target: str
    reads: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    """(name, value as shown) for each variable the server is started with."""
    policy: str | None = None
    cwd: str | None = None
    """The folder the server would run in, resolved against the file's folder (None: not set)."""

    @property
    def sets(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.env)

    @property
    def warnings(self) -> tuple[tuple[str, str], ...]:
        """(name, why) for each variable set that changes how the program starts or what it loads."""
        return tuple((name, why) for name, _ in self.env if (why := launch_env_warning(name)) is not None)

    def describe(self) -> str:
        parts = [f"{self.name} ({self.transport}): {self.target}"]
        if self.cwd:
            parts.append(f"in {self.cwd}")
        if self.reads:
            parts.append(f"reads ${{{'}, ${'.join(self.reads)}}}")
        if self.env:
            parts.append("sets " + ", ".join(f"{name}={value}" for name, value in self.env))
        parts.extend(f"WARNING {name}: {why}" for name, why in self.warnings)
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


def shown_value(name: str, value: Any) -> str:
    """An env value as the card shows it: `${VAR}` references as written, the text between them
    through the scrubber, as a secret itself when `name` looks secret (`[hidden: NAME]`)."""
    text = value if isinstance(value, str) else json.dumps(value)
    out: list[str] = []
    last = 0
    for found in _VAR_NAME.finditer(text):
        out.append(_scrubbed(name, text[last : found.start()]))
        out.append(found.group(0))
        last = found.end()
    out.append(_scrubbed(name, text[last:]))
    return "".join(out)


def _scrubbed(name: str, literal: str) -> str:
    if not literal.strip():
        return literal
    return scrub(scrub(literal, {name: literal}))


def _cwd(raw: Any, base_dir: Path | None) -> str | None:
    """`cwd` as written, with the folder it means when that differs (relative, `~`)."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    folder = Path(raw).expanduser()
    if not folder.is_absolute() and base_dir is not None:
        folder = base_dir / folder
    return raw if str(folder) == raw else f"{raw} ({folder})"


def _summary(name: str, raw: Any, base_dir: Path | None = None) -> ServerSummary:
    if not isinstance(raw, dict):
        return ServerSummary(name, "?", f"(not an object: {type(raw).__name__})")
    reads = tuple(dict.fromkeys(_names(raw)))
    policy = raw.get("policy") if isinstance(raw.get("policy"), str) else None
    if "url" in raw:
        headers = raw.get("headers") if isinstance(raw.get("headers"), dict) else {}
        target = str(raw["url"]) + (f" (headers: {', '.join(map(str, headers))})" if headers else "")
        return ServerSummary(name, "http", target, reads, (), policy)
    args = found if isinstance(found := raw.get("args"), list) else []
    command = " ".join(str(part) for part in [raw.get("command", "(no command)"), *args])
    env = given if isinstance(given := raw.get("env"), dict) else {}
    shown = tuple((str(key), shown_value(str(key), value)) for key, value in env.items())
    return ServerSummary(name, "stdio", command, reads, shown, policy, _cwd(raw.get("cwd"), base_dir))


def summarize(data: Any, base_dir: Path | None = None) -> tuple[ServerSummary, ...]:
    """What each server entry would run or reach, without expanding anything.
    `base_dir` (the file's folder) is what a relative `cwd` means."""
    if not isinstance(data, dict):
        return ()
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, dict):
        return ()
    return tuple(_summary(str(name), raw, base_dir) for name, raw in servers.items())


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
        servers = summarize(project.data(), resolved.parent)
    except MCPConfigError:
        servers = ()
    return ProjectFile(resolved, content, project.sha256, project.user_file, servers)
