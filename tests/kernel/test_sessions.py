"""Sessions that survive, seen from real kernels: restart and resume, a failed turn backfilled
on resume, a kernel SIGKILLed mid-stream, and kernels writing the same folder or file at once.

The storage-level behaviour is tested in test_persistence_*.py; here the kernels, the HTTP
provider and the SQLite file are all real, and the assertions are on what the model is sent,
what the user sees, and what the file holds.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from agentik_jupyter.persistence import SessionDB, check_turn
from agentik_jupyter.testing import FakeLLMServer, RecordedRequest, Reply, Responder, echo_responder
from tests.kernel_support import (
    AGENT_EXPR,
    STATE_CODE,
    NotebookKernel,
    RawKernel,
    assistant_texts,
    audit,
    close_all,
    kernel_env,
    output_text,
    parse_state,
    roles,
    run_notebook,
    sql,
    transcript,
    user_texts,
)

pytestmark = pytest.mark.timeout(120)

LOAD = "%load_ext agentik_jupyter"


def integrity(db_path: Path) -> list[tuple]:
    return sql(db_path, "PRAGMA integrity_check")


def test_restart_resumes_the_latest_session(tmp_path: Path) -> None:
    db_path = tmp_path / "study.agentik.db"
    with FakeLLMServer() as server:
        env = kernel_env(server, AGENTIK_DB_PATH=str(db_path))
        server.push(
            Reply.text("Noted: the target column is churn."),
            Reply.tool_calls([{"name": "describe_dataframe", "args": {"name": "df"}}]),
            Reply.text("df has 3 rows."),
        )
        run_notebook(
            [
                LOAD,
                "import pandas as pd\ndf = pd.DataFrame({'churn': [0, 1, 0]})",
                "%%agent --wait\nThe target column is churn.",
                "%%agent --wait\nHow big is df?",
            ],
            env,
            tmp_path,
        )
        first_run = len(server.requests)
        assert first_run == 3

        # The first kernel is gone; a new one on the same file continues the session.
        server.push(Reply.text("You told me the target column is churn."))
        nb = run_notebook(
            [LOAD, "%%agent --wait\nWhat did I tell you first?", "%agent sessions", STATE_CODE], env, tmp_path
        )

    (req,) = server.requests[first_run:]
    assert user_texts(req) == ["The target column is churn.", "How big is df?", "What did I tell you first?"]
    assert assistant_texts(req) == ["Noted: the target column is churn.", "df has 3 rows."]
    # The earlier tool call and its result come back as a pair, in the provider's own format.
    sent = json.dumps(req.messages)
    assert "describe_dataframe" in sent and "3 rows" in sent
    calls = [m for m in req.messages if m.get("role") == "assistant" and m.get("tool_calls")]
    results = [m for m in req.messages if m.get("role") == "tool"]
    assert len(calls) == 1 and len(results) == 1
    assert results[0]["tool_call_id"] == calls[0]["tool_calls"][0]["id"]

    assert "You told me the target column is churn." in transcript(nb.cells[1].outputs)["text/plain"]
    listing = output_text(nb.cells[2].outputs)
    assert len([line for line in listing.splitlines() if "conv_" in line]) == 1, listing
    assert "The target column is churn." in listing
    # The resumed panel history holds both runs.
    state = parse_state(output_text(nb.cells[3].outputs))
    assert [m["content"] for m in state["messages"] if m["role"] == "user"] == [
        "The target column is churn.",
        "How big is df?",
        "What did I tell you first?",
    ]

    # The audit log (read from outside) holds both runs, in order, in one conversation.
    assert sql(db_path, "SELECT count(*) FROM conversation") == [(1,)]
    assert roles(audit(db_path)) == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolCallRecord",
        "ToolResultRecord",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    assert integrity(db_path) == [("ok",)]


def test_provider_failure_is_in_the_audit_log_and_backfilled_on_resume(tmp_path: Path) -> None:
    db_path = tmp_path / "fail.agentik.db"
    with FakeLLMServer() as server:
        env = kernel_env(server, AGENTIK_DB_PATH=str(db_path))
        server.push(Reply.text("Fine answer."), Reply.fault("401"))
        nb = run_notebook(
            [LOAD, "%%agent --wait\nA good question.", "%%agent --wait\nA doomed question."], env, tmp_path
        )
        assert "LLM_API_KEY" in output_text(nb.cells[2].outputs)

        entries = audit(db_path)
        assert roles(entries) == ["UserMessage", "AssistantMessage", "UserMessage", "ErrorRecord"]
        error = entries[-1].record
        assert "LLM_API_KEY" in error.message and "401" in error.message
        assert entries[-1].turn_id == entries[-2].turn_id  # the error belongs to the failed turn
        with SessionDB(db_path) as db:
            conv = db.latest_conversation()
            assert conv is not None
            working = db.working_memory(conv.id)
        # the failed turn's question stays in working memory (written when the turn began)
        assert [(m.role, m.content.strip()) for m in working] == [
            ("user", "A good question."),
            ("assistant", "Fine answer."),
            ("user", "A doomed question."),
        ]

        # A new kernel: `%agent resume` brings the history back, the failed turn's error included.
        kernel = NotebookKernel(env, tmp_path)
        try:
            kernel.run(LOAD)
            resumed = kernel.text("%agent resume")
            assert f"Resumed {conv.id}" in resumed
            state = parse_state(kernel.text(STATE_CODE))
            assert [m["role"] for m in state["messages"]] == ["user", "assistant", "user", "assistant"]
            assert state["messages"][2]["content"] == "A doomed question."
            failed = state["messages"][3]
            assert failed["error"] and "LLM_API_KEY" in failed["error"]
            # The chat panel shows it too (its widget state is what the frontend renders).
            kernel.run("%agent panel")
            saved = kernel.saved()
            assert "A doomed question." in saved and "LLM_API_KEY" in saved

            before = len(server.requests)
            cell = kernel.run("%%agent --wait\nTry again please.")
            assert "Echo: Try again please." in transcript(cell.outputs)["text/plain"]
        finally:
            kernel.close()

    (req,) = server.requests[before:]
    assert user_texts(req) == ["A good question.", "A doomed question.", "Try again please."]
    assert roles(audit(db_path))[-2:] == ["UserMessage", "AssistantMessage"]


def test_try_again_after_a_server_error_has_the_question_and_the_file_stays_sound(tmp_path: Path) -> None:
    """The spec's seed: the question enters working memory when the turn starts. A turn that
    fails with a 5xx after one tool call, then "try again": the model gets the question; after
    a restart the file is sound and every tool call in it is paired."""
    db_path = tmp_path / "retry.agentik.db"
    question = "What share of df churned?"
    with FakeLLMServer() as server:
        env = kernel_env(server, AGENTIK_DB_PATH=str(db_path))
        server.push(
            Reply.tool_calls([{"name": "describe_dataframe", "args": {"name": "df"}}]),
            *[Reply.fault("500")] * 3,  # the second model call of the turn fails, retries included
            Reply.text("One of three rows churned. END-RETRY"),
        )
        nb = run_notebook(
            [
                LOAD,
                "import pandas as pd\ndf = pd.DataFrame({'churn': [0, 1, 0]})",
                f"%%agent --wait\n{question}",
                "%%agent --wait\ntry again",
            ],
            env,
            tmp_path,
        )
        assert "500" in output_text(nb.cells[2].outputs)
        assert "END-RETRY" in transcript(nb.cells[3].outputs)["text/plain"]
        retry = server.requests[-1]
        assert user_texts(retry) == [question, "try again"]
        assert not [m for m in retry.messages if m.get("role") == "tool" or m.get("tool_calls")]  # nothing unpaired

        # A new kernel on the same file continues with everything the model saw.
        server.push(Reply.text("Still one in three."))
        run_notebook([LOAD, "%%agent --wait\nAnd now?"], env, tmp_path)
        after_restart = server.requests[-1]
    assert user_texts(after_restart) == [question, "try again", "And now?"]
    assert integrity(db_path) == [("ok",)]
    assert sql(db_path, "PRAGMA foreign_key_check") == []
    entries = audit(db_path)
    calls = [e.record.call.id for e in entries if type(e.record).__name__ == "ToolCallRecord"]
    results = [e.record.result.tool_call_id for e in entries if type(e.record).__name__ == "ToolResultRecord"]
    assert len(calls) == 1 and sorted(calls) == sorted(results)
    assert [type(e.record).__name__ for e in entries if e.turn_id == entries[0].turn_id][-1] == "ErrorRecord"
    with SessionDB(db_path) as db:
        conv = db.latest_conversation()
        assert conv is not None
        working = db.working_memory(conv.id)
    turns: list[list] = []
    for message in working:
        if message.role == "user":
            turns.append([])
        turns[-1].append(message)
    for turn in turns:
        check_turn(turn)  # every tool call answered, one question per turn
    assert [t[0].content.strip() for t in turns] == [question, "try again", "And now?"]


LONG = " ".join(f"token{i}" for i in range(600))


def test_sigkill_mid_stream_leaves_a_sound_file_that_resumes(tmp_path: Path) -> None:
    db_path = tmp_path / "crash.agentik.db"
    with FakeLLMServer() as server:
        env = kernel_env(server, AGENTIK_DB_PATH=str(db_path))
        server.push(Reply.text("The answer before the crash."))
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text(LOAD)
            ex = kernel.execute("%%agent --wait\nQuestion before the crash.")
            assert ex.ok and "The answer before the crash." in transcript(ex.outputs)["text/plain"]

            server.chunk_delay = 0.03
            server.push(Reply.text(LONG))
            assert kernel.execute("%%agent\nA long answer, please.").ok  # runs in the background
            kernel.wait_until(f"{AGENT_EXPR}.session.agent_store.status == 'responding'", timeout=15)
            time.sleep(0.3)  # mid-stream
            assert parse_state(kernel.text(STATE_CODE))["busy"] is True
            kernel.kill()
        finally:
            kernel.close()
        server.chunk_delay = 0.0

        assert integrity(db_path) == [("ok",)]
        assert sql(db_path, "PRAGMA foreign_key_check") == []
        entries = audit(db_path)
        assert roles(entries)[:2] == ["UserMessage", "AssistantMessage"]
        assert entries[1].record.content == "The answer before the crash."
        assert entries[2].record.content.strip() == "A long answer, please."  # the killed turn's question

        before = len(server.requests)
        server.push(Reply.text("Back after the crash."))
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text(LOAD)
            ex = kernel.execute("%%agent --wait\nAre you back?")
            assert ex.ok and "Back after the crash." in transcript(ex.outputs)["text/plain"]
        finally:
            kernel.close()

    (req,) = server.requests[before:]
    # The earlier complete turn is sent; of the turn that died unfinished only its question
    # (it entered working memory when the turn started), none of its partial answer.
    assert user_texts(req) == ["Question before the crash.", "A long answer, please.", "Are you back?"]
    assert assistant_texts(req) == ["The answer before the crash."]
    assert roles(audit(db_path))[-2:] == ["UserMessage", "AssistantMessage"]
    assert integrity(db_path) == [("ok",)]


TURNS = 6


def _concurrent_turns(kernels: dict[str, RawKernel]) -> dict[str, list]:
    """Queue TURNS `%%agent --wait` cells in every kernel at once, then collect them all."""
    submitted = {
        name: [k.submit(f"%%agent --wait\n{name} question {i}") for i in range(TURNS)] for name, k in kernels.items()
    }
    return {name: [kernels[name].collect(m, timeout=60) for m in ids] for name, ids in submitted.items()}


def _first_questions_meet(names: tuple[str, ...]) -> Responder:
    """The echo, once a question of every kernel has reached the model: each kernel's first turn
    waits for the others' (at most 30 s), so the turns overlap however loaded the machine is (an
    idle kernel could otherwise run all its turns before the other kernel's first one started)."""
    arrived = {name: threading.Event() for name in names}

    def respond(request: RecordedRequest) -> Reply:
        name = (request.last_user_text().split() or [""])[0]
        if name in arrived:
            arrived[name].set()
        for event in arrived.values():
            event.wait(30)
        return echo_responder(request)

    return respond


def _check_overlap(server: FakeLLMServer, names: tuple[str, ...]) -> None:
    """The turns really ran at the same time: the provider saw the kernels' requests interleaved."""
    first = [r.last_user_text().split()[0] for r in server.requests[:TURNS]]
    assert set(first) == set(names), first


def _all_streams(kernels: dict[str, RawKernel]) -> str:
    """Every stdout/stderr text any kernel sent, whichever cell (or background task) it came from."""
    return "".join(m["content"]["text"] for k in kernels.values() for m in k.iopub if m["msg_type"] == "stream")


def _check_no_lost_turns(results: dict[str, list]) -> None:
    for name, executions in results.items():
        for i, ex in enumerate(executions):
            assert ex.ok, ex.text
            text = ex.text
            assert "locked" not in text.lower(), text
            bundle = transcript(ex.outputs)
            assert bundle["application/vnd.agentik.transcript+json"]["status"] == "complete", text
            assert f"Echo: {name} question {i}" in bundle["text/plain"]


def _questions(db_path: Path) -> list[str]:
    rows = sql(db_path, "SELECT payload_json FROM message WHERE role = 'user'")
    return sorted(json.loads(p)["content"].strip() for (p,) in rows)


def test_two_notebooks_in_one_folder_write_at_the_same_time(tmp_path: Path) -> None:
    with FakeLLMServer(chunk_delay=0.01, responder=_first_questions_meet(("a", "b"))) as server:
        kernels: dict[str, RawKernel] = {}
        try:
            for name in ("a", "b"):
                # What Jupyter Server tells a kernel about its notebook.
                env = kernel_env(server, JPY_SESSION_NAME=str(tmp_path / f"{name}.ipynb"))
                kernels[name] = RawKernel(env, tmp_path)
                kernels[name].text(LOAD)
            results = _concurrent_turns(kernels)
        finally:
            close_all(kernels.values())
        _check_overlap(server, ("a", "b"))
    _check_no_lost_turns(results)
    assert "locked" not in _all_streams(kernels).lower()
    for name in ("a", "b"):
        db_path = tmp_path / f"{name}.agentik.db"
        assert integrity(db_path) == [("ok",)]
        assert _questions(db_path) == sorted(f"{name} question {i}" for i in range(TURNS))
        assert sql(db_path, "SELECT role, count(*) FROM message GROUP BY role ORDER BY role") == [
            ("assistant", TURNS),
            ("user", TURNS),
        ]
        assert sql(db_path, "SELECT count(*) FROM working_memory") == [(2 * TURNS,)]


def test_two_kernels_on_one_notebook_write_at_the_same_time(tmp_path: Path) -> None:
    notebook = tmp_path / "shared.ipynb"
    db_path = tmp_path / "shared.agentik.db"
    with FakeLLMServer(chunk_delay=0.01, responder=_first_questions_meet(("k1", "k2"))) as server:
        kernels: dict[str, RawKernel] = {}
        try:
            for name in ("k1", "k2"):
                kernels[name] = RawKernel(kernel_env(server, JPY_SESSION_NAME=str(notebook)), tmp_path)
                kernels[name].text(LOAD)
            results = _concurrent_turns(kernels)
            statuses = {name: k.text("%agent status") for name, k in kernels.items()}
        finally:
            close_all(kernels.values())
        _check_overlap(server, ("k1", "k2"))
    _check_no_lost_turns(results)
    assert "locked" not in _all_streams(kernels).lower()
    for text in statuses.values():
        assert f"sessions file: {db_path}" in text
    assert integrity(db_path) == [("ok",)]
    assert _questions(db_path) == sorted(f"{n} question {i}" for n in ("k1", "k2") for i in range(TURNS))
    assert sql(db_path, "SELECT role, count(*) FROM message GROUP BY role ORDER BY role") == [
        ("assistant", 2 * TURNS),
        ("user", 2 * TURNS),
    ]
    assert sql(db_path, "SELECT count(*) FROM working_memory") == [(2 * 2 * TURNS,)]
    # Sequence numbers are unique within each conversation.
    for (conv,) in sql(db_path, "SELECT id FROM conversation"):
        seqs = [s for (s,) in sql(db_path, "SELECT seq FROM message WHERE conversation_id = ? ORDER BY seq", (conv,))]
        assert len(seqs) == len(set(seqs))
