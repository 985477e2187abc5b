"""Where the Jupyter server takes the provider's key from: its config, a file, or its environment.

`c.AgentikJupyter.api_key` (a Jupyter server config file) and `LLM_API_KEY_FILE` (a path the server
reads once, the `*_FILE` convention of Docker and Kubernetes secrets) keep the key out of every
process's environment; `LLM_API_KEY` in the server's environment is the simple way, readable by
processes of the same user in the environment of whatever started the server. The first of config,
file and environment that is set wins. A file that cannot be read is reported by its path, never by
what it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from traitlets import Unicode
from traitlets.config import Config, Configurable

from agentik_jupyter.core.transport import SOURCE_CONFIG, SOURCE_ENVIRONMENT, SOURCE_FILE
from agentik_jupyter.security.scrub import KEY_VARIABLE

KEY_FILE = "LLM_API_KEY_FILE"
MAX_KEY_FILE_BYTES = 64 * 1024
"""A key file bigger than this is not a key (a path mistaken for another file)."""


class AgentikJupyter(Configurable):
    """The server extension's settings, e.g. in `jupyter_server_config.py`:
    `c.AgentikJupyter.api_key = open("/run/secrets/llm_key").read().strip()`."""

    api_key = Unicode(
        "",
        help="The provider's key, held by the Jupyter server only (kernels never see it). "
        "Takes precedence over LLM_API_KEY_FILE and LLM_API_KEY.",
    ).tag(config=True)


@dataclass(frozen=True)
class ServerKey:
    """The key the server found and where (a SOURCE_* value); `problem` instead of a key when the
    place it was pointed to could not be read."""

    source: str
    key: str = ""
    problem: str = ""

    def __repr__(self) -> str:
        return f"ServerKey(source={self.source!r}, problem={self.problem!r})"  # never the key


def read_key_file(path: str) -> ServerKey:
    """The key in the file at `path`, without one trailing line break."""
    where = f"{KEY_FILE}={path}"
    try:
        file = Path(path).expanduser()
        if file.is_dir():
            return ServerKey(SOURCE_FILE, problem=f"{where} is a folder, not a file holding the key")
        with file.open("rb") as f:
            raw = f.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        return ServerKey(SOURCE_FILE, problem=f"{where}: cannot read the key ({exc.strerror or type(exc).__name__})")
    if len(raw) > MAX_KEY_FILE_BYTES:
        return ServerKey(SOURCE_FILE, problem=f"{where} is over {MAX_KEY_FILE_BYTES // 1024} KB: not a key file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ServerKey(SOURCE_FILE, problem=f"{where} is not UTF-8 text")
    for ending in ("\r\n", "\n"):
        if text.endswith(ending):
            text = text[: -len(ending)]
            break
    if not text.strip():
        return ServerKey(SOURCE_FILE, problem=f"{where} is empty")
    return ServerKey(SOURCE_FILE, key=text)


def find_key(config: Config | None, environ: Mapping[str, str]) -> ServerKey | None:
    """The server's key from its `config` (the server app's), else the file `LLM_API_KEY_FILE` in
    `environ` names, else `LLM_API_KEY` in `environ`; None when none is set."""
    configured = AgentikJupyter(config=config).api_key.strip() if config is not None else ""
    if configured:
        return ServerKey(SOURCE_CONFIG, key=configured)
    path = (environ.get(KEY_FILE) or "").strip()
    if path:
        return read_key_file(path)
    if (environ.get(KEY_VARIABLE) or "").strip():
        return ServerKey(SOURCE_ENVIRONMENT, key=environ[KEY_VARIABLE])
    return None
