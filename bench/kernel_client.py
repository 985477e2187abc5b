"""A real kernel driven through jupyter_client, with exact timings and the frontend's view of a cell.

`run()` sends one execute request and blocks on iopub until the request's `idle`: the time is
what a frontend waits for the cell, and the messages are what it receives meanwhile (the
kernel's `status` and `execute_input` echoes left out: every cell has those).

With `frontend=` the client answers the kernel's frontend handshake (notebook/page.py) the
way our lab extension does (labextension/src/livetext.ts): a turn then streams as it would in
JupyterLab with the extension. Without it the client is a frontend without the extension
(VS Code, nbclient): the kernel keeps ipywidgets' own widgets. With `page=` (bench/notebook_page.py)
it also answers the kernel's requests to the notebook extension on a notebook the bench holds.
"""

from __future__ import annotations

import json
import os
import queue
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client import KernelManager

from .notebook_page import REPLY_TARGET, NotebookPage

KERNEL_START_S = 60.0
CELL_S = 120.0
PLUMBING = {"status", "execute_input"}


def message_bytes(msg: dict[str, Any]) -> int:
    """What a message carries to the frontend: its content as JSON, plus binary buffers."""
    size = len(json.dumps(msg["content"], ensure_ascii=False, default=str).encode())
    return size + sum(len(memoryview(b)) for b in msg.get("buffers") or [])


@dataclass
class Cell:
    """One execute request: seconds from send to idle, its reply, the frontend messages seen."""

    seconds: float
    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.reply.get("status") == "ok"

    def count(self, msg_type: str) -> int:
        return sum(1 for m in self.messages if m["msg_type"] == msg_type)

    @property
    def widget_updates(self) -> int:
        """comm_msg `update`s: each re-sends the changed traits of one widget."""
        return sum(
            1
            for m in self.messages
            if m["msg_type"] == "comm_msg" and m["content"].get("data", {}).get("method") == "update"
        )

    @property
    def bytes(self) -> int:
        return sum(message_bytes(m) for m in self.messages)

    @property
    def text(self) -> str:
        out = []
        for m in self.messages:
            if m["msg_type"] == "stream":
                out.append(m["content"]["text"])
            elif m["msg_type"] in {"execute_result", "display_data"}:
                out.append(str(m["content"]["data"].get("text/plain", "")))
            elif m["msg_type"] == "error":
                out.append("\n".join(m["content"].get("traceback") or []))
        return "".join(out)


def cpu_clock(pid: int) -> int:
    """The clock id of process `pid`'s CPU time, all its threads (Linux's CPUCLOCK_SCHED for a
    process: `clock_getcpuclockid`), readable from outside in nanoseconds without running code in it."""
    return ((~pid) << 3) | 2


class BenchKernel:
    """A python3 kernel in a temporary folder (its sessions file lands there)."""

    def __init__(
        self, env: dict[str, str], frontend: dict[str, int] | None = None, page: NotebookPage | None = None
    ) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="agentik-bench-")
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env, cwd=self.dir.name, extra_arguments=["--HistoryManager.hist_file=:memory:"])
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=KERNEL_START_S)
        self.stray: list[dict[str, Any]] = []
        self.frontend = frontend
        self.page = page
        pid = getattr(self.km.provisioner, "pid", None)  # (a local kernel: its process)
        self._cpu = cpu_clock(pid) if isinstance(pid, int) else None

    def cpu_s(self) -> float:
        """The kernel process's CPU time so far (all threads), in seconds."""
        if self._cpu is None:
            raise RuntimeError("the kernel's process is not known")
        return time.clock_gettime_ns(self._cpu) / 1e9

    @property
    def path(self) -> Path:
        return Path(self.dir.name)

    def send(self, code: str, cell_id: str | None = None) -> str:
        """Execute `code`; with `cell_id`, as JupyterLab runs that cell (its id in the request's metadata)."""
        if cell_id is None:
            return str(self.kc.execute(code, store_history=True))
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
        msg = self.kc.session.msg("execute_request", {**content, "stop_on_error": True}, metadata={"cellId": cell_id})
        self.kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def wait_idle(
        self,
        msg_id: str,
        started: float,
        timeout: float = CELL_S,
        on_message: Callable[[dict[str, Any]], None] | None = None,
    ) -> Cell:
        """Block on iopub until `msg_id` is idle; every message in between is kept."""
        deadline = started + timeout
        messages: list[dict[str, Any]] = []
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"cell not idle within {timeout} s")
            msg = self.kc.get_iopub_msg(timeout=remaining)
            self._answer_hello(msg)
            self._answer_page(msg)
            if on_message is not None:
                on_message(msg)
            parent = msg["parent_header"].get("msg_id")
            if msg["msg_type"] == "status" and parent == msg_id and msg["content"]["execution_state"] == "idle":
                break
            if msg["msg_type"] not in PLUMBING:
                messages.append(msg)
        seconds = time.perf_counter() - started
        return Cell(seconds, self._reply(msg_id), messages)

    def run(self, code: str, timeout: float = CELL_S) -> Cell:
        """Execute and wait; raise if the cell failed."""
        started = time.perf_counter()
        msg_id = self.send(code)
        cell = self.wait_idle(msg_id, started, timeout)
        if not cell.ok:
            raise RuntimeError(f"cell failed: {code[:80]!r}\n{cell.text}\n{cell.reply.get('evalue', '')}")
        return cell

    def value(self, expr: str) -> Any:
        cell = self.run(f"import json as _j\nprint(_j.dumps({expr}, default=str))")
        return json.loads(cell.text.strip().splitlines()[-1])

    def drain(self, seconds: float) -> list[dict[str, Any]]:
        """Take what iopub sends for `seconds` (background output)."""
        deadline = time.perf_counter() + seconds
        got: list[dict[str, Any]] = []
        while (remaining := deadline - time.perf_counter()) > 0:
            try:
                got.append(self.kc.get_iopub_msg(timeout=remaining))
            except queue.Empty:
                break
        return got

    def _answer_hello(self, msg: dict[str, Any]) -> None:
        """The extension's answer to the kernel's hello: a comm of the frontend's own, with its features."""
        if (
            self.frontend is None
            or msg["msg_type"] != "comm_open"
            or msg["content"].get("target_name") != "agentik.frontend"
        ):
            return
        reply = self.kc.session.msg(
            "comm_open",
            {"comm_id": uuid.uuid4().hex, "target_name": "agentik.frontend.reply", "data": dict(self.frontend)},
        )
        self.kc.shell_channel.send(reply)

    def _answer_page(self, msg: dict[str, Any]) -> None:
        """The page's answer to a request to the notebook extension, on a comm of its own."""
        reply = self.page.handle(msg) if self.page is not None else None
        if reply is None:
            return
        comm_id = uuid.uuid4().hex
        data = {**reply, "page": self.kc.session.session}
        self.kc.shell_channel.send(
            self.kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": REPLY_TARGET, "data": data})
        )
        self.kc.shell_channel.send(self.kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}}))

    def send_comm(self, comm_id: str, data: dict[str, Any]) -> None:
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)

    def _reply(self, msg_id: str) -> dict[str, Any]:
        while True:
            reply = self.kc.get_shell_msg(timeout=CELL_S)
            if reply["parent_header"].get("msg_id") == msg_id:
                return dict(reply["content"])

    def close(self) -> None:
        try:
            self.kc.stop_channels()
            self.km.shutdown_kernel(now=True)
        finally:
            self.km.cleanup_resources()
            self.dir.cleanup()


BENCH_CONTEXT_TOKENS = "200000"
"""A history budget no bench session reaches: these benches time turns, and a compaction would
add a summary request that takes a scripted reply meant for a turn (bench/long_session.py
measures compaction)."""


def kernel_environ(
    llm_env: dict[str, str], *, budget: str | None = BENCH_CONTEXT_TOKENS, **extra: str
) -> dict[str, str]:
    """This process's environment without LLM_/AGENTIK_/JPY_ settings, plus the fake server's;
    `budget` is the history budget (None: the model's own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "AGENTIK_", "JPY_"))}
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    if budget is not None:
        env["AGENTIK_CONTEXT_TOKENS"] = budget
    env.update(llm_env)
    env.update(extra)
    return env


def holds_answer_in_transcript(cell: Cell, answer: str) -> bool:
    """Whether the cell's last saved transcript keeps `answer` whole (in its JSON or its HTML)."""
    from agentik_jupyter.widgets.transcript import TRANSCRIPT_MIME, holds_answer

    bundles = [
        m["content"]["data"]
        for m in cell.messages
        if m["msg_type"] == "display_data" and TRANSCRIPT_MIME in m["content"].get("data", {})
    ]
    return bool(bundles) and holds_answer(bundles[-1], answer)
