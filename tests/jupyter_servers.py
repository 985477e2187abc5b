"""Start a real Jupyter Server / JupyterLab on 127.0.0.1 for tests, in a throwaway HOME."""

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
from typing import Any

import httpx2
import pytest

from agentik_jupyter.testing import FakeLLMServer
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY


@dataclass
class RunningServer:
    url: str
    token: str
    root: Path
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def isolated_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A HOME and JUPYTER_* dirs of the test's own, so no user config leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "JPY_"))}
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


@contextlib.contextmanager
def jupyter(
    root: Path,
    home: Path,
    *,
    app: str = "server",
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    collaborative: bool = False,
) -> Iterator[RunningServer]:
    """A Jupyter Server (or JupyterLab) on `root`. jupyter-collaboration (a test dependency) stays
    off unless `collaborative`: one page per notebook document, as most users have it."""
    token = secrets.token_hex(16)
    port = free_port()
    log_path = home / f"jupyter-{app}.log"
    args = [
        sys.executable,
        "-m",
        "jupyter",
        app if app == "server" else "lab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.open_browser=False",
        "--ServerApp.jpserver_extensions={'agentik_jupyter': True}",
    ]
    if not collaborative:
        args.append("--YDocExtension.disable_rtc=True")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")
    if app == "lab":
        args += ["--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    home.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, cwd=root, env=isolated_env(home, env), stdout=log, stderr=subprocess.STDOUT)
    server = RunningServer(f"http://127.0.0.1:{port}", token, root, proc, log_path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter {app} exited:\n{server.log()[-3000:]}")
            try:
                r = httpx2.get(f"{server.url}/api/status", headers={"Authorization": f"token {token}"}, timeout=2)
                if r.status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter {app} did not start:\n{server.log()[-3000:]}")
            time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@contextlib.contextmanager
def jupyter_for(
    llm: FakeLLMServer,
    tmp_path_factory: pytest.TempPathFactory,
    api_key: str = FAKE_API_KEY,
) -> Iterator[RunningServer]:
    """A Jupyter Server whose provider is the fake LLM: the key is only in the server's environment."""
    root, home = tmp_path_factory.mktemp("root"), tmp_path_factory.mktemp("home")
    with jupyter(root, home, env=llm.env("openai-compatible", api_key=api_key)) as running:
        yield running


def server_fixtures(api_key: str = FAKE_API_KEY) -> tuple[Any, Any]:
    """Module-scoped `llm` (the fake LLM) and `server` (a Jupyter Server using it with `api_key`)
    fixtures; a test module takes them with `llm, server = server_fixtures()`."""

    @pytest.fixture(scope="module")
    def llm() -> Iterator[FakeLLMServer]:
        with FakeLLMServer() as fake:
            yield fake

    @pytest.fixture(scope="module")
    def server(llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
        with jupyter_for(llm, tmp_path_factory, api_key) as running:
            yield running

    return llm, server


def start_notebook_session(server: RunningServer, path: str) -> dict[str, Any]:
    """Open `path` (created empty if missing) as JupyterLab does: a session with a python3 kernel."""
    import nbformat

    notebook = server.root / path
    if not notebook.exists():
        nbformat.write(nbformat.v4.new_notebook(), notebook)
    r = httpx2.post(
        f"{server.url}/api/sessions",
        json={"path": path, "name": Path(path).name, "type": "notebook", "kernel": {"name": "python3"}},
        headers={"Authorization": f"token {server.token}"},
        timeout=60,
    )
    r.raise_for_status()
    return dict(r.json())


def stop_notebook_session(server: RunningServer, session: dict[str, Any]) -> None:
    httpx2.delete(
        f"{server.url}/api/sessions/{session['id']}", headers={"Authorization": f"token {server.token}"}, timeout=30
    )


def attach(server: RunningServer, kernel_id: str) -> Any:
    """A `RawKernel` speaking to a kernel the server started (through its connection file);
    closing it leaves the kernel to the server."""
    from jupyter_client import BlockingKernelClient

    from tests.kernel_support import START_TIMEOUT, RawKernel

    class Attached(RawKernel):
        def __init__(self) -> None:
            self.km = None
            self.iopub = []
            self._done = {}
            self._open = {}
            self.kc = BlockingKernelClient(
                connection_file=str(server.log_path.parent / "runtime" / f"kernel-{kernel_id}.json")
            )
            self.kc.load_connection_file()
            self.kc.start_channels(hb=False)  # (a heartbeat missed on a loaded machine reads as a dead kernel)
            self.kc.wait_for_ready(timeout=START_TIMEOUT)

        def close(self) -> None:
            if self.kc is not None:
                self.kc.stop_channels()
                self.kc = None

    return Attached()
