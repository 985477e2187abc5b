"""JupyterLab servers, the fake LLM behind them and Chromium, started once per test process and shared.

A browser module used to start its own JupyterLab (seconds of CPU each, more on a loaded machine)
and its own Chromium. Now every module of a test process (an xdist worker) shares one JupyterLab
per configuration (collaboration on or off, our extension on or off, a theme, extra environment),
one fake LLM and one Chromium. What stays per module keeps the modules independent in any order:

- its own folder under the server's root (the server's root is the process's pytest base temp, so
  `tmp_path_factory.mktemp` folders are inside it), its notebooks and sessions files in it;
- the fake LLM cleared and set up for it (queue, responder, pace) when the module starts;
- its own browser context (cookies, storage, cache) and page, JupyterLab opened with ?reset;
- at its end every kernel and session it started is shut down, and its part of the server's log
  is saved as its artifact.

The session-scoped `shared_servers` fixture (tests/conftest.py) gives the pool its base folder
and closes everything when the process ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentik_jupyter.testing import FakeLLMServer
from agentik_jupyter.testing.processes import stop
from tests.jupyter_servers import RunningServer, free_port, jupyter

APPROVAL_TIMEOUT = "120"
"""Every shared server's kernels wait this long for a click: a lost click never hangs a test."""
IGNORED_ENV = ("AGENTIK_DB_PATH",)
"""Settings a module once gave its own server that a shared one leaves out: sessions files stay
beside each notebook, in the module's own folder."""


THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}


def theme_settings(home: Path, theme: str) -> None:
    """The user's theme, as JupyterLab's Settings > Theme saves it."""
    settings = home / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "themes.jupyterlab-settings").write_text(json.dumps({"theme": THEMES[theme]}))


def user_settings(home: Path, plugin: str, text: str) -> None:
    """One plugin's user settings ("@jupyterlab/toc-extension/registry"), as JupyterLab saves them."""
    path = home / "config" / "lab" / "user-settings" / f"{plugin}.jupyterlab-settings"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def disabled_extensions(home: Path, names: tuple[str, ...]) -> None:
    """These lab extensions or plugins ("agentik-jupyter", "agentik-jupyter:goto") disabled in the
    user's config, as `jupyter labextension disable NAME` writes it (labconfig/page_config.json)."""
    page_config = home / "config" / "labconfig" / "page_config.json"
    page_config.parent.mkdir(parents=True, exist_ok=True)
    page_config.write_text(json.dumps({"disabledExtensions": dict.fromkeys(names, True)}))


@dataclass(frozen=True)
class ServerConfig:
    """What makes two modules need different servers."""

    app: str = "jupyterlab"
    """Which app's pages it serves: a JupyterLab page leaves state on its server (the file
    browser's) that a later Notebook 7 page trips over ("Command 'filebrowser:open-path' not registered")."""
    collaborative: bool = False
    disabled: tuple[str, ...] = ()
    """Lab extensions or plugins disabled ("agentik-jupyter": our extension, as without it)."""
    theme: str | None = None
    settings: tuple[tuple[str, str], ...] = ()
    """User settings files (under lab/user-settings, e.g. "@jupyterlab/toc-extension/registry") and their JSON."""
    env: tuple[tuple[str, str], ...] = ()


class ServerPool:
    """The servers, fake LLM and Chromium of this test process, each started on first use."""

    def __init__(self) -> None:
        self.base: Path | None = None
        self._servers: dict[ServerConfig, RunningServer] = {}
        self._llm: FakeLLMServer | None = None
        self._chromium: Chromium | None = None
        self._stack = contextlib.ExitStack()

    def start(self, base: Path) -> None:
        self.base = base

    def llm(self) -> FakeLLMServer:
        if self._llm is None:
            self._llm = self._stack.enter_context(FakeLLMServer())
        return self._llm

    def server(self, config: ServerConfig, prepare_home: Callable[[Path], None]) -> RunningServer:
        if config not in self._servers:
            if self.base is None:
                raise RuntimeError("the shared servers need the shared_servers fixture (tests/conftest.py)")
            home = self.base / f"shared-home-{len(self._servers)}"
            home.mkdir(parents=True, exist_ok=True)
            prepare_home(home)
            path = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
            env = {**self.llm().env(), "AGENTIK_APPROVAL_TIMEOUT": APPROVAL_TIMEOUT, **dict(config.env), "PATH": path}
            with pytest.MonkeyPatch.context() as mp:  # the runner's own AGENTIK_* (nbval's WAIT, APPROVE=auto) stay out
                for name in [n for n in os.environ if n.startswith("AGENTIK_")]:
                    mp.delenv(name)
                self._servers[config] = self._stack.enter_context(
                    jupyter(self.base, home, app="lab", env=env, timeout=120, collaborative=config.collaborative)
                )
        return self._servers[config]

    def chromium(self) -> Chromium:
        if self._chromium is None:
            if self.base is None:
                raise RuntimeError("the shared Chromium needs the shared_servers fixture (tests/conftest.py)")
            self._chromium = self._stack.enter_context(chromium())
        return self._chromium

    def close(self) -> None:
        self._stack.close()
        self._servers.clear()
        self._llm = None
        self._chromium = None


POOL = ServerPool()


@contextlib.contextmanager
def shared_llm(*, chunk_delay: float = 0.0, pace: float = 0.0) -> Iterator[FakeLLMServer]:
    """The process's fake LLM, cleared and paced for one module (and cleared again after it)."""
    llm = POOL.llm()
    reset_llm(llm, chunk_delay=chunk_delay, pace=pace)
    try:
        yield llm
    finally:
        reset_llm(llm)


def reset_llm(llm: FakeLLMServer, *, chunk_delay: float = 0.0, pace: float = 0.0) -> None:
    llm.clear()
    llm.set_responder(None)
    llm.chunk_delay = chunk_delay
    llm.pace = pace
    llm.first_frame_at.clear()


@contextlib.contextmanager
def module_view(
    root: Path, config: ServerConfig, prepare_home: Callable[[Path], None], *, save: Callable[[str], None]
) -> Iterator[RunningServer]:
    """The shared server of `config` as one module sees it (its folder `root`); its kernels and
    sessions shut down at the end, and `save` gets its part of the log."""
    shared = POOL.server(config, prepare_home)
    assert POOL.base is not None
    try:
        prefix = root.resolve().relative_to(POOL.base.resolve()).as_posix()
    except ValueError as exc:
        raise RuntimeError(f"{root} is not under the shared servers' root {POOL.base}: use tmp_path_factory") from exc
    view = replace(shared, root=root, prefix=prefix, log_from=shared.log_path.stat().st_size)
    home = shared.log_path.parent
    settings = home / "config" / "lab" / "user-settings"
    kept = home / "user-settings-kept"
    shutil.rmtree(kept, ignore_errors=True)
    if settings.exists():
        shutil.copytree(settings, kept)
    try:
        yield view
    finally:
        shut_down_kernels(view)
        save(view.log())
        # what the module changed through the page (Settings > Theme, a panel's layout) goes
        shutil.rmtree(settings, ignore_errors=True)
        if kept.exists():
            shutil.copytree(kept, settings)
        for workspaces in (home / "config" / "lab" / "workspaces", home / "data" / "lab" / "workspaces"):
            shutil.rmtree(workspaces, ignore_errors=True)


def shut_down_kernels(server: RunningServer) -> None:
    """Delete every session and kernel: the next module starts on a server with none running."""
    headers = {"Authorization": f"token {server.token}"}
    with contextlib.suppress(httpx2.HTTPError):
        for session in httpx2.get(f"{server.url}/api/sessions", headers=headers, timeout=30).json():
            httpx2.delete(f"{server.url}/api/sessions/{session['id']}", headers=headers, timeout=60)
        for kernel in httpx2.get(f"{server.url}/api/kernels", headers=headers, timeout=30).json():
            httpx2.delete(f"{server.url}/api/kernels/{kernel['id']}", headers=headers, timeout=60)


@dataclass
class Chromium:
    """A headless Chromium that modules connect to over the DevTools protocol."""

    endpoint: str
    proc: subprocess.Popen[bytes]


@contextlib.contextmanager
def chromium(*, timeout: float = 90.0) -> Iterator[Chromium]:
    """Chromium launched by Playwright in a process of its own (tests/browser_host.py), its
    DevTools endpoint open to this process's modules."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.browser_host", str(port)],
        cwd=Path(__file__).parents[1],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the browser host exited with {proc.returncode}")
            with contextlib.suppress(httpx2.HTTPError, json.JSONDecodeError):
                if httpx2.get(f"{endpoint}/json/version", timeout=2).json().get("Browser"):
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not answer on {endpoint} within {timeout} s")
            time.sleep(0.1)
        yield Chromium(endpoint, proc)
    finally:
        stop(proc, 20)


def new_context(playwright: Any, **options: Any) -> Any:
    """A fresh browser context (its own cookies, storage and cache) in the shared Chromium."""
    browser = playwright.chromium.connect_over_cdp(POOL.chromium().endpoint, timeout=90_000)
    context = browser.new_context(**options)
    return browser, context
