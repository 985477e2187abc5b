"""The soak's world: its own Jupyter server (restartable on the same address), the notebook's kernel, the contents API.

The server is the soak's own, not a shared one: a server restart takes every kernel with it. Its
provider is the demo model (`demo_responder`) on a fake LLM server in this process, so the server
holds the key and the kernels' turns go through its chat route, which a server restart cuts.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
from jupyter_client import BlockingKernelClient

from agentik_jupyter.testing import FakeLLMServer
from agentik_jupyter.testing.demo import DEMO_KEY, DEMO_MODEL, demo_responder
from agentik_jupyter.testing.jupyter_server import RunningServer, jupyter

START_S = 120.0
CELL_S = 180.0
UNREADABLE_TRIES = 6
"""Reads of a notebook found empty mid-save before the soak says it is unreadable."""
PAGE_SPOKE = "__import__('agentik_jupyter.notebook.requests', fromlist=['frontend']).frontend.page_spoke"
"""Whether a page with our extension has spoken to the kernel, as a user expression."""
CHUNK_DELAY_S = 0.002
"""Seconds between the demo's chunks: its long essay streams for a few seconds, long enough to act mid-turn."""


class SoakError(RuntimeError):
    """The soak could not do what a step asked (a server that did not start, a cell that never
    answered): not a violation of the invariants, but the run cannot go on."""


COLLABORATION = ("off", "on", "alternate")
"""jupyter-collaboration in the soak's server: never, always, or off at first and switched at every
server restart (`--collaboration`)."""


class World:
    """One notebook open in one Jupyter server: `path` is where the notebook is now (relative to
    the root), `kernel` a client of its kernel with our extension loaded; `collaborative` says
    whether the server runs jupyter-collaboration now (its pages share one document)."""

    def __init__(self, base: Path, llm: FakeLLMServer, *, lab: bool = False, collaboration: str = "off") -> None:
        self.root = base / "root"
        self.home = base / "home"
        self.root.mkdir(parents=True, exist_ok=True)
        self.llm = llm
        self.lab = lab
        self.collaborative = collaboration == "on"
        self.alternate = collaboration == "alternate"
        self.path = "soak.ipynb"
        self.server: RunningServer | None = None
        self._stack: contextlib.ExitStack | None = None
        self._port: int | None = None
        self._token: str | None = None
        self.kernel_id = ""
        self.kc: BlockingKernelClient | None = None
        self.restarts = {"kernel": 0, "server": 0}
        self._replies: dict[str, dict[str, Any]] = {}

    # ---- the server ----

    def start_server(self) -> RunningServer:
        env = {
            **self.llm.env("openai-compatible", model=DEMO_MODEL, api_key=DEMO_KEY),
            "AGENTIK_APPROVE": "auto",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        }
        stack = contextlib.ExitStack()
        try:
            self.server = stack.enter_context(
                jupyter(
                    self.root,
                    self.home,
                    app="lab" if self.lab else "server",
                    env=env,
                    timeout=START_S,
                    port=self._port,
                    token=self._token,
                    drop=("AGENTIK_", "LLM_"),
                    collaborative=self.collaborative,
                )
            )
        except RuntimeError as exc:
            stack.close()
            raise SoakError(str(exc)) from exc
        self._stack = stack
        self._port = int(self.server.url.rsplit(":", 1)[1])
        self._token = self.server.token
        return self.server

    def stop_server(self) -> None:
        self.close_kernel_client()
        if self._stack is not None:
            self._stack.close()
            self._stack = None
        self.server = None

    def restart_server(self) -> None:
        """Stop the server (its kernels go with it) and start it again on the same address (with
        collaboration switched on or off, when it alternates)."""
        self.stop_server()
        if self.alternate:
            self.collaborative = not self.collaborative
        self.start_server()
        self.restarts["server"] += 1

    def api(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        assert self.server is not None
        r = httpx2.request(
            method,
            f"{self.server.url}{path}",
            headers={"Authorization": f"token {self.server.token}"},
            timeout=60,
            **kwargs,
        )
        if r.status_code >= 400:
            raise SoakError(f"{method} {path}: {r.status_code} {r.text[:300]}")
        return r

    # ---- the notebook ----

    def read_notebook(self) -> dict[str, Any]:
        """The notebook as the contents API gives it (what a page opening it would load). Jupyter
        Server saves a file in place, so a read during a page's save can find it empty ("Unreadable
        Notebook"); as a page would, it is read again a moment later."""
        for _ in range(UNREADABLE_TRIES - 1):
            try:
                return self._read_notebook()
            except SoakError as exc:
                if "Unreadable Notebook" not in str(exc):
                    raise
                time.sleep(0.5)
        return self._read_notebook()

    def _read_notebook(self) -> dict[str, Any]:
        return dict(self.api("GET", f"/api/contents/{self.path}", params={"content": "1"}).json()["content"])

    def save_notebook(self, content: dict[str, Any]) -> None:
        """Save as a page does (PUT through the contents API)."""
        self.api("PUT", f"/api/contents/{self.path}", json={"type": "notebook", "format": "json", "content": content})

    def move(self, new_path: str) -> None:
        """Rename or move as JupyterLab does (PATCH through the contents API)."""
        parts = new_path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if not (self.root / folder).is_dir():
                self.api("PUT", f"/api/contents/{folder}", json={"type": "directory"})
        self.api("PATCH", f"/api/contents/{self.path}", json={"path": new_path})
        self.path = new_path

    def file(self) -> Path:
        return self.root / self.path

    def sessions_file(self) -> Path:
        """Where the notebook's sessions file belongs: `<stem>.agentik.db` beside it."""
        notebook = self.file()
        return notebook.with_name(f"{notebook.stem}.agentik.db")

    # ---- the kernel ----

    def open_kernel(self) -> None:
        """A Jupyter session for the notebook (as opening it in a page does), a client of its
        kernel, and our extension loaded in it."""
        session = self.api(
            "POST",
            "/api/sessions",
            json={"path": self.path, "name": Path(self.path).name, "type": "notebook", "kernel": {"name": "python3"}},
        ).json()
        self.kernel_id = session["kernel"]["id"]
        self._connect()
        self.execute("%load_ext agentik_jupyter")

    def _connect(self) -> None:
        self.close_kernel_client()
        connection = self.home / "runtime" / f"kernel-{self.kernel_id}.json"
        deadline = time.monotonic() + START_S
        while not connection.exists():
            if time.monotonic() > deadline:
                raise SoakError(f"no connection file for kernel {self.kernel_id}")
            time.sleep(0.1)
        kc = BlockingKernelClient(connection_file=str(connection))
        kc.load_connection_file()
        kc.start_channels(iopub=False, stdin=False, hb=False, control=False)
        kc.wait_for_ready(timeout=START_S)
        self.kc = kc

    def close_kernel_client(self) -> None:
        self._replies.clear()
        if self.kc is not None:
            self.kc.stop_channels()
            self.kc = None

    def send(self, code: str) -> str:
        """Run a cell without waiting for it (a turn in the background of the step)."""
        assert self.kc is not None
        return str(self.kc.execute(code, allow_stdin=False))

    def wait(self, msg_id: str, timeout: float = CELL_S) -> dict[str, Any]:
        """The execute reply of `msg_id` (replies of cells cut off by a restart never come)."""
        deadline = time.monotonic() + timeout
        while True:
            reply = self.poll(msg_id, min(1.0, max(0.0, deadline - time.monotonic())))
            if reply is not None:
                return reply
            if time.monotonic() > deadline:
                raise SoakError(f"no reply to a cell within {timeout:.0f} s")

    def poll(self, msg_id: str, timeout: float = 0.0) -> dict[str, Any] | None:
        """The execute reply of `msg_id` if it came within `timeout` seconds (others are kept)."""
        assert self.kc is not None
        if msg_id in self._replies:
            return self._replies.pop(msg_id)
        deadline = time.monotonic() + timeout
        while True:
            try:
                reply = self.kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
            except Exception:  # queue.Empty: nothing yet
                return None
            parent = reply["parent_header"].get("msg_id")
            if parent == msg_id:
                return dict(reply["content"])
            self._replies[parent] = dict(reply["content"])
            if time.monotonic() > deadline:
                return None

    def execute(self, code: str, timeout: float = CELL_S) -> dict[str, Any]:
        content = self.wait(self.send(code), timeout)
        if content.get("status") != "ok":
            raise SoakError(f"cell failed: {code[:60]!r}: {content.get('ename')}: {content.get('evalue')}")
        return content

    def wait_for_page(self, timeout: float) -> None:
        """Until a page with our extension has spoken to the kernel (it asks when it connects). A
        page just opened on a loaded machine can take seconds to, and a turn this client starts before
        it has gives the page the short wait of a frontend without the extension."""
        assert self.kc is not None
        deadline = time.monotonic() + timeout
        while True:
            msg_id = self.kc.execute("", silent=True, user_expressions={"spoke": PAGE_SPOKE}, allow_stdin=False)
            found = self.wait(msg_id).get("user_expressions", {}).get("spoke", {})
            if found.get("data", {}).get("text/plain") == "True":
                return
            if time.monotonic() > deadline:
                raise SoakError(f"the page's extension did not speak to the kernel within {timeout:.0f} s: {found}")
            time.sleep(0.2)

    def restart_kernel(self) -> None:
        """Restart the kernel as Kernel › Restart does; its cells cut off, the extension loaded again."""
        self.api("POST", f"/api/kernels/{self.kernel_id}/restart")
        self._connect()
        self.execute("%load_ext agentik_jupyter")
        self.restarts["kernel"] += 1

    def close(self) -> None:
        self.stop_server()


@contextlib.contextmanager
def world(
    base: Path, *, lab: bool = False, collaboration: str = "off", chunk_delay: float = CHUNK_DELAY_S
) -> Iterator[World]:
    """A world with its server started and the notebook open (created with `cells` first)."""
    with FakeLLMServer(chunk_delay=chunk_delay, responder=demo_responder) as llm:
        w = World(base, llm, lab=lab, collaboration=collaboration)
        try:
            w.start_server()
            yield w
        finally:
            w.close()


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
