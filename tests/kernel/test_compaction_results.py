"""At a compaction, the kept turns' long tool results are shortened once, and stay as they are until the next.

A real kernel whose model prints a long variable on every turn (`run_code`, approved by
AGENTIK_APPROVE=auto), under a budget small enough that compactions happen: the tests read the
requests the fake server received and the sessions file.
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

pytestmark = pytest.mark.timeout(240)

SHORTENED = "[shortened when the session was compacted"
TURNS = 7


@dataclass
class Model:
    requests: list[RecordedRequest] = field(default_factory=list)
    summaries: list[int] = field(default_factory=list)
    """Indexes into `requests` of the summary requests."""

    def __call__(self, request: RecordedRequest) -> Reply:
        self.requests.append(request)
        text = request.last_user_text()
        if text.startswith(SUMMARY_HEADING):
            self.summaries.append(len(self.requests) - 1)
            return Reply.text("- `notes`: a long text of rows\n- Nothing else found yet.")
        turn = text.split(":", 1)[0]
        if request.messages[-1].get("role") == "user":
            return Reply.tool_calls([{"name": "run_code", "args": {"code": "print(notes)"}}])
        return Reply.text(f"Answer to {turn}: notes holds rows.")


@dataclass
class Run:
    model: Model
    db_path: Path
    outputs: list[str]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    folder = tmp_path_factory.mktemp("compaction_results")
    db_path = folder / "r.agentik.db"
    model = Model()
    with FakeLLMServer() as server:
        server.set_responder(model)
        env = kernel_env(server, AGENTIK_DB_PATH=str(db_path), AGENTIK_CONTEXT_TOKENS="6000", AGENTIK_APPROVE="auto")
        kernel = NotebookKernel(env, folder)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(
                "notes = '\\n'.join(f'row {i}: the units of region {i % 7} grew by {i} percent' for i in range(60))"
            )
            outputs = [kernel.text(f"%%agent --wait\nQ{i}: what is in notes?") for i in range(TURNS)]
            yield Run(model, db_path, outputs)
        finally:
            kernel.close()


def tool_contents(request: RecordedRequest) -> list[str]:
    return [str(m.get("content")) for m in request.messages if m.get("role") == "tool"]


def asked(request: RecordedRequest) -> str:
    return request.last_user_text().split(":", 1)[0]


def after_first_compaction(run: Run) -> RecordedRequest:
    assert run.model.summaries, f"no compaction in {TURNS} turns: {run.outputs[-1]}"
    return run.model.requests[run.model.summaries[0] + 1]


def test_every_turn_answered_and_a_compaction_was_told(run: Run) -> None:
    assert all(f"Answer to Q{i}" in out for i, out in enumerate(run.outputs)), run.outputs
    assert any("Compacted " in out for out in run.outputs)


def test_after_a_compaction_older_kept_results_are_short_and_the_newest_whole(run: Run) -> None:
    request = after_first_compaction(run)
    results = tool_contents(request)
    assert len(results) >= 2, "the compaction kept fewer than two turns with tool results"
    *older, newest = results
    assert all(SHORTENED in r and len(r) < 2_300 for r in older), [len(r) for r in older]
    assert SHORTENED not in newest and len(newest) > 2_300, len(newest)


def test_a_shortened_result_stays_the_same_until_the_next_compaction(run: Run) -> None:
    """The prefix the provider caches: between two compactions, a turn's request repeats the
    previous turn's tool results byte for byte (nothing is shortened turn by turn)."""
    compactions = set(run.model.summaries)
    firsts = [
        i
        for i, r in enumerate(run.model.requests)
        if i not in compactions and r.messages[-1].get("role") == "user" and asked(r).startswith("Q")
    ]
    compared = 0
    for earlier, later in zip(firsts, firsts[1:]):
        if any(earlier < c < later for c in compactions):
            continue
        before, after = run.model.requests[earlier].messages, run.model.requests[later].messages
        assert after[: len(before) - 1] == before[:-1], f"requests {earlier} and {later} differ before the question"
        compared += 1
    assert compared >= 1


def test_the_audit_log_keeps_the_whole_result_and_working_memory_the_short_one(run: Run) -> None:
    whole = sql(run.db_path, "SELECT count(*) FROM message WHERE role = 'tool_result'")[0][0]
    assert whole == TURNS
    audit: list[Any] = sql(run.db_path, "SELECT payload_json FROM message WHERE role = 'tool_result'")
    assert not any(SHORTENED in row[0] for row in audit)
    working = sql(run.db_path, "SELECT payload_json FROM working_memory WHERE payload_json LIKE '%tool_call_id%'")
    assert any(SHORTENED in row[0] for row in working)
