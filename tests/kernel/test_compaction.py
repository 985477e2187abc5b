"""Compaction in a real kernel: a small budget makes the model summarise the oldest turns, and everyone is told.

The fake server answers the summary request like a model would (a summary that keeps turn 1's key
number); the tests read what the cell shows, what the model is sent next, and the sessions file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.core.compaction import SUMMARY_HEADING
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.replies import RecordedRequest
from tests.kernel_support import NotebookKernel, kernel_env, sql

pytestmark = pytest.mark.timeout(180)

KEY_NUMBER = "4242"
SUMMARY = f"- `sales`: 100 rows of units\n- Turn 0 found the key number {KEY_NUMBER}."


@dataclass
class Model:
    summaries: list[RecordedRequest] = field(default_factory=list)
    fail_summaries: bool = False

    def __call__(self, request: RecordedRequest) -> Reply:
        text = request.last_user_text()
        if text.startswith(SUMMARY_HEADING):
            self.summaries.append(request)
            return Reply.fault("500") if self.fail_summaries else Reply.text(SUMMARY)
        turn = text.split(":", 1)[0]
        found = f" The key number is {KEY_NUMBER}." if turn == "Q0" else ""
        return Reply.text(f"Answer to {turn}.{found} " + "Details of the analysis. " * 80)


@dataclass
class Run:
    server: FakeLLMServer
    kernel: NotebookKernel
    model: Model
    db_path: Path
    outputs: list[str]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    folder = tmp_path_factory.mktemp("compaction")
    db_path = folder / "c.agentik.db"
    model = Model()
    with FakeLLMServer() as server:
        server.set_responder(model)
        env = kernel_env(server, AGENTIK_DB_PATH=str(db_path), AGENTIK_CONTEXT_TOKENS="5000")
        kernel = NotebookKernel(env, folder)
        try:
            kernel.run("%load_ext agentik_jupyter")
            outputs = [kernel.text(f"%%agent --wait\nQ{i}: tell me about sales") for i in range(8)]
            yield Run(server, kernel, model, db_path, outputs)
        finally:
            kernel.close()


def wire_texts(body: dict[str, Any]) -> list[str]:
    out = []
    for m in body["messages"]:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.append("".join(b.get("text", "") for b in content if isinstance(b, dict)))
    return out


def test_a_small_budget_compacts_and_the_user_sees_one_line(run: Run) -> None:
    lines = [line for out in run.outputs for line in out.splitlines() if "Compacted" in line]
    assert len(lines) >= 1, run.outputs
    assert lines[0].startswith("Compacted ") and "earlier turns into a summary:" in lines[0]
    assert "k → " in lines[0] and lines[0].endswith("k tokens")  # news, not an "Error:"
    assert run.model.summaries, "the model was never asked for a summary"
    asked = run.model.summaries[0].last_user_text()
    assert "variables made or changed" in asked and "Q0: tell me about sales" in asked and KEY_NUMBER in asked


def test_the_model_is_told_it_reads_a_summary_and_keeps_the_key_number(run: Run) -> None:
    last = run.server.requests[-1]
    texts = wire_texts(last.body)
    first = next(t for t in texts if t.startswith(SUMMARY_HEADING))
    assert "You are reading a summary you wrote of" in first and KEY_NUMBER in first
    assert not any(t.startswith("Answer to Q0.") for t in texts)  # the turn itself is summarised
    assert texts[-1].endswith("Q7: tell me about sales")


def test_the_audit_log_keeps_every_message_and_working_memory_the_summary_with_its_ids(run: Run) -> None:
    users = sql(run.db_path, "SELECT count(*) FROM message WHERE role = 'user'")[0][0]
    answers = sql(run.db_path, "SELECT count(*) FROM message WHERE role = 'assistant'")[0][0]
    assert (users, answers) == (8, 8)
    rows = sql(run.db_path, "SELECT payload_json FROM working_memory WHERE payload_json LIKE '%summary_of%'")
    summaries = [r[0] for r in rows if '"summary_of":[' in r[0].replace(" ", "")]
    assert len(summaries) == 1
    replaced = sql(run.db_path, "SELECT id FROM message WHERE role IN ('user', 'assistant')")
    assert sum(r[0] in summaries[0] for r in replaced) >= 2


def test_agent_compact_by_hand_and_a_failing_summary_falls_back_and_says_so(run: Run) -> None:
    out = run.kernel.text("%agent compact")
    assert out.startswith("Compacted ") and "earlier turn" in out, out
    run.model.fail_summaries = True
    out = run.kernel.text("%agent compact")
    assert "Could not summarise the earlier turns" in out, out
    run.model.fail_summaries = False
    texts = [run.kernel.text(f"%%agent --wait\nQ{i}: tell me about sales") for i in range(8, 10)]
    assert all("Answer to Q" in t for t in texts)


def test_the_demo_model_answers_a_summary_request_with_the_findings() -> None:
    from agentik_jupyter.core.compaction import summary_request
    from agentik_jupyter.testing.demo import demo_responder
    from agentik_jupyter.types import ChatMessage

    old = [
        ChatMessage(role="user", content="How many rows?"),
        ChatMessage(role="assistant", content=f"sales has {KEY_NUMBER} rows.\nMore detail."),
    ]
    wire = [{"role": "user", "content": summary_request(old)[0].content}]
    request = RecordedRequest(
        method="POST", path="/v1/chat/completions", headers={}, body={"messages": wire}, api="openai"
    )
    reply = demo_responder(request)
    assert reply.content == f"- Asked: How many rows?\n  - Found: sales has {KEY_NUMBER} rows."
