"""Session ids from a shipped sessions file, the sidebar's control comm, and a deleted session,
in real kernels.

- A crafted file whose conversation ids hold a newline and Python, or a `;`: `%agent resume`,
  `%agent sessions` and `%%agent --session` never offer or resume them, and nothing runs.
- The sidebar resumes over the `agentik.control` comm (never by building code): the kernel
  validates the id, resumes as `%agent resume` does and answers ok/error on the comm; it says
  which session is active. Without the extension loaded the comm is closed unanswered.
- The session the kernel uses is deleted from outside (the sidebar's Delete): the next turn
  starts a new session by itself and says so in the cell; the turn's question is not lost.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.persistence import SessionDB
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.types import AssistantMessage, UserMessage
from tests.kernel_support import STATE_CODE, RawKernel, audit, kernel_env, parse_state, roles, user_texts

pytestmark = pytest.mark.timeout(120)

LOAD = "%load_ext agentik_jupyter"
TARGET = "agentik.control"


def shipped_db(folder: Path) -> tuple[Path, str, dict[str, str], Path]:
    """A sessions file with one normal session and, updated later, hostile ones; returns the
    file, the normal id, the hostile ids by name, and the file the hostile code would create."""
    db_path = folder / "shipped.agentik.db"
    marker = folder / "pwned"
    with SessionDB(db_path) as db:
        good = db.create_conversation("A normal session")
        turn = db.begin_turn(good.id, UserMessage(content="normal question"))
        db.append(good.id, turn, AssistantMessage(content="normal answer"))
    hostile = {
        "newline": f"conv_evil\nopen({str(marker)!r}, 'w').close()",
        "semicolon": "conv_semi;x",
    }
    conn = sqlite3.connect(db_path)
    with conn:
        later = time.time() + 60
        for i, value in enumerate(hostile.values()):
            conn.execute(
                "INSERT INTO conversation (id, title, is_temporal, created_at, updated_at) VALUES (?, ?, 0, ?, ?)",
                (value, f"Hostile {i}", later, later + i),
            )
    conn.close()
    return db_path, good.id, hostile, marker


@pytest.fixture
def shipped(tmp_path: Path) -> Iterator[tuple[RawKernel, str, dict[str, str], Path]]:
    db_path, good, hostile, marker = shipped_db(tmp_path)
    with FakeLLMServer() as server:
        k = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            yield k, good, hostile, marker
        finally:
            k.close()


def state(k: RawKernel) -> dict[str, Any]:
    return parse_state(k.text(STATE_CODE))


def ask(
    k: RawKernel, data: dict[str, Any], subshell_id: str | None = None, timeout: float = 10.0
) -> dict[str, Any] | None:
    """Open a comm to the control target with `data`, as the sidebar does; the kernel's answer,
    or None when the kernel closed the comm without one (no target)."""
    comm_id = uuid.uuid4().hex
    msg = k.kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": data})
    if subshell_id is not None:
        msg["header"]["subshell_id"] = subshell_id
    k.kc.shell_channel.send(msg)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        k.drain(0.05)
        for m in k.iopub:
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id:
                return dict(m["content"]["data"])
        if any(m["msg_type"] == "comm_close" and m["content"]["comm_id"] == comm_id for m in k.iopub):
            k.drain(0.2)  # (an answer is sent before the close)
            answers = [m for m in k.iopub if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id]
            return dict(answers[0]["content"]["data"]) if answers else None
    raise AssertionError(f"no answer and no close on the control comm within {timeout} s")


def test_hostile_ids_from_the_file_are_never_resumed(shipped: tuple[RawKernel, str, dict[str, str], Path]) -> None:
    k, good, hostile, marker = shipped
    k.text(LOAD)
    listed = k.text("%agent sessions")
    assert good in listed and "conv_evil" not in listed and "conv_semi" not in listed, listed
    refused = k.text("%agent resume conv_evil")
    assert "Resumed" not in refused and "No session" in refused, refused
    semi = k.text("%agent resume conv_semi;x")
    assert "Resumed" not in semi and "not a session id: 'conv_semi;x'" in semi, semi
    assert state(k)["conversation"] == good  # (the first command opened the latest session that is one)
    resumed = k.text("%agent resume")  # the latest session that is a session: the normal one
    assert f"Resumed {good}" in resumed, resumed
    ex = k.execute("%%agent --wait --session 'conv_semi;x'\nHello")
    assert "not a session id" in ex.text, ex.text
    assert state(k)["conversation"] == good
    assert not marker.exists()


def test_the_sidebar_resumes_over_the_control_comm(shipped: tuple[RawKernel, str, dict[str, str], Path]) -> None:
    k, good, hostile, marker = shipped
    assert ask(k, {"action": "active"}) is None  # no extension loaded: closed unanswered
    k.text(LOAD)
    assert ask(k, {"action": "active"}) == {"ok": True, "id": None}
    for value in hostile.values():
        answer = ask(k, {"action": "resume", "id": value})
        assert answer is not None and answer["ok"] is False and "not a session id" in answer["error"], answer
    missing = ask(k, {"action": "resume", "id": "conv_0123456789abcdef"})
    assert missing is not None and missing["ok"] is False and "No session" in missing["error"], missing
    assert ask(k, {"action": "resume"})["ok"] is False  # type: ignore[index]
    assert ask(k, {"action": "explode"})["ok"] is False  # type: ignore[index]
    assert state(k)["conversation"] is None

    answer = ask(k, {"action": "resume", "id": good})
    assert answer == {"ok": True, "id": good, "title": "A normal session", "message_count": 2}, answer
    now = state(k)
    assert now["conversation"] == good
    assert [m["content"] for m in now["messages"]] == ["normal question", "normal answer"]
    assert ask(k, {"action": "active"}) == {"ok": True, "id": good}
    # JupyterLab's widget manager talks on a subshell: the answer still comes, from the main loop
    msg = k.kc.session.msg("create_subshell_request", {})
    k.kc.control_channel.send(msg)
    subshell = k.kc.get_control_msg(timeout=10)["content"]["subshell_id"]
    assert ask(k, {"action": "active"}, subshell_id=subshell) == {"ok": True, "id": good}
    assert not marker.exists()


def test_the_control_comm_says_whether_a_panels_widget_still_lives(
    shipped: tuple[RawKernel, str, dict[str, str], Path],
) -> None:
    """The saved place of a chat panel asks before it draws the session instead of the widget."""
    k, *_ = shipped
    k.text(LOAD)
    model_id = k.value("__import__('ipywidgets').VBox().model_id")
    assert ask(k, {"action": "panel_live", "model_id": model_id}) == {"ok": True, "live": True}
    assert ask(k, {"action": "panel_live", "model_id": uuid.uuid4().hex}) == {"ok": True, "live": False}
    refused = ask(k, {"action": "panel_live", "model_id": "x'); import os"})
    assert refused is not None and refused["ok"] is False, refused


def test_a_deleted_session_is_replaced_by_a_new_one_on_the_next_turn(tmp_path: Path) -> None:
    db_path = tmp_path / "nb.agentik.db"
    with FakeLLMServer() as server:
        k = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            k.text(LOAD)
            server.push(Reply.text("First answer."))
            first = k.execute("%%agent --wait\nFirst question")
            assert first.ok and "First answer." in first.text, first.text
            old = state(k)["conversation"]
            with SessionDB(db_path) as db:  # the sidebar's Delete, through the server's store
                assert db.delete_conversation(old)
            server.push(Reply.text("Second answer."))
            second = k.execute("%%agent --wait\nSecond question")
            assert second.ok, second.text
            assert f"The session {old} was deleted; this turn starts a new session." in second.text, second.text
            assert "Could not write the session file" not in second.text
            assert "Second answer." in second.text
            now = state(k)
            assert now["conversation"] not in (None, old)
            notice = f"The session {old} was deleted; this turn starts a new session."
            assert [(m["content"], m["error"], m.get("notice")) for m in now["messages"]] == [
                ("Second question", None, None),
                ("", None, notice),
                ("Second answer.", None, None),
            ]
            assert f"Error: {notice}" not in second.text and f"Note: {notice}" in second.text  # no failure
            assert roles(audit(db_path, now["conversation"])) == ["UserMessage", "AssistantMessage"]
            assert ask(k, {"action": "active"}) == {"ok": True, "id": now["conversation"]}
            server.push(Reply.text("Third answer."))
            third = k.execute("%%agent --wait\nThird question")
            assert "was deleted" not in third.text and "Third answer." in third.text
            assert state(k)["conversation"] == now["conversation"]
            # the new session's history: its own turn only, nothing of the deleted one
            assert user_texts(server.requests[-1]) == ["Second question", "Third question"]
        finally:
            k.close()
