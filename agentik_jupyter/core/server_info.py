"""Which Jupyter server started this kernel: its URL and token, for the server transport."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServerInfo:
    url: str
    token: str | None
    root_dir: str | None = None


def find_server(environ: dict[str, str] | None = None) -> ServerInfo | None:
    """Read `jpserver-<JPY_PARENT_PID>.json` from the Jupyter runtime dir, if there is one."""
    env = dict(os.environ) if environ is None else environ
    pid = env.get("JPY_PARENT_PID")
    if not pid:
        return None
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        data = json.loads((Path(jupyter_runtime_dir()) / f"jpserver-{pid}.json").read_text())
    except (OSError, ValueError, ImportError):
        return None
    url = data.get("url")
    if not url:
        return None
    return ServerInfo(url=url.rstrip("/"), token=data.get("token") or None, root_dir=data.get("root_dir") or None)
