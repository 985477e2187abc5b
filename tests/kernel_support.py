"""Real kernels for the notebook-level tests: start one with an environment, run code in it.

Two ways in, both against a real ipykernel process:

- ``NotebookKernel`` drives the kernel through nbclient, one cell at a time, building the
  notebook as it goes: the cells' outputs are exactly what a saved notebook would hold
  (``run_notebook`` runs a whole notebook in one go, as ``jupyter execute`` would).
- ``RawKernel`` speaks the messaging protocol with jupyter_client and keeps every iopub
  message, for what nbclient hides: comm traffic, widget clicks, output of background turns.

Every wait has a timeout and every kernel is shut down (or killed) by its owner.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sqlite3
import textwrap
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client import KernelManager
from nbclient import NotebookClient

from agentik_jupyter.core.prompt import NOTE_HEADING
from agentik_jupyter.persistence import AuditEntry, SessionDB
from agentik_jupyter.testing import FakeLLMServer

KERNEL = "python3"
START_TIMEOUT = 60
CELL_TIMEOUT = 40

# Distinctive on purpose: grepping outputs, widget state and DB bytes for it must find nothing.
SECRET_KEY = "sk-agentik-SECRET-7f3a9c1e5b2d4068"

AGENT_EXPR = "__import__('agentik_jupyter.kernel.agent', fromlist=['get_agent']).get_agent(get_ipython())"
"""An expression that evaluates, inside the kernel, to the kernel's KernelAgent."""


def kernel_env(
    server: FakeLLMServer | None = None,
    provider: str = "openai-compatible",
    *,
    api_key: str = SECRET_KEY,
    **extra: str,
) -> dict[str, str]:
    """The kernel's whole environment: this process's, minus any LLM_/AGENTIK_/JPY_ settings,
    plus the fake server's LLM_* variables and ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "AGENTIK_", "JPY_"))}
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # silences a debugger warning on stderr
    if server is not None:
        env.update(server.env(provider, api_key=api_key))
    env.update(extra)
    return env


# ---- outputs as the user sees them ----


def output_text(outputs: Iterable[Any]) -> str:
    """Everything a reader sees in a cell's outputs as text: streams, text/plain, tracebacks."""
    parts: list[str] = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(out.get("text", ""))
        elif kind in {"display_data", "execute_result"}:
            parts.append(str(out.get("data", {}).get("text/plain", "")))
        elif kind == "error":
            parts.append("\n".join(out.get("traceback") or [f"{out.get('ename')}: {out.get('evalue')}"]))
    return "\n".join(parts)


def transcripts(outputs: Iterable[Any]) -> list[dict[str, Any]]:
    """The static transcript bundles (``application/vnd.agentik.transcript+json``) in the outputs."""
    found = []
    for out in outputs:
        data = out.get("data") or {}
        if "application/vnd.agentik.transcript+json" in data:
            found.append(data)
    return found


def transcript(outputs: Iterable[Any]) -> dict[str, Any]:
    """The one transcript bundle of a finished `--wait` cell (all three MIME types)."""
    found = transcripts(outputs)
    assert len(found) == 1, f"expected one transcript, got {len(found)}: {output_text(outputs)}"
    bundle = found[0]
    assert {"text/plain", "text/html"} <= set(bundle), sorted(bundle)
    return bundle


# ---- nbclient ----


def new_notebook(sources: Sequence[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(textwrap.dedent(s).strip("\n")) for s in sources]
    return nb


def run_notebook(
    sources: Sequence[str], env: dict[str, str], cwd: Path, *, timeout: int = CELL_TIMEOUT, save_as: Path | None = None
) -> nbformat.NotebookNode:
    """Run a notebook of these cells top to bottom in a fresh kernel (as `jupyter execute`
    would); the kernel is shut down afterwards. Returns the executed notebook, widget state
    included, and saves it to ``save_as`` when given."""
    nb = new_notebook(sources)
    client = NotebookClient(
        nb,
        timeout=timeout,
        startup_timeout=START_TIMEOUT,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(cwd)}},
        shutdown_kernel="immediate",
    )
    client.execute(env=env, cwd=str(cwd))
    if save_as is not None:
        nbformat.write(nb, save_as)
    return nb


START_ATTEMPTS = 3


def died_at_start(exc: BaseException) -> bool:
    """A kernel that never answered kernel_info: with tests on parallel workers, most often a port
    jupyter_client picked was taken by another process before the kernel bound it ("Address
    already in use"). The kernel then exits, or hangs until the wait's timeout (the threads
    ipykernel started before the failing bind keep its process alive: a clean-clone run beside a
    CPU hog waited the whole 60 s and did not start it again). Starting it again picks new ports;
    a kernel that fails to start for a reason of its own fails every time, and the last attempt's
    error is raised."""
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "died before replying to kernel_info" in text or "didn't respond in" in text
    )


class NotebookKernel:
    """A kernel driven by nbclient one cell at a time; ``nb`` grows with every ``run``."""

    def __init__(self, env: dict[str, str], cwd: Path, *, timeout: int = CELL_TIMEOUT) -> None:
        self.nb = new_notebook([])
        self.client = NotebookClient(
            self.nb,
            timeout=timeout,
            startup_timeout=START_TIMEOUT,
            kernel_name=KERNEL,
            resources={"metadata": {"path": str(cwd)}},
            shutdown_kernel="immediate",
        )
        for attempt in range(START_ATTEMPTS):
            self.client.km = self.client.create_kernel_manager()
            try:
                self.client.start_new_kernel(env=env, cwd=str(cwd))
                self.client.start_new_kernel_client()
                return
            except BaseException as exc:
                self.close()
                if not died_at_start(exc) or attempt == START_ATTEMPTS - 1:
                    raise

    def run(self, source: str, *, allow_error: bool = False) -> nbformat.NotebookNode:
        """Execute one cell; returns it with its outputs. Raises if the cell raised, unless allowed."""
        cell = nbformat.v4.new_code_cell(textwrap.dedent(source).strip("\n"))
        self.nb.cells.append(cell)
        self.client.execute_cell(cell, len(self.nb.cells) - 1)
        if not allow_error:
            errors = [o for o in cell.outputs if o.get("output_type") == "error"]
            assert not errors, output_text(errors)
        return cell

    def text(self, source: str) -> str:
        """Execute one cell and return what it showed, as text."""
        return output_text(self.run(source).outputs)

    def saved(self) -> str:
        """The notebook as it would be written to disk, widget state included."""
        self.client.set_widgets_metadata()
        return nbformat.writes(self.nb)

    @property
    def pid(self) -> int:
        km = self.client.km
        assert km is not None and km.provisioner is not None
        return int(km.provisioner.process.pid)  # type: ignore[attr-defined]

    def close(self) -> None:
        if self.client.km is not None:
            self.client._cleanup_kernel()


# ---- jupyter_client ----


@dataclass
class Execution:
    """One execute request: its reply, its outputs (nbformat dicts) and its iopub messages."""

    msg_id: str
    reply: dict[str, Any] = field(default_factory=dict)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    clear_at_next: bool = False

    @property
    def text(self) -> str:
        return output_text(self.outputs)

    @property
    def ok(self) -> bool:
        return self.reply.get("status") == "ok"


class RawKernel:
    """A kernel spoken to with jupyter_client directly. ``iopub`` keeps every message seen."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.kc: Any = None
        self.iopub: list[dict[str, Any]] = []
        self._done: dict[str, Execution] = {}
        self._open: dict[str, Execution] = {}
        for attempt in range(START_ATTEMPTS):
            self.km = KernelManager(kernel_name=KERNEL)
            try:
                # As nbclient does: keep IPython's history in memory, not in a file shared by all kernels.
                self.km.start_kernel(env=env, cwd=str(cwd), extra_arguments=["--HistoryManager.hist_file=:memory:"])
                self.kc = self.km.client()
                self.kc.start_channels()
                self.kc.wait_for_ready(timeout=START_TIMEOUT)
                return
            except BaseException as exc:
                self.close()
                if not died_at_start(exc) or attempt == START_ATTEMPTS - 1:
                    raise

    @property
    def pid(self) -> int:
        return int(self.km.provisioner.process.pid)  # type: ignore[union-attr]

    # -- executing --

    def submit(self, code: str) -> str:
        """Send an execute request without waiting; collect it later with ``collect``."""
        msg_id = self.kc.execute(textwrap.dedent(code).strip("\n"), store_history=True)
        self._open[msg_id] = Execution(msg_id)
        return msg_id

    def collect(self, msg_id: str, timeout: float = CELL_TIMEOUT) -> Execution:
        """Wait for the request's reply and for its outputs to end (status idle)."""
        deadline = time.monotonic() + timeout
        ex = self._open[msg_id]
        got_idle = msg_id in self._done
        while not (ex.reply and got_idle):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no reply to the execute request within {timeout} s: {ex.text!r}")
            self._pump(min(remaining, 0.2))
            got_idle = msg_id in self._done
            if not ex.reply:
                try:
                    reply = self.kc.get_shell_msg(timeout=0.01)
                except queue.Empty:
                    continue
                parent = reply["parent_header"].get("msg_id")
                if parent in self._open:
                    self._open[parent].reply = reply["content"]
        self._open.pop(msg_id, None)
        self._done.pop(msg_id, None)
        return ex

    def execute(self, code: str, timeout: float = CELL_TIMEOUT) -> Execution:
        return self.collect(self.submit(code), timeout)

    def text(self, code: str, timeout: float = CELL_TIMEOUT) -> str:
        ex = self.execute(code, timeout)
        assert ex.ok, ex.text
        return ex.text

    def value(self, expr: str, timeout: float = CELL_TIMEOUT) -> Any:
        """Evaluate a Python expression in the kernel and return it (JSON round trip)."""
        out = self.text(f"import json as _j\nprint(_j.dumps({expr}, default=str))", timeout)
        return json.loads(out.strip().splitlines()[-1])

    def _pump(self, timeout: float) -> None:
        """Read iopub messages for up to ``timeout`` seconds (returns after the first one)."""
        try:
            msg = self.kc.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            return
        self._take(msg)
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=0)
            except queue.Empty:
                return
            self._take(msg)

    def _take(self, msg: dict[str, Any]) -> None:
        self.iopub.append(msg)
        parent = msg["parent_header"].get("msg_id")
        ex = self._open.get(parent)
        if ex is None:
            return
        ex.messages.append(msg)
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content.get("execution_state") == "idle":
            self._done[parent] = ex
        elif kind == "clear_output":  # (as a frontend does: with `wait`, at the next output)
            ex.clear_at_next = bool(content.get("wait"))
            if not ex.clear_at_next:
                ex.outputs.clear()
        elif kind in {"stream", "display_data", "execute_result", "error"}:
            if ex.clear_at_next:
                ex.outputs.clear()
                ex.clear_at_next = False
            ex.outputs.append(dict(nbformat.v4.output_from_msg(msg)))

    def drain(self, seconds: float = 0.0) -> None:
        """Take in what iopub has (for at most ``seconds``)."""
        deadline = time.monotonic() + seconds
        while True:
            self._pump(max(0.0, min(0.05, deadline - time.monotonic())))
            if time.monotonic() >= deadline:
                return

    # -- widgets --

    def comm_opens(self, model_name: str | None = None) -> list[dict[str, Any]]:
        """comm_open messages seen so far (optionally only those of one widget model)."""
        opens = [m for m in self.iopub if m["msg_type"] == "comm_open"]
        if model_name is not None:
            opens = [m for m in opens if m["content"]["data"].get("state", {}).get("_model_name") == model_name]
        return opens

    def send_comm_msg(self, comm_id: str, data: dict[str, Any]) -> None:
        """What a frontend sends when the user touches a widget."""
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)

    def click(self, comm_id: str) -> None:
        """A Button click, as the @jupyter-widgets/controls ButtonView sends it."""
        self.send_comm_msg(comm_id, {"method": "custom", "content": {"event": "click"}})

    # -- waiting --

    def wait_until(self, expr: str, timeout: float = 10.0, interval: float = 0.05) -> float:
        """Poll a kernel expression until it is truthy; returns the seconds it took."""
        start = time.monotonic()
        while True:
            if self.value(f"bool({expr})"):
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"{expr} still false after {timeout} s")
            time.sleep(interval)

    # -- ending --

    def kill(self) -> None:
        """SIGKILL the kernel process, as the OOM killer would."""
        os.kill(self.pid, signal.SIGKILL)
        self.km.provisioner.process.wait(timeout=10)  # type: ignore[union-attr]

    def close(self) -> None:
        if self.kc is not None:
            self.kc.stop_channels()
            self.kc = None
        try:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=True)
        finally:
            self.km.cleanup_resources()


def close_all(kernels: Iterable[Any]) -> None:
    """Shut every kernel down, even if one of them fails to."""
    errors = []
    for k in kernels:
        try:
            k.close()
        except Exception as exc:  # pragma: no cover - cleanup must go on
            errors.append(exc)
    if errors:
        raise errors[0]


# ---- the sessions file, read from outside the kernel ----


def audit(db_path: Path, conversation_id: str | None = None) -> list[AuditEntry]:
    """The whole audit log of one conversation (the latest when None), oldest first."""
    with SessionDB(db_path) as db:
        if conversation_id is None:
            info = db.latest_conversation()
            assert info is not None, f"no conversation in {db_path}"
            conversation_id = info.id
        entries: list[AuditEntry] = []
        before = None
        while True:
            page = db.audit_log(conversation_id, limit=500, before_seq=before)
            entries[:0] = page.entries
            if page.next_before_seq is None:
                return entries
            before = page.next_before_seq


def roles(entries: Iterable[AuditEntry]) -> list[str]:
    return [type(e.record).__name__ for e in entries]


def sql(db_path: Path, query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """A read-only query with the standard library (no product code involved)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def file_bytes(db_path: Path) -> bytes:
    """The DB file and its WAL/journal side files, as bytes."""
    data = b""
    for suffix in ("", "-wal", "-journal", "-shm"):
        p = Path(f"{db_path}{suffix}")
        if p.exists():
            data += p.read_bytes()
    return data


def _role_texts(request: Any, role: str) -> list[str]:
    """The text of every message of `role` in a recorded request (either wire format), without the
    notebook context note that goes before each question."""
    out = []
    for m in request.messages:
        if m.get("role") != role:
            continue
        c = m.get("content")
        if isinstance(c, str):
            out.append(c.split("\n\n", 1)[-1] if c.startswith(NOTE_HEADING) else c)
        elif isinstance(c, list):
            texts = [b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text"]
            out.append("".join(t for t in texts if not t.startswith(NOTE_HEADING)))
    return out


def user_texts(request: Any) -> list[str]:
    """User messages' text, trimmed (a cell body may arrive with its trailing newline)."""
    return [t.strip() for t in _role_texts(request, "user") if t.strip()]


def assistant_texts(request: Any) -> list[str]:
    """Assistant messages' text (empty tool-call-only messages left out)."""
    return [t for t in _role_texts(request, "assistant") if t]


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.02) -> Any:
    """Poll a test-side condition with a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


STATE_CODE = f"""
import json as _json
_s = {AGENT_EXPR}.session
print(_json.dumps({{
    "busy": _s.busy, "loading": _s.chat_store.loading, "error": _s.chat_store.error,
    "status": _s.agent_store.status, "active_tool": _s.agent_store.active_tool,
    "conversation": _s.conversation_id, "temporary": _s.temporary,
    "messages": [
        {{"role": m.role, "content": m.content.strip(), "error": m.error, **({{"notice": m.notice}} if m.notice else {{}})}}
        for m in _s.chat_store.messages
    ],
}}))
"""
"""A cell that prints the current session's stores as JSON (parse it with ``parse_state``);
message contents are trimmed; a message's `notice` only when it has one."""


def parse_state(text: str) -> dict[str, Any]:
    return json.loads(text.strip().splitlines()[-1])


__all__ = [
    "AGENT_EXPR",
    "CELL_TIMEOUT",
    "STATE_CODE",
    "parse_state",
    "Execution",
    "NotebookKernel",
    "RawKernel",
    "SECRET_KEY",
    "assistant_texts",
    "audit",
    "close_all",
    "file_bytes",
    "kernel_env",
    "new_notebook",
    "output_text",
    "roles",
    "run_notebook",
    "sql",
    "transcript",
    "transcripts",
    "user_texts",
    "wait_for",
]
