"""A turn through the Jupyter server (the key held there) against a turn in the kernel, side by side.

One real Jupyter Server with our extension, its environment pointing at the fake LLM with a key:
the extension takes the key, so a kernel it starts has none and its agent sends every model call
to the server's chat route (SSE). Two notebooks open in that server, so both kernels are started
the same way; in the second the key is set inside the kernel (`os.environ["LLM_API_KEY"] = …`, as
a user with `getpass` would), which keeps its turns in the kernel. The bench's client answers the
kernel's frontend handshake as our lab extension does (bench/kernel_client.py).

- `unpaced`: `kernel_turns`' workload (a 4,000-character answer in 4-character chunks, as fast as
  the socket takes them): `%%agent --wait` cells, execute request to idle, server and kernel turns
  alternating, medians of REPEATS after a warm-up pair; `ratio` = server / kernel.
- `paced`: `paced_turns`' workload (the model thinks 0.3 s, then 250 chunks a second, ~4 s):
  `ratio` of the turn times, and `first_words_s` for each: from the fake server writing the
  answer's first frame to the client receiving the first frontend message with answer text.
- `stop`: a background turn streaming slowly; Stop clicked (the Button's comm message); the time
  until the cell's transcript replaces the live view, for each transport (median and worst of 5).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import nbformat
from jupyter_client import BlockingKernelClient

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.processes import stop

from .kernel_client import BenchKernel, cpu_clock, kernel_environ
from .kernel_turns import AGENT_CELL, ANSWER, CHUNK, SETUP, _checked
from .paced_turns import EXTENSION, PACE_HZ, THINK_S, _first_words, _replies, _run

REPEATS = 8
PACED_REPEATS = 5
STOPS = 5
SERVER_START_S = 90.0
BENCH_KEY = "sk-bench-held-by-the-server-0123"
KERNEL_KEY = "sk-bench-set-in-the-kernel-4567"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _jupyter(llm: FakeLLMServer, home: Path) -> Iterator[tuple[str, str, Path]]:
    """A Jupyter Server with our extension in a throwaway HOME: (url, token, root)."""
    root = home / "root"
    for sub in ("root", "config", "data", "runtime"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env = kernel_environ(llm.env(api_key=BENCH_KEY))
    env = {k: v for k, v in env.items() if not k.startswith("JUPYTER_")}
    env.update(
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        IPYTHONDIR=str(home / "ipython"),
        AGENTIK_APPROVE="auto",
    )
    token, port = secrets.token_hex(16), _free_port()
    args = [
        sys.executable,
        "-m",
        "jupyter",
        "server",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.jpserver_extensions={'agentik_jupyter': True}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")
    url = f"http://127.0.0.1:{port}"
    with open(home / "server.log", "wb") as log:
        proc = subprocess.Popen(args, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"jupyter server did not start:\n{(home / 'server.log').read_text()[-2000:]}")
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(f"{url}/api/status", headers={"Authorization": f"token {token}"}).status_code == 200:
                    break
            time.sleep(0.2)
        yield url, token, root
    finally:
        stop(proc, 10)


class ServerKernel(BenchKernel):
    """A BenchKernel speaking to a kernel the server started for `name` (closing leaves it to the server)."""

    def __init__(self, url: str, token: str, root: Path, home: Path, name: str) -> None:
        nbformat.write(nbformat.v4.new_notebook(), root / name)
        r = httpx2.post(
            f"{url}/api/sessions",
            json={"path": name, "name": name, "type": "notebook", "kernel": {"name": "python3"}},
            headers={"Authorization": f"token {token}"},
            timeout=60,
        )
        r.raise_for_status()
        kernel_id = r.json()["kernel"]["id"]
        self.kc = BlockingKernelClient(connection_file=str(home / "runtime" / f"kernel-{kernel_id}.json"))
        self.kc.load_connection_file()
        self.kc.start_channels(hb=False)
        self.kc.wait_for_ready(timeout=60)
        self.stray = []
        self.frontend = EXTENSION
        self.page = None  # no notebook page answers here: the turns read and edit no cell
        self.dir = None  # type: ignore[assignment]
        self._cpu = cpu_clock(int(self.value("__import__('os').getpid()")))

    def close(self) -> None:
        self.kc.stop_channels()


def _transport(kernel: BenchKernel) -> str:
    agent = "__import__('agentik_jupyter.kernel.agent', fromlist=['get_agent']).get_agent(get_ipython())"
    return str(kernel.value(f"{agent}.session.orchestrator.transport.current().__class__.__name__"))


def _unpaced(server_k: BenchKernel, kernel_k: BenchKernel, llm: FakeLLMServer) -> dict[str, Any]:
    llm.pace = 0.0
    times: dict[str, list[float]] = {"server": [], "kernel": []}
    for i in range(REPEATS + 1):
        for name, kernel in (("server", server_k), ("kernel", kernel_k)):
            llm.push(Reply.text(ANSWER, chunks=len(ANSWER) // CHUNK))
            cell = _checked(kernel.run(AGENT_CELL))
            if i:
                times[name].append(cell.seconds)
    server_s, kernel_s = _median(times["server"]), _median(times["kernel"])
    return {"server_s": round(server_s, 4), "kernel_s": round(kernel_s, 4), "ratio": round(server_s / kernel_s, 3)}


def _paced(server_k: BenchKernel, kernel_k: BenchKernel, llm: FakeLLMServer) -> dict[str, Any]:
    llm.pace = PACE_HZ
    cells: dict[str, list[Any]] = {"server": [], "kernel": []}
    try:
        for i in range(PACED_REPEATS + 1):
            for name, kernel in (("server", server_k), ("kernel", kernel_k)):
                llm.push(*_replies(False))
                cell = _run(kernel, llm, AGENT_CELL, agent=True)
                if i:
                    cells[name].append(cell)
    finally:
        llm.pace = 0.0
    server_s = _median([c.seconds for c in cells["server"]])
    kernel_s = _median([c.seconds for c in cells["kernel"]])
    server_words = _first_words(cells["server"], "first_words")
    kernel_words = _first_words(cells["kernel"], "first_words")
    return {
        "server_s": round(server_s, 4),
        "kernel_s": round(kernel_s, 4),
        "ratio": round(server_s / kernel_s, 3),
        "first_words_s": server_words.get("first_words_s"),
        "first_words_max_s": server_words.get("first_words_max_s"),
        "kernel_first_words_s": kernel_words.get("first_words_s"),
        "pace_hz": PACE_HZ,
        "think_s": THINK_S,
    }


def _stop_times(kernel: BenchKernel, llm: FakeLLMServer) -> list[float]:
    slow = ("word " * 4000).strip()
    times: list[float] = []
    llm.chunk_delay = 0.002
    try:
        for _ in range(STOPS):
            llm.push(Reply.text(slow, chunks=len(slow) // CHUNK))
            cell = kernel.run("%%agent\nCount slowly.")
            shown = cell.messages + kernel.drain(0.3)  # the live view comes up; the answer streams
            buttons = [
                m["content"]["comm_id"]
                for m in shown
                if m["msg_type"] == "comm_open"
                and m["content"]["data"].get("state", {}).get("_model_name") == "LiveStatusModel"
            ]  # (with our extension, the status line and Stop are one widget)
            if not buttons:
                raise RuntimeError("the turn's view has no Stop button")
            started = time.perf_counter()
            kernel.send_comm(buttons[-1], {"method": "custom", "content": {"event": "stop"}})
            while True:
                msg = kernel.kc.get_iopub_msg(timeout=10)
                if msg["msg_type"] == "update_display_data":
                    times.append(time.perf_counter() - started)
                    break
            kernel.drain(0.3)
            llm.clear()
    finally:
        llm.chunk_delay = 0.0
    return times


def _median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def server_turns() -> dict[str, Any]:
    """Both transports in kernels of one Jupyter server; every timed turn's transcript holds the answer."""
    with FakeLLMServer() as llm, tempfile.TemporaryDirectory(prefix="agentik-bench-server-") as tmp:
        home = Path(tmp)
        with _jupyter(llm, home) as (url, token, root):
            server_k = ServerKernel(url, token, root, home, "server.ipynb")
            kernel_k = ServerKernel(url, token, root, home, "kernel.ipynb")
            try:
                for kernel in (server_k, kernel_k):
                    kernel.run(SETUP)
                kernel_k.run(f"os.environ['LLM_API_KEY'] = {KERNEL_KEY!r}")
                if server_k.value("os.environ.get('LLM_API_KEY')") is not None:
                    raise RuntimeError("the server's kernel has the key: the extension did not take it")
                unpaced = _unpaced(server_k, kernel_k, llm)
                transports = {"server": _transport(server_k), "kernel": _transport(kernel_k)}
                if transports != {"server": "ServerTransport", "kernel": "InProcessTransport"}:
                    raise RuntimeError(f"the turns did not take the transports compared: {transports}")
                paced = _paced(server_k, kernel_k, llm)
                server_stops, kernel_stops = _stop_times(server_k, llm), _stop_times(kernel_k, llm)
            finally:
                server_k.close()
                kernel_k.close()
    return {
        "unpaced": unpaced,
        "paced": paced,
        "stop": {
            "server_s": round(_median(server_stops), 4),
            "server_max_s": round(max(server_stops), 4),
            "kernel_s": round(_median(kernel_stops), 4),
            "kernel_max_s": round(max(kernel_stops), 4),
            "ratio": round(_median(server_stops) / _median(kernel_stops), 3),
            "samples": len(server_stops),
        },
        "transports": transports,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(server_turns(), indent=2))
