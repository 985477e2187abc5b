"""The hardening suite, provider side: every fault a provider throws at a turn, in one real kernel.

Each fault is injected by the fake LLM server over real HTTP into a `%%agent --wait` cell. The
cell must end with a clear message (no traceback), the next turn must work, and at the end the
sessions file must be sound: `PRAGMA integrity_check` ok, every tool call paired with its result
in the audit log and in working memory, and of a failed turn only its question in what the model
sees next (the spec writes the question to working memory when the turn starts: "try again" works).
Tool-level faults (bad arguments, unknown tool, fifty calls) must not end the turn at all: the
model reads the error and the loop goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import NotebookKernel, kernel_env, output_text, sql, transcript

pytestmark = pytest.mark.timeout(300)

READ_TIMEOUT = 2
"""LLM_TIMEOUT in the kernel, so "a first byte slower than the timeout" costs seconds, not minutes."""
BIG_ANSWER = "lorem ipsum dolor sit amet " * 194_000  # a little over 5 MB
NESTED = "[" * 5000 + "]" * 5000

PROVIDER_FAULTS: list[tuple[str, list[Reply], list[str]]] = [
    ("401", [Reply.fault("401")], ["401", "LLM_API_KEY"]),
    ("404", [Reply.fault("404")], ["404", "LLM_MODEL"]),
    ("429", [Reply.fault("429", retry_after=120)], ["429", "wait 120 s"]),
    ("500", [Reply.fault("500")] * 3, ["500", "Try again later"]),
    ("503", [Reply.fault("503")] * 3, ["503", "Try again later"]),
    ("reset", [Reply.fault("reset")], ["broke while the answer was streaming"]),
    ("truncated", [Reply.fault("truncated")], ["ended before the answer was complete"]),
    ("stream_error", [Reply.fault("stream_error")], ["reported an error during the answer", "Overloaded"]),
    ("slow", [Reply.fault("slow_first_byte", delay=READ_TIMEOUT + 3)], ["did not answer in time"]),
    # (the model thinks first, so the answer streams into a live view: LIVE_AFTER_S)
    (
        "5 MB",
        [Reply.text(BIG_ANSWER, chunks=200, first_byte_after=0.3)],
        ["passed 1,000,000 characters", "stopped reading"],
    ),
]
"""(name, what the server answers, what the cell must say)."""

TOOL_FAULTS: list[tuple[str, list[dict[str, Any]], str]] = [
    ("invalid_json", [{"name": "list_variables", "raw_args": '{"oops": '}], "not valid JSON"),
    ("nested", [{"name": "inspect_variable", "raw_args": NESTED}], "levels deep"),
    ("unknown_tool", [{"name": "no_such_tool", "args": {}}], "Unknown tool 'no_such_tool'"),
    ("fifty", [{"name": "list_variables", "args": {}}] * 50, ""),
]
"""(name, the calls in one response, what the model must read back)."""


@dataclass
class Run:
    kernel: NotebookKernel
    server: FakeLLMServer
    db: Path
    shown: dict[str, str] = field(default_factory=dict)
    bundles: dict[str, dict[str, Any]] = field(default_factory=dict)
    after: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, list[Any]] = field(default_factory=dict)

    def turn(self, key: str, text: str, *replies: Reply) -> None:
        before = len(self.server.requests)
        self.server.push(*replies)
        cell = self.kernel.run(f"%%agent --wait\n{text}")
        self.shown[key] = output_text(cell.outputs)
        self.bundles[key] = transcript(cell.outputs)["application/vnd.agentik.transcript+json"]
        self.requests[key] = self.server.requests[before:]
        assert self.server.pending == 0, f"{key}: {self.server.pending} scripted replies were not asked for"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    folder = tmp_path_factory.mktemp("hardening")
    db = folder / "hard.agentik.db"
    with FakeLLMServer() as server:
        env = kernel_env(server, AGENTIK_DB_PATH=str(db), AGENTIK_APPROVE="auto", LLM_TIMEOUT=str(READ_TIMEOUT))
        kernel = NotebookKernel(env, folder, timeout=90)
        r = Run(kernel, server, db)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run("numbers = list(range(10))")
            r.turn("warmup", "Hello", Reply.text("Hello."))
            for name, replies, _ in PROVIDER_FAULTS:
                r.turn(name, f"Fault {name}", *replies)
                r.turn(f"after {name}", f"Still there after {name}?", Reply.text(f"Yes, after {name}."))
            for name, calls, _ in TOOL_FAULTS:
                r.turn(name, f"Tool fault {name}", Reply.tool_calls(calls), Reply.text(f"Recovered from {name}."))
            yield r
        finally:
            kernel.close()


@pytest.mark.parametrize(
    "name,expected", [(n, e) for n, _, e in PROVIDER_FAULTS], ids=[n for n, _, _ in PROVIDER_FAULTS]
)
def test_provider_fault_ends_the_turn_with_a_clear_message(run: Run, name: str, expected: list[str]) -> None:
    shown = run.shown[name]
    assert run.bundles[name]["status"] == "error", shown
    for words in expected:
        assert words in shown, f"{name}: {words!r} not in {shown!r}"
    assert "Traceback" not in shown and "RecursionError" not in shown


@pytest.mark.parametrize("name", [n for n, _, _ in PROVIDER_FAULTS])
def test_the_next_turn_works_after_a_provider_fault(run: Run, name: str) -> None:
    key = f"after {name}"
    assert run.bundles[key]["status"] == "complete"
    assert f"Yes, after {name}." in run.shown[key]
    (request,) = run.requests[key]
    sent = json.dumps(request.messages)
    assert f"Fault {name}" in sent, "a failed turn's question is part of what the model sees next"
    assert "cut short by a fault" not in sent and "lorem ipsum" not in sent, "but none of its broken answer"


def test_retries_and_retry_after_are_honoured(run: Run) -> None:
    assert len(run.requests["500"]) == 3 and len(run.requests["503"]) == 3  # two retries, then the error
    assert len(run.requests["429"]) == 1  # the server asked for 120 s: not waited for, said


@pytest.mark.parametrize("name,expected", [(n, e) for n, _, e in TOOL_FAULTS], ids=[n for n, _, _ in TOOL_FAULTS])
def test_tool_fault_goes_back_to_the_model_and_the_loop_goes_on(run: Run, name: str, expected: str) -> None:
    bundle = run.bundles[name]
    assert bundle["status"] == "complete", run.shown[name]
    assert f"Recovered from {name}." in run.shown[name]
    first, second = run.requests[name]
    last_user = max(i for i, m in enumerate(second.messages) if m.get("role") == "user")
    tool_messages = [m for m in second.messages[last_user:] if m.get("role") == "tool"]
    calls = TOOL_FAULTS[[n for n, _, _ in TOOL_FAULTS].index(name)][1]
    assert len(tool_messages) == len(calls), "every call gets exactly one result"
    assert all(expected in str(m.get("content")) for m in tool_messages), tool_messages[:1]
    cards = [e for e in bundle["entries"] if e["role"] == "tool"]
    assert len(cards) == len(calls)


def test_a_5_mb_answer_is_cut_at_the_limit(run: Run) -> None:
    (request,) = run.requests["5 MB"]
    # (what streamed live is not kept: the saved cell holds the transcript, which says the answer
    # was cut; a frontend's widget state may keep a part of the live view)
    shown = run.kernel.saved().count("lorem")
    assert shown < BIG_ANSWER.count("lorem") // 2, "the notebook must not carry the whole runaway answer"


def test_the_sessions_file_is_sound_after_every_fault(run: Run) -> None:
    assert sql(run.db, "PRAGMA integrity_check") == [("ok",)]
    rows = sql(run.db, "SELECT turn_id, role, payload_json FROM message ORDER BY seq")
    calls = {json.loads(p)["call"]["id"] for _, role, p in rows if role == "tool_call"}
    results = {json.loads(p)["result"]["tool_call_id"] for _, role, p in rows if role == "tool_result"}
    assert len(calls) >= 53 and calls == results, calls ^ results
    errors = [json.loads(p)["message"] for _, role, p in rows if role == "error"]
    assert len(errors) == len(PROVIDER_FAULTS)
    working = [json.loads(p) for (p,) in sql(run.db, "SELECT payload_json FROM working_memory ORDER BY order_idx")]
    asked = {c["id"] for m in working for c in (m.get("tool_calls") or [])}
    answered = {m["tool_result"]["tool_call_id"] for m in working if m.get("tool_result")}
    assert asked == answered and len(asked) >= 53
    failed = [m for m in working if str(m.get("content", "")).startswith("Fault ")]
    assert [(m["role"], m["content"]) for m in failed] == [("user", f"Fault {n}") for n, _, _ in PROVIDER_FAULTS]
    assert not any("cut short by a fault" in str(m.get("content")) or "lorem" in str(m.get("content")) for m in working)
