"""Sessions files follow their notebooks through Jupyter's contents API (a real Jupyter Server and a
kernel it started): rename, move, copy and delete keep each notebook's sessions with it and nowhere
else, a running kernel writes its next turn to the new place, and a new notebook under an old name
starts with no sessions. The steps share one server and one notebook's kernel, in file order."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import nbformat
import pytest

from agentik_jupyter.persistence import SessionDB
from agentik_jupyter.persistence.binding import file_binding
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.types import UserMessage
from tests.jupyter_servers import RunningServer, attach, server_fixtures, start_notebook_session

pytestmark = pytest.mark.timeout(240)

llm, server = server_fixtures()

AGENT = "__import__('agentik_jupyter.kernel.agent', fromlist=['get_agent']).get_agent(get_ipython())"
WAIT_S = 60.0


def api(server: RunningServer, method: str, path: str, **kwargs: Any) -> httpx2.Response:
    r = httpx2.request(
        method, f"{server.url}{path}", headers={"Authorization": f"token {server.token}"}, timeout=60, **kwargs
    )
    assert r.status_code < 400, (r.status_code, r.text)
    return r


def listed(server: RunningServer, notebook: str) -> list[dict[str, Any]]:
    """The sessions the sidebar lists for `notebook`."""
    return list(api(server, "GET", "/agentik/api/sessions", params={"path": notebook}).json()["sessions"])


def until(check: Callable[[], Any], what: str) -> Any:
    """Wait for the server's event listener (it runs after the contents request has answered)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last: {value!r}")
        time.sleep(0.1)


def sessions_files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if ".agentik" in p.name}


def messages_in(db_path: Path, conversation_id: str) -> int:
    with SessionDB(db_path) as db:
        return db.get_conversation(conversation_id).message_count


@pytest.fixture(scope="module")
def kernel(server: RunningServer, llm: FakeLLMServer) -> Iterator[Any]:
    """a.ipynb open in the server, the agent loaded, one saved turn."""
    session = start_notebook_session(server, "a.ipynb")
    attached = attach(server, session["kernel"]["id"])
    try:
        attached.text("%load_ext agentik_jupyter")
        llm.push(Reply.text("Hello there."))
        assert "Hello there." in attached.text("%%agent --wait\nHello", timeout=90)
        yield attached
    finally:
        attached.close()


def test_renaming_a_notebook_takes_its_sessions_along(server: RunningServer, kernel: Any) -> None:
    conversation = kernel.value(f"{AGENT}.session.conversation_id")
    assert [s["id"] for s in listed(server, "a.ipynb")] == [conversation]

    api(server, "PATCH", "/api/contents/a.ipynb", json={"path": "b.ipynb"})  # JupyterLab's Rename

    sessions = until(lambda: listed(server, "b.ipynb"), "b.ipynb's sessions")
    assert [s["id"] for s in sessions] == [conversation] and sessions[0]["message_count"] == 2
    files = sessions_files(server.root)  # (the kernel has the file open again: its side files are there)
    assert "b.agentik.db" in files and not [name for name in files if name.startswith("a.")], files
    assert listed(server, "a.ipynb") == []


def test_the_running_kernel_writes_its_next_turn_to_the_new_file(
    server: RunningServer, kernel: Any, llm: FakeLLMServer
) -> None:
    assert kernel.value("__session__") == str(server.root / "b.ipynb")
    llm.push(Reply.text("Still here."))
    assert "Still here." in kernel.text("%%agent --wait\nAre you there?", timeout=90)

    conversation = kernel.value(f"{AGENT}.session.conversation_id")
    assert messages_in(server.root / "b.agentik.db", conversation) == 4
    assert not (server.root / "a.agentik.db").exists()
    # Jupyter's session has the new path too, so a restarted kernel starts with it
    paths = [s["path"] for s in api(server, "GET", "/api/sessions").json()]
    assert "b.ipynb" in paths and "a.ipynb" not in paths


def test_saving_the_notebook_binds_it_to_its_sessions_file(server: RunningServer, kernel: Any) -> None:
    model = api(server, "GET", "/api/contents/b.ipynb").json()
    api(server, "PUT", "/api/contents/b.ipynb", json={"type": "notebook", "content": model["content"]})

    saved = json.loads((server.root / "b.ipynb").read_text())
    binding = file_binding(server.root / "b.agentik.db")
    assert binding is not None
    assert saved["metadata"]["agentik"]["notebook_id"] == binding.notebook_id


def test_a_new_notebook_under_the_old_name_starts_with_no_sessions(server: RunningServer) -> None:
    api(server, "PUT", "/api/contents/a.ipynb", json={"type": "notebook", "content": nbformat.v4.new_notebook()})
    assert listed(server, "a.ipynb") == []
    assert not (server.root / "a.agentik.db").exists()


def test_a_stranger_file_left_under_the_name_is_set_aside_not_taken(server: RunningServer) -> None:
    """A sessions file copied in by hand (not through Jupyter) is found under the name of a notebook
    created later: that notebook does not get it; the file is kept under another name."""
    with SessionDB(server.root / "c.agentik.db") as db:
        db.create_conversation("Someone else's")
    api(server, "PUT", "/api/contents/c.ipynb", json={"type": "notebook", "content": nbformat.v4.new_notebook()})

    until(lambda: not (server.root / "c.agentik.db").exists(), "the stranger's file set aside")
    assert listed(server, "c.ipynb") == []
    kept = [name for name in sessions_files(server.root) if name.startswith("c.agentik-aside-")]
    assert len(kept) == 1, sessions_files(server.root)
    with SessionDB(server.root / kept[0]) as db:
        assert [c.title for c in db.list_conversations()] == ["Someone else's"]


def test_moving_a_notebook_to_another_folder_takes_its_sessions_along(
    server: RunningServer, kernel: Any, llm: FakeLLMServer
) -> None:
    api(server, "PUT", "/api/contents/work", json={"type": "directory"})
    conversation = kernel.value(f"{AGENT}.session.conversation_id")

    api(server, "PATCH", "/api/contents/b.ipynb", json={"path": "work/b.ipynb"})  # a drag to the folder

    sessions = until(lambda: listed(server, "work/b.ipynb"), "work/b.ipynb's sessions")
    assert [s["id"] for s in sessions] == [conversation]
    assert "b.agentik.db" not in sessions_files(server.root)
    llm.push(Reply.text("Moved along."))
    assert "Moved along." in kernel.text("%%agent --wait\nWhere are you?", timeout=90)
    assert messages_in(server.root / "work" / "b.agentik.db", conversation) == 6


def test_copying_a_notebook_copies_its_sessions_saying_so(server: RunningServer, kernel: Any) -> None:
    copy = api(server, "POST", "/api/contents/work", json={"copy_from": "work/b.ipynb"}).json()["path"]

    sessions = until(lambda: listed(server, copy), f"{copy}'s sessions")
    assert len(sessions) == 1 and sessions[0]["message_count"] == 6
    assert sessions[0]["title"] == "Hello (copied from work/b.ipynb)"
    original = listed(server, "work/b.ipynb")
    assert [s["title"] for s in original] == ["Hello"]


def test_deleting_a_notebook_sends_its_sessions_to_the_trash_with_it(server: RunningServer) -> None:
    copy = "work/b-Copy1.ipynb"
    api(server, "DELETE", f"/api/contents/{copy}")

    until(lambda: not (server.root / "work" / "b-Copy1.agentik.db").exists(), "the copy's sessions file gone")
    data_home = os.environ.get("XDG_DATA_HOME") or str(
        server.log_path.parent / ".local" / "share"
    )  # (the server's HOME)
    trash = Path(data_home) / "Trash" / "files"
    assert {"b-Copy1.ipynb", "b-Copy1.agentik.db"} <= {p.name for p in trash.iterdir()}
    assert listed(server, copy) == []
    assert not [name for name in sessions_files(server.root / "work") if name.startswith("b-Copy1")]


def test_a_notebook_without_a_kernel_is_followed_too(server: RunningServer) -> None:
    (server.root / "d.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    with SessionDB(server.root / "d.agentik.db") as db:
        conversation = db.create_conversation("Closed notebook")
        db.begin_turn(conversation.id, UserMessage(content="kept"))

    api(server, "PATCH", "/api/contents/d.ipynb", json={"path": "e.ipynb"})

    sessions = until(lambda: listed(server, "e.ipynb"), "e.ipynb's sessions")
    assert [s["title"] for s in sessions] == ["Closed notebook"] and sessions[0]["message_count"] == 1
    assert not any(name.startswith("d.agentik") for name in sessions_files(server.root))


def test_renaming_the_folder_of_a_running_notebook_keeps_its_kernel_writing_there(
    server: RunningServer, kernel: Any, llm: FakeLLMServer
) -> None:
    conversation = kernel.value(f"{AGENT}.session.conversation_id")
    api(server, "PATCH", "/api/contents/work", json={"path": "project"})

    until(lambda: kernel.value("__session__") == str(server.root / "project" / "b.ipynb"), "the kernel's new path")
    llm.push(Reply.text("In the renamed folder."))
    assert "In the renamed folder." in kernel.text("%%agent --wait\nAnd now?", timeout=90)
    assert messages_in(server.root / "project" / "b.agentik.db", conversation) == 8
    assert not (server.root / "work").exists()  # not made again by a file opened at the old place


def test_after_a_restart_the_kernel_continues_in_the_moved_file(
    server: RunningServer, kernel: Any, llm: FakeLLMServer
) -> None:
    conversation = kernel.value(f"{AGENT}.session.conversation_id")
    kernel_id = next(
        s["kernel"]["id"] for s in api(server, "GET", "/api/sessions").json() if s["path"] == "project/b.ipynb"
    )
    api(server, "POST", f"/api/kernels/{kernel_id}/restart")
    kernel.kc.wait_for_ready(timeout=120)

    assert kernel.value("__session__") == str(server.root / "project" / "b.ipynb")
    kernel.text("%load_ext agentik_jupyter")
    llm.push(Reply.text("Back again."))
    assert "Back again." in kernel.text("%%agent --wait\nStill the same session?", timeout=90)
    assert kernel.value(f"{AGENT}.session.conversation_id") == conversation
    assert messages_in(server.root / "project" / "b.agentik.db", conversation) == 10


def test_a_kernel_never_continues_a_file_that_records_another_notebook(
    server: RunningServer, llm: FakeLLMServer
) -> None:
    """f.agentik.db left by another notebook (it records that notebook's id), found by f.ipynb's kernel:
    kept aside, a new file started, and the cell says so."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["agentik"] = {"notebook_id": "this-notebook"}
    (server.root / "f.ipynb").write_text(nbformat.writes(notebook))
    with SessionDB(server.root / "f.agentik.db") as db:
        db.bind_notebook("another-notebook")
        db.create_conversation("Someone else's")
    session = start_notebook_session(server, "f.ipynb")
    attached = attach(server, session["kernel"]["id"])
    try:
        attached.text("%load_ext agentik_jupyter")
        llm.push(Reply.text("A fresh start."))
        shown = attached.text("%%agent --wait\nHello", timeout=90)
    finally:
        attached.close()
    assert "A fresh start." in shown and "belonged to another notebook" in shown, shown
    assert [s["title"] for s in listed(server, "f.ipynb")] == ["Hello"]
    (kept,) = [name for name in sessions_files(server.root) if name.startswith("f.agentik-aside-")]
    with SessionDB(server.root / kept) as db:
        assert [c.title for c in db.list_conversations()] == ["Someone else's"]
    binding = file_binding(server.root / "f.agentik.db")
    assert binding is not None and binding.notebook_id == "this-notebook"
