"""`%%agent` and `%agent` in a real kernel, against the fake LLM server over real HTTP.

A notebook is run with nbclient (both wire formats) and the tests read what the saved
notebook shows; the subcommands and options run cell by cell in one kernel; Stop is
pressed by sending the Stop button's comm message, as JupyterLab does.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import PROVIDERS
from tests.kernel_support import (
    AGENT_EXPR,
    SECRET_KEY,
    STATE_CODE,
    NotebookKernel,
    RawKernel,
    assistant_texts,
    audit,
    file_bytes,
    kernel_env,
    output_text,
    parse_state,
    roles,
    run_notebook,
    sql,
    transcript,
    user_texts,
    wait_for,
)

pytestmark = pytest.mark.timeout(120)

Q_FIRST = "What is the capital of France?"
A_FIRST = "The capital of France is **Paris**, a city on the Seine with about two million people."
Q_FOLLOW = "And what river runs through it?"
A_FOLLOW = "The Seine runs through Paris."
Q_TOOL = "Describe the sales DataFrame."
A_TOOL = "sales has 8 rows and 3 columns; one price is missing."
Q_FAIL = "This question meets a revoked key."
Q_AFTER = "Are you still there?"
A_AFTER = "Yes, still here after the error."
Q_SLOW = "Take your time with this one."
A_SLOW = "Finished after a pause of half a second."

CELLS: list[tuple[str, str]] = [
    ("load", "%load_ext agentik_jupyter"),
    (
        "data",
        """
        import pandas as pd
        sales = pd.DataFrame({
            "region": ["north", "south", "east", "west"] * 2,
            "units": [3, 5, 8, 13, 21, 34, 55, 89],
            "price": [9.5, 10.0, None, 11.25, 8.75, 10.5, 9.0, 12.0],
        })
        sales.shape
    """,
    ),
    ("first", f"%%agent --wait\n{Q_FIRST}"),
    ("follow", f"%%agent --wait\n{Q_FOLLOW}"),
    ("tool", f"%%agent --wait\n{Q_TOOL}"),
    ("fail", f"%%agent --wait\n{Q_FAIL}"),
    ("after", f"%%agent --wait\n{Q_AFTER}"),
    ("slow", f"%%agent --wait\n{Q_SLOW}"),
    ("state", STATE_CODE),
    ("status", "%agent status"),
    ("config", "%agent config"),
    ("panel", "%agent panel"),
]


@dataclass
class NotebookRun:
    provider: str
    nb: nbformat.NotebookNode
    server: FakeLLMServer
    db_path: Path
    index: dict[str, int]

    def outputs(self, key: str) -> list[Any]:
        return self.nb.cells[self.index[key]].outputs

    def text(self, key: str) -> str:
        return output_text(self.outputs(key))

    def requests_for(self, question: str) -> list[Any]:
        # endswith: Anthropic's wire merges a failed turn's question with the next one into one user turn
        return [r for r in self.server.requests if r.last_user_text().strip().endswith(question)]


@pytest.fixture(scope="module", params=PROVIDERS)
def notebook_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NotebookRun]:
    """The notebook above, run top to bottom by nbclient in a fresh kernel, per wire format."""
    provider = request.param
    folder = tmp_path_factory.mktemp(f"nb-{provider}")
    db_path = folder / "analysis.agentik.db"
    with FakeLLMServer() as server:
        server.push(
            Reply.text(A_FIRST),
            Reply.text(A_FOLLOW),
            Reply.tool_calls([{"name": "describe_dataframe", "args": {"name": "sales"}}]),
            Reply.text(A_TOOL),
            # Some providers and proxies echo the key they were given in the error body.
            Reply.fault("401", message=f"Incorrect API key provided: {SECRET_KEY}."),
            Reply.text(A_AFTER),
            Reply.fault("slow_first_byte", delay=0.5, text=A_SLOW),
        )
        env = kernel_env(server, provider, AGENTIK_DB_PATH=str(db_path))
        nb = run_notebook([src for _, src in CELLS], env, folder, save_as=folder / "analysis.ipynb")
        yield NotebookRun(provider, nb, server, db_path, {key: i for i, (key, _) in enumerate(CELLS)})


def test_streamed_answer_shows_the_full_text(notebook_run: NotebookRun) -> None:
    (req,) = notebook_run.requests_for(Q_FIRST)
    assert req.stream, "the turn must ask the provider for a stream"
    assert req.api == ("anthropic" if notebook_run.provider == "anthropic" else "openai")
    outputs = notebook_run.outputs("first")
    # The live view's place first (a widget; this answer came at once, so LIVE_AFTER_S never
    # filled it), then the static transcript that outlives the kernel.
    assert "application/vnd.jupyter.widget-view+json" in outputs[0]["data"]
    bundle = transcript(outputs)
    assert "Agent: " + A_FIRST in bundle["text/plain"]
    assert "<strong>Paris</strong>" in bundle["text/html"]
    data = bundle["application/vnd.agentik.transcript+json"]
    assert data["status"] == "complete"
    assert [e["role"] for e in data["entries"]] == ["user", "assistant"]
    assert data["entries"][1]["content"] == A_FIRST


def test_follow_up_cell_continues_the_session(notebook_run: NotebookRun) -> None:
    (req,) = notebook_run.requests_for(Q_FOLLOW)
    assert user_texts(req)[-2:] == [Q_FIRST, Q_FOLLOW]
    assert assistant_texts(req) == [A_FIRST]
    assert A_FOLLOW in transcript(notebook_run.outputs("follow"))["text/plain"]
    conversations = sql(notebook_run.db_path, "SELECT count(*) FROM conversation")
    assert conversations == [(1,)]


def test_tool_call_renders_a_card_and_the_model_gets_the_result(notebook_run: NotebookRun) -> None:
    first, second = notebook_run.requests_for(Q_TOOL)
    tools = first.body["tools"]
    names = [t.get("name") or t.get("function", {}).get("name") for t in tools]
    assert "describe_dataframe" in names
    # The second request carries the tool's result computed on the real DataFrame.
    sent = json.dumps(second.messages)
    assert "8 rows" in sent and "price" in sent
    bundle = transcript(notebook_run.outputs("tool"))
    plain, html = bundle["text/plain"], bundle["text/html"]
    assert "[tool] describe_dataframe" in plain and "8 rows" in plain and A_TOOL in plain
    assert "<details" in html and "describe_dataframe" in html and "<table" in html
    (card,) = [e for e in bundle["application/vnd.agentik.transcript+json"]["entries"] if e["role"] == "tool"]
    assert card["name"] == "describe_dataframe" and card["args"] == {"name": "sales"}
    assert card["error"] is None and "8 rows" in card["result"]


def test_provider_401_shows_a_clear_error_and_the_next_cell_works(notebook_run: NotebookRun) -> None:
    outputs = notebook_run.outputs("fail")
    bundle = transcript(outputs)
    assert bundle["application/vnd.agentik.transcript+json"]["status"] == "error"
    shown = output_text(outputs)
    assert "LLM_API_KEY" in shown and "401" in shown, shown
    assert re.search(r"authenticat", shown, re.I), shown
    assert "Traceback" not in shown
    assert "Incorrect API key provided: [hidden: LLM_API_KEY]" in shown  # the provider's words, the key scrubbed
    after = transcript(notebook_run.outputs("after"))
    assert after["application/vnd.agentik.transcript+json"]["status"] == "complete"
    assert A_AFTER in after["text/plain"]
    # The failed question is part of what the model sees next (the spec writes it to working
    # memory when the turn starts), so "try again" works.
    (req,) = notebook_run.requests_for(Q_AFTER)
    asked = " ".join(user_texts(req))
    assert Q_FIRST in asked and asked.index(Q_FIRST) < asked.index(Q_FAIL) < asked.index(Q_AFTER)


def test_wait_finishes_the_turn_before_the_next_cell(notebook_run: NotebookRun) -> None:
    # The answer came after a 0.5 s pause; the next cell already sees it in the stores.
    state = parse_state(notebook_run.text("state"))
    assert state["busy"] is False and state["loading"] is False and state["status"] == "idle"
    assert state["messages"][-2]["content"].strip() == Q_SLOW
    assert state["messages"][-1] == {"role": "assistant", "content": A_SLOW, "error": None}
    assert A_SLOW in transcript(notebook_run.outputs("slow"))["text/plain"]


def test_status_and_config_never_show_the_key(notebook_run: NotebookRun) -> None:
    status = notebook_run.text("status")
    assert f"provider: {notebook_run.provider}" in status
    assert "model:    fake-model" in status
    assert str(notebook_run.db_path) in status
    assert "LLM_API_KEY                set" in notebook_run.text("config")


def test_no_output_widget_state_or_db_row_contains_the_key(notebook_run: NotebookRun) -> None:
    # The key did reach the provider, so the searches below are meaningful.
    seen = json.dumps([r.headers for r in notebook_run.server.requests])
    assert SECRET_KEY in seen
    saved = (notebook_run.db_path.parent / "analysis.ipynb").read_text()
    assert "application/vnd.jupyter.widget-state+json" in saved, "nbclient should have saved widget state"
    assert SECRET_KEY not in saved
    assert SECRET_KEY[3:] not in saved  # not even without its prefix
    data = file_bytes(notebook_run.db_path)
    assert len(data) > 0 and SECRET_KEY.encode() not in data and SECRET_KEY[3:].encode() not in data


# ---- %agent subcommands and %%agent options, cell by cell in one kernel ----


@dataclass
class Live:
    kernel: NotebookKernel
    server: FakeLLMServer
    db_path: Path

    def conversation(self) -> str:
        match = re.search(r"session:\s+(conv_\w+)", self.kernel.text("%agent status"))
        assert match, "no current session"
        return match.group(1)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    folder = tmp_path_factory.mktemp("live")
    db_path = folder / "live.agentik.db"
    with FakeLLMServer() as server:
        kernel = NotebookKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), folder)
        try:
            kernel.run("%load_ext agentik_jupyter")
            yield Live(kernel, server, db_path)
        finally:
            kernel.close()


def test_status_shows_provider_model_and_file_never_the_key(live: Live) -> None:
    live.kernel.run("%%agent --wait\nhello")
    out = live.kernel.text("%agent status")
    assert "provider: openai-compatible" in out
    assert "model:    fake-model" in out
    assert f"sessions file: {live.db_path}" in out
    assert re.search(r"session:\s+conv_\w+ hello", out)
    assert SECRET_KEY not in out and SECRET_KEY[3:] not in out
    config = live.kernel.text("%agent config")
    assert re.search(r"LLM_API_KEY\s+set", config) and SECRET_KEY not in config


def test_sessions_new_and_resume(live: Live) -> None:
    live.kernel.text("%agent new")
    live.kernel.run("%%agent --wait\nremember the word apple")
    first = live.conversation()
    assert "New session" in live.kernel.text("%agent new")
    live.kernel.run("%%agent --wait\nremember the word pear")
    second = live.conversation()
    assert second != first
    listing = live.kernel.text("%agent sessions")
    assert first in listing and second in listing
    assert re.search(rf"\* {second}\s", listing), listing  # the current one is marked
    assert re.search(rf"{first}\s.*remember the word apple", listing), listing
    resumed = live.kernel.text(f"%agent resume {first}")
    assert f"Resumed {first}" in resumed and "(2 messages)" in resumed
    live.kernel.run("%%agent --wait\nwhich word?")
    req = live.server.last_request
    assert "remember the word apple" in user_texts(req)
    assert "remember the word pear" not in user_texts(req)
    assert live.conversation() == first


def test_tools_lists_the_notebook_tools(live: Live) -> None:
    out = live.kernel.text("%agent tools")
    for name in ("list_variables", "describe_dataframe", "inspect_variable", "run_code"):
        assert name in out
    assert re.search(r"run_code.*ask", out), out


def test_unknown_subcommand_prints_the_usage(live: Live) -> None:
    out = live.kernel.text("%agent frobnicate")
    assert "unknown command 'frobnicate'" in out
    assert "Usage: %agent <command>" in out and "resume [ID]" in out
    assert "Usage: %agent <command>" in live.kernel.text("%agent")


def test_bad_cell_option_prints_the_usage_and_sends_nothing(live: Live) -> None:
    before = len(live.server.requests)
    out = live.kernel.text("%%agent --wait --bogus\nhello")
    assert "unrecognized arguments: --bogus" in out and "Usage: %%agent" in out
    assert len(live.server.requests) == before


def test_bad_cell_option_prints_the_usage_once(live: Live) -> None:
    out = live.kernel.text("%%agent --wait --model\nhello")
    assert "--model: expected one argument" in out
    assert out.count("Usage: %%agent") == 1, out


def test_the_question_is_sent_as_written(live: Live) -> None:
    cell = live.kernel.run("%%agent --wait\nexactly this")
    sent = live.server.last_request.messages[-1]["content"]
    assert sent.endswith("\n\nexactly this") and live.server.last_request.last_user_text() == "exactly this"
    assert "You: exactly this\nAgent:" in transcript(cell.outputs)["text/plain"]


def test_missing_key_is_a_clear_message_in_the_cell(live: Live) -> None:
    before = len(live.server.requests)
    live.kernel.run("import os\n_key = os.environ.pop('LLM_API_KEY')")
    try:
        cell = live.kernel.run("%%agent --wait\nanyone there?")
    finally:
        live.kernel.run("os.environ['LLM_API_KEY'] = _key\ndel _key")
    bundle = transcript(cell.outputs)
    assert bundle["application/vnd.agentik.transcript+json"]["status"] == "error"
    assert "LLM_API_KEY is not set" in bundle["text/plain"]
    assert len(live.server.requests) == before
    cell = live.kernel.run("%%agent --wait\nand now?")
    assert "Echo: and now?" in transcript(cell.outputs)["text/plain"]


def test_agentik_wait_makes_every_cell_wait_and_no_wait_opts_out(live: Live) -> None:
    live.kernel.run("import os\nos.environ['AGENTIK_WAIT'] = '1'")
    try:
        waited = live.kernel.run("%%agent\nwait for me")
        assert "Echo: wait for me" in transcript(waited.outputs)["text/plain"]
        live.server.chunk_delay = 0.05
        background = live.kernel.run("%%agent --no-wait\ndo not wait for me")
        # Only the live view (and, with no text, the place of the turn's Rewind): the cell returned
        # before the answer was in.
        assert [o["data"].get("text/plain") for o in background.outputs] == [
            "Agent turn (live view; a transcript replaces it when the turn ends)",
            None,
        ]
        assert parse_state(live.kernel.text(STATE_CODE))["busy"] is True
    finally:
        live.server.chunk_delay = 0.0
        live.kernel.run("del os.environ['AGENTIK_WAIT']")
    live.kernel.run(
        f"import asyncio\nfor _ in range(200):\n    if not {AGENT_EXPR}.session.busy: break\n    await asyncio.sleep(0.05)"
    )
    state = parse_state(live.kernel.text(STATE_CODE))
    assert state["busy"] is False and state["messages"][-1]["content"] == "Echo: do not wait for me"


def test_a_cell_run_while_a_turn_streams_waits_its_turn(live: Live) -> None:
    live.kernel.text("%agent new")
    live.server.chunk_delay = 0.02
    try:
        live.kernel.run("%%agent --no-wait\nfirst of two quick cells with a rather long question")
        second = live.kernel.run("%%agent --wait\nsecond of two")
    finally:
        live.server.chunk_delay = 0.0
    assert "Echo: second of two" in transcript(second.outputs)["text/plain"]
    state = parse_state(live.kernel.text(STATE_CODE))
    assert [(m["role"], m["content"]) for m in state["messages"]] == [
        ("user", "first of two quick cells with a rather long question"),
        ("assistant", "Echo: first of two quick cells with a rather long question"),
        ("user", "second of two"),
        ("assistant", "Echo: second of two"),
    ]
    # The second turn started after the first had finished, and saw it.
    assert user_texts(live.server.last_request) == [
        "first of two quick cells with a rather long question",
        "second of two",
    ]


def test_new_option_starts_a_fresh_session(live: Live) -> None:
    live.kernel.run("%%agent --wait\nsomething to forget")
    old = live.conversation()
    live.kernel.run("%%agent --wait --new\nstart over")
    req = live.server.last_request
    assert user_texts(req) == ["start over"] and assistant_texts(req) == []
    assert live.conversation() != old


def test_session_option_continues_that_session(live: Live) -> None:
    live.kernel.run("%%agent --wait --new\nthe secret colour is teal")
    teal = live.conversation()
    live.kernel.run("%%agent --wait --new\nan unrelated chat")
    live.kernel.run(f"%%agent --wait --session {teal}\nwhat colour?")
    req = live.server.last_request
    assert user_texts(req) == ["the secret colour is teal", "what colour?"]
    assert live.conversation() == teal


def test_model_option_reaches_the_request_for_that_turn_only(live: Live) -> None:
    live.kernel.run("%%agent --wait --model bigger-model\nuse the other model")
    assert live.server.last_request.body["model"] == "bigger-model"
    live.kernel.run("%%agent --wait\nand back")
    assert live.server.last_request.body["model"] == "fake-model"


def test_temp_option_writes_nothing(live: Live) -> None:
    live.kernel.run("%%agent --wait\nsaved turn")
    count = "SELECT (SELECT count(*) FROM message), (SELECT count(*) FROM working_memory), (SELECT count(*) FROM conversation)"
    before = sql(live.db_path, count)
    cell = live.kernel.run("%%agent --wait --temp\noff the record")
    assert "Echo: off the record" in transcript(cell.outputs)["text/plain"]
    cell = live.kernel.run("%%agent --wait --temp\nstill off the record")
    # A temporary session still has a memory of its own while it lasts ...
    assert user_texts(live.server.last_request) == ["off the record", "still off the record"]
    assert sql(live.db_path, count) == before
    assert "off the record" not in file_bytes(live.db_path).decode("utf-8", "replace")
    state = parse_state(live.kernel.text(STATE_CODE))
    assert state["temporary"] is True and state["conversation"] is None
    # ... and the next plain cell goes back to the saved session.
    live.kernel.run("%%agent --wait\nback on the record")
    assert "saved turn" in user_texts(live.server.last_request)
    assert sql(live.db_path, count)[0][0] == before[0][0] + 2


# ---- Stop, pressed as the frontend does it ----

LONG_ANSWER = " ".join(f"word{i}" for i in range(400))


def _stop_button(messages: list[dict[str, Any]]) -> str:
    """The comm id of the one Stop button among these comm_open messages."""
    stops = [
        m["content"]["comm_id"]
        for m in messages
        if m["msg_type"] == "comm_open"
        and m["content"]["data"].get("state", {}).get("_model_name") == "ButtonModel"
        and "Stop" in m["content"]["data"].get("state", {}).get("description", "")
    ]
    assert len(stops) == 1, f"expected one Stop button, found {len(stops)}"
    return stops[0]


def _widget_values(kernel: RawKernel, since: int = 0) -> list[str]:
    """Every `value` the kernel sent to widget views (what the user watched change)."""
    return [
        str(m["content"]["data"]["state"]["value"])
        for m in kernel.iopub[since:]
        if m["msg_type"] in {"comm_msg", "comm_open"} and "value" in m["content"]["data"].get("state", {})
    ]


def _stream_texts(kernel: RawKernel, since: int = 0) -> list[str]:
    """Every stream output's text the kernel sent (a `--wait` answer without our extension)."""
    return [str(m["content"]["text"]) for m in kernel.iopub[since:] if m["msg_type"] == "stream"]


def test_stop_button_comm_message_ends_the_turn_within_a_second(tmp_path: Path) -> None:
    db_path = tmp_path / "stop.agentik.db"
    s = f"{AGENT_EXPR}.session"
    idle = f"not {s}.busy and {s}.agent_store.status == 'idle' and not {s}.chat_store.loading"
    with FakeLLMServer(chunk_delay=0.05) as server:
        server.push(Reply.text(LONG_ANSWER))  # ~20 s of streaming
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            ex = kernel.execute("%%agent\nWrite a long essay.", timeout=30)
            assert ex.ok, ex.text
            # The cell returned at once; its live view (with a Stop button) was displayed in it.
            assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in ex.outputs)
            stop_id = _stop_button(ex.messages)

            # Wait until the answer is streaming, and visibly so: the view grew word by word.
            kernel.wait_until(f"{s}.agent_store.status == 'responding'", timeout=15)
            wait_for(
                lambda: (
                    kernel.drain(0.1)
                    or len([v for v in _widget_values(kernel) if "word3" in v and "word399" not in v]) >= 2
                ),
                timeout=5,
                what="the answer to appear while it streams",
            )
            assert parse_state(kernel.text(STATE_CODE))["busy"] is True

            start = time.monotonic()
            kernel.click(stop_id)
            took = kernel.wait_until(idle, timeout=5, interval=0.02)
            assert took < 1.0, f"Stop took {took:.2f} s"
            assert time.monotonic() - start < 1.5

            state = parse_state(kernel.text(STATE_CODE))
            assert state["active_tool"] is None and state["error"] is None
            user, *rest = state["messages"]
            assert user == {"role": "user", "content": "Write a long essay.", "error": None}
            partial = "".join(m["content"] for m in rest if m["role"] == "assistant")
            assert partial and LONG_ANSWER.startswith(partial.strip()) and len(partial) < len(LONG_ANSWER)

            # The view concluded as stopped, then gave way to the transcript: its Stop button is closed.
            kernel.drain(0.3)
            closed = [m for m in kernel.iopub if m["msg_type"] == "comm_close" and m["content"]["comm_id"] == stop_id]
            assert closed, "the finished view's Stop button should be closed"
            assert any("Stopped" in json.dumps(m["content"]) for m in kernel.iopub if m["msg_type"] == "comm_msg")

            # The audit log: the question, then the "interrupted" marker last.
            entries = audit(db_path)
            assert roles(entries)[0] == "UserMessage" and roles(entries)[-1] == "ErrorRecord"
            assert entries[-1].record.code == "interrupted"

            # The next turn works and continues the session.
            server.chunk_delay = 0.0
            cell = kernel.execute("%%agent --wait\nShort answer please.", timeout=30)
            assert cell.ok, cell.text
            assert "Echo: Short answer please." in transcript(cell.outputs)["text/plain"]
            state = parse_state(kernel.text(STATE_CODE))
            assert state["busy"] is False and state["status"] == "idle" and state["error"] is None
            assert "Write a long essay." in user_texts(server.last_request)

            # Stop also works while a `--wait` cell is suspended in its top-level await
            # (ipykernel >= 7.4 handles comm messages then): the cell ends, showing "Stopped".
            server.chunk_delay = 0.05
            server.push(Reply.text(LONG_ANSWER))
            seen = len(kernel.iopub)
            msg_id = kernel.submit("%%agent --wait\nAnother long essay.")
            # The cell is busy (no polling by execute now): watch what it shows instead (this client
            # has no extension of ours: a `--wait` answer streams as the cell's text output).
            wait_for(
                lambda: kernel.drain(0.05) or any("word3" in v for v in _stream_texts(kernel, seen)),
                timeout=15,
                what="the answer to stream",
            )
            stop_id = _stop_button([m for m in kernel.iopub[seen:] if m["parent_header"].get("msg_id") == msg_id])
            start = time.monotonic()
            kernel.click(stop_id)
            waited = kernel.collect(msg_id, timeout=10)
            assert time.monotonic() - start < 1.0
            assert waited.ok, waited.text
            assert "[■ Stopped]" in transcript(waited.outputs)["text/plain"]
            assert parse_state(kernel.text(STATE_CODE))["busy"] is False
            # Nothing the kernel sent to the frontend (widgets, outputs) holds the key.
            assert SECRET_KEY not in json.dumps(kernel.iopub, default=str)
        finally:
            kernel.close()
