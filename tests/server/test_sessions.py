"""The sessions API on a real Jupyter server: paging, rename, delete, read-only GETs, paths as
Jupyter resolves them, authorization, and an events stream that matches what two kernels write."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentik_jupyter.persistence import SessionDB
from agentik_jupyter.persistence.schema import migrate
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.types import AssistantMessage, UserMessage
from tests.jupyter_servers import RunningServer, jupyter, server_fixtures

pytestmark = pytest.mark.timeout(240)


llm, server = server_fixtures()


def api(server: RunningServer, method: str, route: str, **kwargs: Any) -> httpx2.Response:
    headers = {"Authorization": f"token {server.token}", **kwargs.pop("headers", {})}
    return httpx2.request(method, f"{server.url}/agentik/api/{route}", headers=headers, timeout=30, **kwargs)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name))


def notebook_with_sessions(folder: Path, name: str, n: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.ipynb").write_text("{}")
    ids = []
    with SessionDB(folder / f"{name}.agentik.db") as db:
        for i in range(n):
            conv = db.create_conversation(f"{name} {i}")
            turn = db.begin_turn(conv.id, UserMessage(content=f"question {i}"))
            db.append(conv.id, turn, AssistantMessage(content=f"answer {i}"))
            ids.append(conv.id)
    return list(reversed(ids))  # newest first


def test_list_pages_with_offset_and_limit(server: RunningServer) -> None:
    newest_first = notebook_with_sessions(server.root, "paged", 5)
    pages = [api(server, "GET", "sessions", params={"path": "paged.ipynb", "offset": o, "limit": 2}) for o in (0, 2, 4)]
    assert all(r.status_code == 200 for r in pages)
    assert [s["id"] for r in pages for s in r.json()["sessions"]] == newest_first
    body = pages[0].json()
    assert body["total"] == 5 and body["limit"] == 2 and body["offset"] == 0 and body["position"] > 0
    default = api(server, "GET", "sessions", params={"path": "paged.ipynb"}).json()
    assert default["limit"] == 100 and len(default["sessions"]) == 5
    assert api(server, "GET", "sessions", params={"path": "paged.ipynb", "limit": "x"}).status_code == 400


def test_the_sessions_api_says_each_sessions_mode(server: RunningServer) -> None:
    planned, plain = notebook_with_sessions(server.root, "modes", 2)
    with SessionDB(server.root / "modes.agentik.db") as db:
        db.set_mode(planned, "plan")
    listed = api(server, "GET", "sessions", params={"path": "modes.ipynb"}).json()["sessions"]
    assert {s["id"]: s["mode"] for s in listed} == {planned: "plan", plain: None}  # None: the default
    one = api(server, "GET", f"sessions/{planned}", params={"path": "modes.ipynb"}).json()
    assert one["session"]["mode"] == "plan"


def test_one_session_messages_page_back_and_forward(server: RunningServer) -> None:
    (conv,) = notebook_with_sessions(server.root, "long", 1)
    with SessionDB(server.root / "long.agentik.db") as db:
        turn = db.begin_turn(conv, UserMessage(content="more"))
        for i in range(5):
            db.append(conv, turn, AssistantMessage(content=f"part {i}"))  # seq 1..8 in all
    params = {"path": "long.ipynb", "limit": 3}
    latest = api(server, "GET", f"sessions/{conv}", params=params).json()
    assert [e["seq"] for e in latest["entries"]] == [6, 7, 8] and latest["next_before_seq"] == 6
    assert latest["session"]["id"] == conv
    older = api(server, "GET", f"sessions/{conv}", params={**params, "before": 6}).json()
    assert [e["seq"] for e in older["entries"]] == [3, 4, 5]
    forward = api(server, "GET", f"sessions/{conv}", params={**params, "after": 1}).json()
    assert [e["seq"] for e in forward["entries"]] == [2, 3, 4] and forward["next_after_seq"] == 4
    assert api(server, "GET", "sessions/conv_nope", params={"path": "long.ipynb"}).status_code == 404


def test_rename_bumps_updated_at_and_delete_removes(server: RunningServer) -> None:
    first, second = notebook_with_sessions(server.root, "edit", 2)
    q = {"path": "edit.ipynb"}
    before = api(server, "GET", f"sessions/{second}", params=q).json()["session"]
    r = api(server, "PATCH", f"sessions/{second}", params=q, json={"title": "Renamed by the API"})
    assert r.status_code == 200, r.text
    assert r.json()["title"] == "Renamed by the API" and r.json()["updated_at"] > before["updated_at"]
    listed = api(server, "GET", "sessions", params=q).json()["sessions"]
    assert listed[0]["id"] == second and listed[0]["title"] == "Renamed by the API"  # now the newest
    assert api(server, "PATCH", f"sessions/{second}", params=q, json={"name": "x"}).status_code == 400
    assert api(server, "PATCH", "sessions/conv_nope", params=q, json={"title": "x"}).status_code == 404
    r = api(server, "DELETE", f"sessions/{first}", params=q)
    assert r.status_code == 204
    assert [s["id"] for s in api(server, "GET", "sessions", params=q).json()["sessions"]] == [second]
    assert api(server, "GET", f"sessions/{first}", params=q).status_code == 404
    assert api(server, "DELETE", f"sessions/{first}", params=q).status_code == 404
    with SessionDB(server.root / "edit.agentik.db") as db:  # what a kernel sees
        assert [c.id for c in db.list_conversations()] == [second]


def test_gets_never_write_or_migrate(server: RunningServer) -> None:
    """A file an older release left (schema v1) stays byte-identical, with no -wal/-shm."""
    (server.root / "old.ipynb").write_text("{}")
    path = server.root / "old.agentik.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, path, target=1)
    conn.execute("INSERT INTO conversation VALUES ('conv_old', 'from v1', 0, 1.0, 2.0)")
    payload = UserMessage(id="msg_u", content="from the past", timestamp=1.0).model_dump_json()
    conn.execute("INSERT INTO message VALUES ('msg_u', 'conv_old', 'turn_old', 1, 'user', ?, 1.0)", (payload,))
    conn.close()
    path.chmod(0o444)
    before, files = digest(path), siblings(path)
    q = {"path": "old.ipynb"}
    r = api(server, "GET", "sessions", params=q)
    assert r.status_code == 200 and [s["title"] for s in r.json()["sessions"]] == ["from v1"]
    r = api(server, "GET", "sessions/conv_old", params=q)
    assert r.status_code == 200 and r.json()["entries"][0]["record"]["content"] == "from the past"
    with api_stream(server, "events", {"path": "old.ipynb", "after": 0}) as events:
        time.sleep(0.6)  # a few polls
    assert events.errors == []
    assert digest(path) == before and siblings(path) == files == ["old.agentik.db"]


def test_paths_resolve_inside_the_root_as_jupyter_does(server: RunningServer, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    notebook_with_sessions(outside, "linked", 1)
    (server.root / "shared").symlink_to(outside, target_is_directory=True)  # a symlinked folder in the root
    r = api(server, "GET", "sessions", params={"path": "shared/linked.ipynb"})
    assert r.status_code == 200 and [s["title"] for s in r.json()["sessions"]] == ["linked 0"]
    for bad in ("../etc.ipynb", "shared/../../x.ipynb", "a/../../x.ipynb", "a.txt"):
        r = api(server, "GET", "sessions", params={"path": bad})
        assert r.status_code == 400, (bad, r.text)
    assert api(server, "GET", "sessions", params={"path": "none.ipynb"}).json()["sessions"] == []


# ---- the events stream ----


class EventReader:
    """Reads an SSE response in a thread; `events` grows as frames arrive."""

    def __init__(self, response: httpx2.Response) -> None:
        self.response = response
        self.events: list[dict[str, Any]] = []
        self.ids: list[int] = []
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        frame: dict[str, str] = {}
        try:
            for line in self.response.iter_lines():
                if line:
                    name, _, value = line.partition(":")
                    frame[name] = value.lstrip(" ")
                    continue
                if "data" in frame:
                    data = json.loads(frame["data"])
                    if frame.get("event") == "error":
                        self.errors.append(data["message"])
                    self.ids.append(int(frame["id"]))
                    self.events.append(data)
                frame = {}
        except httpx2.HTTPError:
            pass

    def wait_for(self, predicate: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self.events):
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {self.events}"
            time.sleep(0.05)


class api_stream:
    def __init__(self, server: RunningServer, route: str, params: dict[str, Any]) -> None:
        self.client = httpx2.Client(timeout=httpx2.Timeout(30, read=None))
        self.ctx = self.client.stream(
            "GET",
            f"{server.url}/agentik/api/{route}",
            params=params,
            headers={"Authorization": f"token {server.token}"},
        )

    def __enter__(self) -> EventReader:
        response = self.ctx.__enter__()
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        self.reader = EventReader(response)
        return self.reader

    def __exit__(self, *exc: object) -> None:
        self.ctx.__exit__(None, None, None)
        self.client.close()


def test_events_match_what_two_kernels_write(server: RunningServer, llm: FakeLLMServer) -> None:
    from tests.kernel_support import RawKernel, close_all, kernel_env

    folder = server.root / "team"
    folder.mkdir()
    notebook = folder / "live.ipynb"
    notebook.write_text("{}")
    q = {"path": "team/live.ipynb"}
    start = api(server, "GET", "sessions", params=q).json()["position"]
    assert start == 0  # no file yet
    kernels: list[RawKernel] = []
    try:
        with api_stream(server, "events", {**q, "after": start}) as stream:
            for _ in ("A", "B"):
                env = kernel_env(llm, JPY_SESSION_NAME=str(notebook))
                kernels.append(RawKernel(env, folder))
            for kernel, name in zip(kernels, ("A", "B")):
                kernel.text("%load_ext agentik_jupyter")
                llm.push(Reply.text(f"Answer for {name}"))
                # --new: a kernel's first turn would otherwise continue the notebook's latest session
                assert "Answer for" in kernel.text(f"%%agent --wait --new\nQuestion from kernel {name}")
            kernels[0].text("%agent rename Kernel A's analysis")
            listed = api(server, "GET", "sessions", params=q).json()["sessions"]
            assert len(listed) == 2
            a_id = next(s["id"] for s in listed if s["title"] == "Kernel A's analysis")
            b_id = next(s["id"] for s in listed if s["id"] != a_id)
            # the stream polls every 0.25 s, and a deleted session's rows are gone: let it see B's first
            stream.wait_for(
                lambda ev: sum(e["type"] == "message" and e["session_id"] == b_id for e in ev) >= 2,
                10,
                "kernel B's messages",
            )
            assert api(server, "DELETE", f"sessions/{b_id}", params=q).status_code == 204
            stream.wait_for(lambda ev: any(e["type"] == "deleted" for e in ev), 10, "the deleted event")
            events = list(stream.events)
            ids = list(stream.ids)
    finally:
        close_all(kernels)

    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert [e["position"] for e in events] == ids
    created = [e["session_id"] for e in events if e["type"] == "created"]
    assert created == [a_id, b_id]
    renames = [(e["session_id"], e["title"]) for e in events if e["type"] == "renamed"]
    assert (a_id, "Question from kernel A") in renames and renames[-1] == (a_id, "Kernel A's analysis")
    assert [e["session_id"] for e in events if e["type"] == "deleted"] == [b_id]
    # the message events are exactly the audit rows the history route returns for A
    a_messages = [e["entry"] for e in events if e["type"] == "message" and e["session_id"] == a_id]
    history = api(server, "GET", f"sessions/{a_id}", params=q).json()["entries"]
    assert a_messages == history
    assert [m["record"]["kind"] for m in a_messages] == ["user", "assistant"]
    assert a_messages[0]["record"]["content"] == "Question from kernel A"
    b_messages = [e for e in events if e["type"] == "message" and e["session_id"] == b_id]
    assert [m["entry"]["record"]["kind"] for m in b_messages] == ["user", "assistant"]  # streamed before the delete

    # a reconnect from any position gets exactly what followed it (Last-Event-ID works too)
    middle = ids[len(ids) // 2]
    with api_stream(server, "events", {**q, "after": middle}) as again:
        again.wait_for(lambda ev: any(e["type"] == "deleted" for e in ev), 10, "the replayed tail")
    tail = [e for e in events if e["position"] > middle]
    replayed = [e for e in again.events if e["position"] <= ids[-1]]
    assert [(e["type"], e["position"]) for e in replayed] == [
        (e["type"], e["position"]) for e in tail if e["type"] != "message" or e["session_id"] != b_id
    ]


# ---- authorization and AGENTIK_DB_PATH ----

AUTHORIZER = '''
from jupyter_server.auth import Authorizer


class ReadOnlyAgentik(Authorizer):
    """A user who may read agentik's sessions but not chat, rename or delete (an RBAC role)."""

    def is_authorized(self, handler, user, action, resource):
        return not (resource == "agentik" and action != "read")
'''


def test_authorizer_denies_and_agentik_db_path_is_honoured(tmp_path: Path, llm: FakeLLMServer) -> None:
    (tmp_path / "authz").mkdir()
    (tmp_path / "authz" / "agentik_test_authz.py").write_text(AUTHORIZER)
    home, root = tmp_path / "home", tmp_path / "root"
    root.mkdir()
    (root / "nb.ipynb").write_text("{}")
    shared = tmp_path / "shared" / "all.agentik.db"
    shared.parent.mkdir()
    with SessionDB(shared) as db:
        conv = db.create_conversation("in the shared file")
    (home / "config").mkdir(parents=True)
    (home / "config" / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"authorizer_class": "agentik_test_authz.ReadOnlyAgentik"}})
    )
    # PYTHONPATH keeps the caller's entries: a worktree's code, not the venv's, serves the file it wrote
    path = os.pathsep.join(p for p in (str(tmp_path / "authz"), os.environ.get("PYTHONPATH")) if p)
    env = {**llm.env(), "PYTHONPATH": path, "AGENTIK_DB_PATH": str(shared)}
    with jupyter(root, home, env=env) as s:
        q = {"path": "nb.ipynb"}
        r = api(s, "GET", "sessions", params=q)
        assert r.status_code == 200 and [x["id"] for x in r.json()["sessions"]] == [conv.id]
        llm.clear()
        r = api(s, "POST", "chat", json={"messages": [{"role": "user", "content": "spend the key"}]})
        assert r.status_code == 403 and llm.requests == []
        sse = api(
            s,
            "POST",
            "chat",
            json={"messages": [{"role": "user", "content": "x"}]},
            headers={"Accept": "text/event-stream"},
        )
        assert sse.status_code == 403 and llm.requests == []
        assert api(s, "PATCH", f"sessions/{conv.id}", params=q, json={"title": "x"}).status_code == 403
        assert api(s, "DELETE", f"sessions/{conv.id}", params=q).status_code == 403
        assert httpx2.get(f"{s.url}/api/contents", headers={"Authorization": f"token {s.token}"}).status_code == 200
    with SessionDB(shared) as db:
        assert db.get_conversation(conv.id).title == "in the shared file"
