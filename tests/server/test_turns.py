"""Send and interrupt over HTTP, against a real Jupyter server, a kernel it started, and the fake LLM:
the turn runs in the notebook's kernel (its panel shows it, its sessions file keeps it) and streams
back as SSE; the error cases are clear statuses or a last `error` event, never a traceback."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from agentik_jupyter.persistence import SessionDB
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY
from tests.jupyter_servers import RunningServer, attach, jupyter_for, start_notebook_session

pytestmark = pytest.mark.timeout(240)

LONG_ANSWER = " ".join(f"word{i}" for i in range(300))  # ~15 s at 0.05 s a word
AGENT = "__import__('agentik_jupyter.kernel.agent', fromlist=['get_agent']).get_agent(get_ipython())"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def server(llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with jupyter_for(llm, tmp_path_factory) as running:
        yield running


@pytest.fixture(scope="module")
def notebook(server: RunningServer, llm: FakeLLMServer) -> Iterator[tuple[Any, str]]:
    """A notebook open in the server, the agent loaded, a panel shown and one saved session."""
    session = start_notebook_session(server, "drive.ipynb")
    kernel = attach(server, session["kernel"]["id"])
    try:
        kernel.text("%load_ext agentik_jupyter")
        llm.push(Reply.text("First answer."))
        assert "First answer." in kernel.text("%%agent --wait\nfirst question", timeout=60)
        kernel.text(
            f"from agentik_jupyter.widgets import ChatPanel\n_panel = ChatPanel({AGENT}.session)\ndisplay(_panel)"
        )
        yield kernel, kernel.value(f"{AGENT}.session.conversation_id")
    finally:
        kernel.close()


def headers(server: RunningServer) -> dict[str, str]:
    return {"Authorization": f"token {server.token}", "Accept": "text/event-stream"}


def send(
    server: RunningServer, conversation_id: str, content: Any, path: str = "drive.ipynb"
) -> tuple[int, list[tuple[int, str, dict[str, Any]]], Any]:
    """(status, SSE events, JSON body when not a stream)."""
    with httpx2.stream(
        "POST",
        f"{server.url}/agentik/api/sessions/{conversation_id}/messages",
        params={"path": path},
        json={"content": content} if not isinstance(content, dict) else content,
        headers=headers(server),
        timeout=90,
    ) as r:
        if r.status_code != 200:
            r.read()
            return r.status_code, [], r.json()
        assert r.headers["content-type"].startswith("text/event-stream")
        return 200, read_events(r.iter_lines()), None


def read_events(lines: Iterator[str]) -> list[tuple[int, str, dict[str, Any]]]:
    return list(iter_events(lines))


def iter_events(lines: Iterator[str]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(id, event, data) for each SSE frame, as it arrives."""
    frame: dict[str, str] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            frame[name] = value.lstrip(" ")
            continue
        if "data" in frame:
            yield int(frame["id"]), frame["event"], json.loads(frame["data"])
        frame = {}


def interrupt(server: RunningServer, conversation_id: str, path: str = "drive.ipynb") -> httpx2.Response:
    return httpx2.post(
        f"{server.url}/agentik/api/sessions/{conversation_id}/interrupt",
        params={"path": path},
        headers={"Authorization": f"token {server.token}"},
        timeout=30,
    )


class Background:
    """A send in a thread: its events as they arrive."""

    def __init__(self, server: RunningServer, conversation_id: str, content: str, path: str = "drive.ipynb") -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.status: int | None = None
        self.path = path
        self.thread = threading.Thread(target=self._run, args=(server, conversation_id, content), daemon=True)
        self.thread.start()

    def _run(self, server: RunningServer, conversation_id: str, content: str) -> None:
        with httpx2.stream(
            "POST",
            f"{server.url}/agentik/api/sessions/{conversation_id}/messages",
            params={"path": self.path},
            json={"content": content},
            headers=headers(server),
            timeout=90,
        ) as r:
            self.status = r.status_code
            for _, kind, data in iter_events(r.iter_lines()):
                self.events.append((kind, data))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]

    def wait_for(self, kind: str, count: int = 1, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.kinds().count(kind) < count:
            assert time.monotonic() < deadline, f"no {kind} event: {self.events}"
            time.sleep(0.02)

    def join(self, timeout: float = 60) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"the stream did not end: {self.kinds()}"


def test_a_message_runs_a_turn_in_the_notebooks_kernel(
    server: RunningServer, llm: FakeLLMServer, notebook: tuple[Any, str]
) -> None:
    kernel, conversation = notebook
    llm.push(Reply.text("alpha beta gamma delta"))
    llm.chunk_delay = 0.05  # each word its own read: the answer streams in several events
    try:
        status, events, _ = send(server, conversation, "What is in df?")
    finally:
        llm.chunk_delay = 0.0
    assert status == 200
    kinds = [kind for _, kind, _ in events]
    assert kinds[0] == "start" and kinds[-1] == "end", kinds
    assert [event_id for event_id, _, _ in events] == list(range(1, len(events) + 1))
    deltas = [data["text"] for _, kind, data in events if kind == "delta"]
    assert len(deltas) >= 3 and "".join(deltas) == "alpha beta gamma delta"
    end = events[-1][2]
    assert end["reason"] == "complete" and end["content"] == "alpha beta gamma delta"
    assert all(data["type"] == kind for _, kind, data in events)
    assert FAKE_API_KEY not in json.dumps(events)
    assert llm.requests[-1].last_user_text().startswith("What is in df?")
    # the notebook's panel shows it, and the sessions file keeps it in the same session
    shown = kernel.value("[m.content for m in _panel.session.chat_store.messages][-2:]")
    assert shown == ["What is in df?", "alpha beta gamma delta"]
    assert kernel.value("len(_panel._rendered)") == 4
    r = httpx2.get(
        f"{server.url}/agentik/api/sessions/{conversation}",
        params={"path": "drive.ipynb"},
        headers={"Authorization": f"token {server.token}"},
    )
    kinds_saved = [e["record"]["kind"] for e in r.json()["entries"]]
    assert kinds_saved.count("user") == 2 and kinds_saved[-1] == "assistant"


def test_hostile_unknown_and_kernelless_requests_are_clear_errors(
    server: RunningServer, notebook: tuple[Any, str]
) -> None:
    _, conversation = notebook
    for bad in ("not an id", "x" * 300, "conv_$(rm -rf ~)", "a'b", "conv_1%0Aprint(1)"):
        status, _, body = send(server, bad, "hi")
        assert status == 400 and "session id" in body["message"], (bad, body)
    status, _, body = send(server, "s_" + "0" * 20, "hi")
    assert status == 404 and "No session" in body["message"]
    for content in ({"content": ""}, {"content": 3}, {"text": "hi"}):
        status, _, body = send(server, conversation, content)
        assert status == 400 and "content" in body["message"]
    status, _, body = send(server, conversation, "hi", path="../outside.ipynb")
    assert status == 400
    (server.root / "closed.ipynb").write_text("{}")
    status, _, body = send(server, conversation, "hi", path="closed.ipynb")
    assert status == 409 and "no live kernel" in body["message"]
    assert interrupt(server, conversation, path="closed.ipynb").status_code == 409
    r = interrupt(server, conversation)
    assert r.status_code == 409 and "No turn" in r.json()["message"]
    r = httpx2.post(f"{server.url}/agentik/api/sessions/{conversation}/messages", params={"path": "drive.ipynb"})
    assert r.status_code == 403  # no token
    assert "Traceback" not in server.log()


def test_a_kernel_without_the_agent_loaded_is_a_409(server: RunningServer) -> None:
    session = start_notebook_session(server, "plain.ipynb")
    with SessionDB(server.root / "plain.agentik.db") as db:
        conversation = db.create_conversation().id
    kernel = attach(server, session["kernel"]["id"])
    try:
        status, _, body = send(server, conversation, "hi", path="plain.ipynb")
        assert status == 409 and "%load_ext agentik_jupyter" in body["message"]
    finally:
        kernel.close()


def test_a_second_message_queues_and_interrupt_stops_the_running_turn(
    server: RunningServer, llm: FakeLLMServer, notebook: tuple[Any, str]
) -> None:
    kernel, conversation = notebook
    llm.chunk_delay = 0.05
    try:
        llm.push(Reply.text(LONG_ANSWER), Reply.text("second answer"))
        first = Background(server, conversation, "long one")
        first.wait_for("delta", 3)
        second = Background(server, conversation, "short one")
        second.wait_for("queued")
        assert first.kinds()[-1] == "delta", first.events
        assert second.events[0] == ("queued", {"type": "queued", "ahead": 1})
        r = interrupt(server, conversation)
        assert r.status_code == 200 and r.json() == {"stopped": 1}
        first.join()
        assert first.kinds()[-1] == "end" and first.events[-1][1]["reason"] == "interrupted"
        assert len(first.kinds()) < 100  # stopped long before the 300 words
        second.join()
        assert second.kinds()[-1] == "end" and second.events[-1][1]["content"] == "second answer"
        assert second.kinds().index("start") > second.kinds().index("queued")
    finally:
        llm.chunk_delay = 0.0


def test_a_client_that_hangs_up_leaves_the_turn_running(
    server: RunningServer, llm: FakeLLMServer, notebook: tuple[Any, str]
) -> None:
    kernel, conversation = notebook
    answer = " ".join(f"part{i}" for i in range(60))
    llm.chunk_delay = 0.05
    try:
        llm.push(Reply.text(answer))
        with httpx2.stream(
            "POST",
            f"{server.url}/agentik/api/sessions/{conversation}/messages",
            params={"path": "drive.ipynb"},
            json={"content": "then leave"},
            headers=headers(server),
            timeout=60,
        ) as r:
            for _, kind, _ in iter_events(r.iter_lines()):
                if kind == "delta":
                    break  # the client goes away mid-answer
        kernel.wait_until(f"not {AGENT}.session.busy", timeout=30)
    finally:
        llm.chunk_delay = 0.0
    assert kernel.value("_panel.session.chat_store.messages[-1].content") == answer
    llm.push(Reply.text("still fine"))
    status, events, _ = send(server, conversation, "and again")
    assert status == 200 and events[-1][2]["content"] == "still fine"


def test_a_kernel_that_dies_mid_turn_ends_the_stream_with_an_error(server: RunningServer, llm: FakeLLMServer) -> None:
    session = start_notebook_session(server, "dies.ipynb")
    kernel = attach(server, session["kernel"]["id"])
    llm.chunk_delay = 0.05
    try:
        kernel.text("%load_ext agentik_jupyter")
        llm.push(Reply.text("ok"))
        kernel.text("%%agent --wait\nhello", timeout=60)
        conversation = kernel.value(f"{AGENT}.session.conversation_id")
        pid = kernel.value("__import__('os').getpid()")
        llm.push(Reply.text(LONG_ANSWER))
        turn = Background(server, conversation, "long one", path="dies.ipynb")
        turn.wait_for("delta", 3)
        os.kill(pid, signal.SIGKILL)
        turn.join(30)
        assert turn.kinds()[-1] == "error"
        error = turn.events[-1][1]
        assert error["code"] == "kernel_died" and "died" in error["message"]
    finally:
        llm.chunk_delay = 0.0
        kernel.close()
    assert "Traceback" not in server.log()
