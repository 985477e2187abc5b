"""Jupyter Servers for test modules (the kit's `jupyter`, agentik_jupyter/testing/jupyter_server.py) and kernels in them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentik_jupyter.testing import FakeLLMServer
from agentik_jupyter.testing.jupyter_server import URL_HEADS, RunningServer, free_port, isolated_env, jupyter
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY

__all__ = [
    "URL_HEADS",
    "RunningServer",
    "attach",
    "free_port",
    "isolated_env",
    "jupyter",
    "jupyter_for",
    "server_fixtures",
    "start_notebook_session",
    "stop_notebook_session",
]


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
