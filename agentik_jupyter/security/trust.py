"""Which project files the user has trusted, remembered outside the project.

A project file (an `mcp.json` beside a notebook) arrives with the folder, from a
clone or a download; it may start commands and read the user's environment, so
it acts only once the user approved *these bytes*: the decision is stored in
the user's Jupyter data dir (`<jupyter --data-dir>/agentik/trusted.json`),
keyed by the file's absolute path and the sha256 of its content. A changed file
has another hash and asks again. Files the user keeps themselves (the one named
by `AGENTIK_MCP_CONFIG`, or one in their Jupyter config dir) are trusted as is.

`launch_env_warning` names the environment variables a project file may set that change
how a program starts or what it loads (LD_PRELOAD, NODE_OPTIONS, PYTHONPATH, PATH…): the
trust card warns about each, since they turn a harmless-looking command into another.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

TRUST_DIR = "agentik"
TRUST_FILE = "trusted.json"
TRUST_VERSION = 1
MCP_CONFIG_ENV = "AGENTIK_MCP_CONFIG"

Decision = Literal["trusted", "declined"]

_LOADS = "loads code of the file's choosing into the server process"
_FINDS = "changes where the server's program finds the code it imports"
_DOWNLOADS = "changes where packages are downloaded from"
_CERTS = "changes which TLS certificates are trusted"
LAUNCH_ENV: dict[str, str] = {
    "LD_PRELOAD": _LOADS,
    "LD_AUDIT": _LOADS,
    "LD_LIBRARY_PATH": "changes which shared libraries the server loads",
    "NODE_OPTIONS": "passes options to every Node.js process (--require runs a script first)",
    "NODE_PATH": _FINDS,
    "PYTHONPATH": _FINDS,
    "PYTHONHOME": "changes which Python standard library runs",
    "PYTHONSTARTUP": "runs a script when Python starts interactively",
    "PYTHONINSPECT": "keeps Python running after its script",
    "PATH": "changes which program a command name runs",
    "PERL5OPT": "passes options to every Perl process",
    "PERL5LIB": _FINDS,
    "RUBYOPT": "passes options to every Ruby process",
    "RUBYLIB": _FINDS,
    "JAVA_TOOL_OPTIONS": "passes options (an -javaagent) to every Java process",
    "_JAVA_OPTIONS": "passes options (an -javaagent) to every Java process",
    "JDK_JAVA_OPTIONS": "passes options (an -javaagent) to every Java process",
    "BASH_ENV": "runs a script when bash starts",
    "ENV": "runs a script when sh starts",
    "PROMPT_COMMAND": "runs a command in an interactive shell",
    "PIP_INDEX_URL": _DOWNLOADS,
    "PIP_EXTRA_INDEX_URL": _DOWNLOADS,
    "UV_INDEX_URL": _DOWNLOADS,
    "UV_EXTRA_INDEX_URL": _DOWNLOADS,
    "NPM_CONFIG_REGISTRY": _DOWNLOADS,
    "SSL_CERT_FILE": _CERTS,
    "SSL_CERT_DIR": _CERTS,
    "REQUESTS_CA_BUNDLE": _CERTS,
    "NODE_EXTRA_CA_CERTS": _CERTS,
    "NODE_TLS_REJECT_UNAUTHORIZED": "can turn off TLS certificate checks",
    "HTTP_PROXY": "sends the server's traffic through a proxy",
    "HTTPS_PROXY": "sends the server's traffic through a proxy",
    "ALL_PROXY": "sends the server's traffic through a proxy",
}
"""Variables that change how a program starts, what it loads or whom it talks to, and why."""
LAUNCH_ENV_PREFIXES: dict[str, str] = {
    "DYLD_": "changes which libraries a macOS process loads",
    "LD_": "changes how the dynamic linker loads libraries",
    "GIT_CONFIG": "changes git's configuration (it can run commands)",
}


def launch_env_warning(name: str) -> str | None:
    """Why setting `name` for a server deserves a warning, or None for an ordinary variable."""
    key = name.strip().upper()  # Windows names are case-insensitive; proxies are often lower-case
    if key in LAUNCH_ENV:
        return LAUNCH_ENV[key]
    return next((why for prefix, why in LAUNCH_ENV_PREFIXES.items() if key.startswith(prefix)), None)


def digest(content: bytes) -> str:
    """The sha256 of a file's bytes: the part of the key that changes with the file."""
    return hashlib.sha256(content).hexdigest()


def default_store_path() -> Path:
    """`<jupyter data dir>/agentik/trusted.json` (`JUPYTER_DATA_DIR` moves it)."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / TRUST_DIR / TRUST_FILE


def _user_config_dir() -> Path | None:
    try:
        from jupyter_core.paths import jupyter_config_dir
    except ImportError:
        return None
    return Path(jupyter_config_dir()).resolve()


def is_user_file(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> bool:
    """Whether the file is the user's own: named by `AGENTIK_MCP_CONFIG` or in their config dir."""
    env = os.environ if environ is None else environ
    file = Path(path).expanduser().resolve()
    explicit = env.get(MCP_CONFIG_ENV, "").strip()
    if explicit and Path(explicit).expanduser().resolve() == file:
        return True
    config_dir = _user_config_dir()
    return config_dir is not None and file.is_relative_to(config_dir)


@dataclass(frozen=True)
class TrustRecord:
    """One remembered decision about one version of one file."""

    path: str
    sha256: str
    decision: Decision
    at: float


class TrustStore:
    """The decisions file. Every call re-reads it, so two kernels see each other's choices."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()

    def _read(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, OSError):
            return {}
        files = data.get("files") if isinstance(data, dict) else None
        return files if isinstance(files, dict) else {}

    def _write(self, files: dict[str, dict[str, object]]) -> None:
        """Write to a temporary file and rename it, so a crash never leaves half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".trusted-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"version": TRUST_VERSION, "files": files}, handle, indent=1, sort_keys=True)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @staticmethod
    def _key(path: str | os.PathLike[str]) -> str:
        return str(Path(path).expanduser().resolve())

    def record(self, path: str | os.PathLike[str]) -> TrustRecord | None:
        """The decision stored for this path (for whichever version was decided on)."""
        key = self._key(path)
        entry = self._read().get(key)
        if not isinstance(entry, dict) or entry.get("decision") not in ("trusted", "declined"):
            return None
        return TrustRecord(key, str(entry.get("sha256", "")), entry["decision"], float(entry.get("at", 0)))  # type: ignore[arg-type]

    def decision(self, path: str | os.PathLike[str], sha256: str) -> Decision | None:
        """`trusted` / `declined` for exactly this content, None when never decided (or changed)."""
        record = self.record(path)
        if record is None or record.sha256 != sha256:
            return None
        return record.decision

    def is_trusted(self, path: str | os.PathLike[str], sha256: str) -> bool:
        return self.decision(path, sha256) == "trusted"

    def decide(self, path: str | os.PathLike[str], sha256: str, decision: Decision) -> TrustRecord:
        files = self._read()
        key = self._key(path)
        at = time.time()
        files[key] = {"sha256": sha256, "decision": decision, "at": at}
        self._write(files)
        return TrustRecord(key, sha256, decision, at)

    def trust(self, path: str | os.PathLike[str], sha256: str) -> TrustRecord:
        return self.decide(path, sha256, "trusted")

    def decline(self, path: str | os.PathLike[str], sha256: str) -> TrustRecord:
        return self.decide(path, sha256, "declined")

    def forget(self, path: str | os.PathLike[str]) -> bool:
        """Remove any decision about the path (untrust); True when there was one."""
        files = self._read()
        if files.pop(self._key(path), None) is None:
            return False
        self._write(files)
        return True


__all__ = [
    "Decision",
    "TrustRecord",
    "TrustStore",
    "default_store_path",
    "digest",
    "is_user_file",
    "launch_env_warning",
]
