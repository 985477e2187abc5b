"""A real Jupyter Server (or JupyterLab) with our extension on 127.0.0.1, in a throwaway HOME.

What the project's tests and the soak (`bench/soak`) start their servers with: `jupyter(root, home)`
runs one until the block ends; the same `port` and `token` again start it anew where an open page
reconnects to it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2

from agentik_jupyter.testing.processes import stop


@dataclass
class RunningServer:
    """A running Jupyter server as one test module sees it: `root` is the module's own folder,
    `prefix` that folder's path under the server's root ("" when the server is the module's own)."""

    url: str
    token: str
    root: Path
    proc: subprocess.Popen[bytes]
    log_path: Path
    prefix: str = ""
    log_from: int = 0
    """Where this module's part of a shared server's log starts (bytes)."""

    def log(self) -> str:
        with open(self.log_path, "rb") as log:
            log.seek(self.log_from)
            return log.read().decode(errors="replace")

    def at(self, url_path: str) -> str:
        """`url_path` (/lab/tree/x.ipynb, /notebooks/x.ipynb, /api/contents/x.ipynb, ...) with its
        file path taken inside this module's folder."""
        if self.prefix:
            for head in URL_HEADS:
                if url_path.startswith(head):
                    return f"{head}{self.prefix}/{url_path[len(head) :]}"
        return url_path

    def path(self, relative: str) -> str:
        """A file of this module's folder as the server names it (the contents and sessions APIs)."""
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def link(self, url_path: str, *, reset: bool = False) -> str:
        """The address a user opens: `url_path` in this module's folder, with the token (and
        JupyterLab's ?reset: no workspace from an earlier page)."""
        query = "reset&" if reset else ""
        return f"{self.url}{self.at(url_path)}?{query}token={self.token}"


URL_HEADS = ("/lab/tree/", "/notebooks/", "/tree/", "/edit/", "/api/contents/")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def isolated_env(home: Path, extra: dict[str, str] | None = None, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """A HOME and JUPYTER_* dirs of the test's own, so no user config leaks in; variables whose
    names start with one of `drop` are left out too."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "JPY_", *drop))}
    for sub in ("config", "data", "runtime"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_DATA_DIR": str(home / "data"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "IPYTHONDIR": str(home / "ipython"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


PORT_TAKEN = "is already in use"
"""What Jupyter Server logs when its port was taken between `free_port()` and its start."""
PORT_TRIES = 3


@contextlib.contextmanager
def jupyter(
    root: Path,
    home: Path,
    *,
    app: str = "server",
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    collaborative: bool = False,
    port: int | None = None,
    token: str | None = None,
    drop: tuple[str, ...] = (),
) -> Iterator[RunningServer]:
    """A Jupyter Server (or JupyterLab) on `root` with our extension. jupyter-collaboration stays
    off unless `collaborative`: one page per notebook document, as most users have it. A `port` and
    `token` given again start a server a page already open on the old one reconnects to (a restart).
    Variables of this process whose names start with one of `drop` stay out of the server's.

    The server never moves to another port (Jupyter's `port_retries`): a port another process took
    after `free_port()` chose it makes the server exit, and it starts again on a new free port."""
    token = token or secrets.token_hex(16)
    tries = 1 if port else PORT_TRIES
    for attempt in range(1, tries + 1):
        server = _start(root, home, app, env, collaborative, port or free_port(), token, drop)
        try:
            _wait_ready(server, app, timeout)
        except _PortTaken:
            stop(server.proc, 10)
            if attempt == tries:
                raise RuntimeError(
                    f"jupyter {app}: port {server.url} taken, {tries} times:\n{server.log()[-3000:]}"
                ) from None
            continue
        except BaseException:
            stop(server.proc, 10)
            raise
        break
    try:
        yield server
    finally:
        stop(server.proc, 10)


class _PortTaken(Exception):
    """The server exited because its port was taken."""


def _start(
    root: Path,
    home: Path,
    app: str,
    env: dict[str, str] | None,
    collaborative: bool,
    port: int,
    token: str,
    drop: tuple[str, ...],
) -> RunningServer:
    log_path = home / f"jupyter-{app}.log"
    args = [
        sys.executable,
        "-m",
        "jupyter",
        app if app == "server" else "lab",
        "--no-browser",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.open_browser=False",
        "--ServerApp.jpserver_extensions={'agentik_jupyter': True}",
        # jupyter-lsp's search for language servers runs `npm` at every start; no test uses one
        "--LanguageServerManager.autodetect=False",
    ]
    if not collaborative:
        args.append("--YDocExtension.disable_rtc=True")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")
    if app == "lab":
        args += ["--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    home.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, cwd=root, env=isolated_env(home, env, drop), stdout=log, stderr=subprocess.STDOUT)
    return RunningServer(f"http://127.0.0.1:{port}", token, root, proc, log_path)


def _wait_ready(server: RunningServer, app: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if server.proc.poll() is not None:
            log = server.log()
            if PORT_TAKEN in log:
                raise _PortTaken()
            raise RuntimeError(f"jupyter {app} exited:\n{log[-3000:]}")
        try:
            r = httpx2.get(f"{server.url}/api/status", headers={"Authorization": f"token {server.token}"}, timeout=2)
            if r.status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"jupyter {app} did not start:\n{server.log()[-3000:]}")
        time.sleep(0.2)
