"""A long session in a real kernel sends a prefix the provider can cache, against the fake server's recorded requests.

Providers cache the longest identical prefix in the order tools -> system -> messages. The
first request of a turn must therefore start with the bytes of the request before it (the last
of the previous turn): the per-question context (cell, execution count, variables) rides with the
new question, not in the system prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing._wire import prompt_of
from agentik_jupyter.testing.pytest_plugin import PROVIDERS
from tests.kernel_support import AGENT_EXPR, NotebookKernel, kernel_env, sql

pytestmark = pytest.mark.timeout(180)


def strip_markers(value: Any) -> Any:
    """The request without `cache_control` markers: they say where to cache, not what."""
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    return value


def cache_order(body: dict[str, Any]) -> list[str]:
    """A request as the provider's cache sees it: tools, then system, then each message, as JSON."""
    body = strip_markers(body)
    head = [json.dumps(body.get("tools")), json.dumps(body.get("system"))]
    return head + [json.dumps(m, sort_keys=True) for m in body["messages"]]


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system)
    if isinstance(system, str):
        return system
    return "".join(m["content"] for m in body["messages"] if m["role"] == "system")


@dataclass
class Run:
    provider: str
    server: FakeLLMServer
    kernel: NotebookKernel
    db_path: Path
    turns: list[int]  # index of each turn's first request
    first_estimate: int  # the budget's estimate of the first turn's first request, told after it


@pytest.fixture(scope="module", params=PROVIDERS)
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    provider = request.param
    folder: Path = tmp_path_factory.mktemp(f"cache-{provider}")
    with FakeLLMServer() as server:
        db_path = folder / "s.agentik.db"
        kernel = NotebookKernel(kernel_env(server, provider, AGENTIK_DB_PATH=str(db_path)), folder)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run("import pandas as pd\nsales = pd.DataFrame({'units': range(100)})")
            turns: list[int] = []
            first_estimate = 0
            for i in range(4):
                turns.append(len(server.requests))
                server.push(
                    Reply.tool_calls([{"name": "describe_dataframe", "args": {"name": "sales"}}]),
                    Reply.text(f"Answer {i}: sales has 100 rows. " + "More words. " * 40),
                )
                kernel.run(f"%%agent --wait\nQuestion {i} about sales?")
                if i == 0:
                    first_estimate = int(kernel.text(f"print({AGENT_EXPR}.session.last_estimate)").strip())
                kernel.run(f"extra_{i} = {i} * 2")  # an ordinary cell between turns
            yield Run(provider, server, kernel, db_path, turns, first_estimate)
        finally:
            kernel.close()


def test_a_turns_first_request_starts_with_the_bytes_of_the_request_before(run: Run) -> None:
    requests = run.server.requests
    assert len(requests) == 8
    for start in run.turns[1:]:
        before, first = cache_order(requests[start - 1].body), cache_order(requests[start].body)
        assert first[: len(before)] == before, f"turn starting at request {start} breaks the cached prefix"
        assert len(first) > len(before)
    for a, b in zip(requests, requests[1:]):  # the system prompt and the tools never change
        assert cache_order(a.body)[:2] == cache_order(b.body)[:2]


def test_the_question_carries_where_it_was_asked_and_what_changed(run: Run) -> None:
    last = run.server.requests[run.turns[-1]]
    assert "Execution count" not in system_text(last.body) and "extra_" not in system_text(last.body)
    user = last.body["messages"][-1]
    text = user["content"] if isinstance(user["content"], str) else "\n\n".join(b["text"] for b in user["content"])
    assert "Execution count:" in text and "New variables since the last question:\n- extra_2: int" in text
    assert text.endswith("Question 3 about sales?")
    assert last.last_user_text() == "Question 3 about sales?"
    first = run.server.requests[0].body["messages"][-1]
    first_text = first["content"] if isinstance(first["content"], str) else first["content"][0]["text"]
    assert "- sales: pandas.DataFrame" in first_text  # the first question lists every variable


def test_anthropic_requests_mark_tools_system_and_newest_message(run: Run) -> None:
    if run.provider != "anthropic":
        assert all("cache_control" not in json.dumps(r.body) for r in run.server.requests)
        keys = {r.body.get("prompt_cache_key") for r in run.server.requests}
        assert len(keys) == 1 and next(iter(keys)).startswith("agentik-conv_")  # one key for the session
        return
    for request in run.server.requests:
        body = request.body
        assert json.dumps(body).count('"cache_control"') == 3
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_cached_tokens_are_saved_per_turn_in_the_sessions_file(run: Run) -> None:
    rows = sql(
        run.db_path,
        "SELECT requests, input_tokens, cached_tokens, cache_write_tokens, output_tokens FROM turn_usage"
        " ORDER BY created_at",
    )
    assert len(rows) == 4 and all(r[0] == 2 for r in rows)
    later = rows[1:]
    assert all(cached > 0.8 * tokens for _, tokens, cached, _, _ in later), rows
    if run.provider == "anthropic":
        assert all(written > 0 for *_, written, _ in rows)


def test_the_turns_status_line_ends_with_tokens_in_from_cache_and_out(run: Run) -> None:
    run.server.push(Reply.text("Short answer."))
    text = run.kernel.text("%%agent --wait\nOne more about sales?")
    match = re.search(r"Done · ([\d,]+) tokens in, ([\d,]+) from cache, ([\d,]+) out\]", text)
    assert match, text
    tokens, cached, _ = (int(g.replace(",", "")) for g in match.groups())
    assert tokens > 1_000 and cached > 0.8 * tokens


def test_the_budgets_estimate_is_within_ten_percent_of_the_request_sent(run: Run) -> None:
    estimate = int(run.kernel.text(f"print({AGENT_EXPR}.session.last_estimate)").strip())
    last = run.server.requests[-1]
    sent, _ = prompt_of(last.body, last.api, "")  # the fake server bills ~4 characters a token, as sent
    assert abs(estimate - sent.tokens) <= 0.1 * sent.tokens, (estimate, sent.tokens)


def test_the_first_turns_estimate_counts_the_tools_its_mode_offers(run: Run) -> None:
    """Before any history the request is its system prompt and tool schemas: the estimate holds
    only the tools the session's mode sends (Agent mode leaves Plan's out)."""
    first = run.server.requests[0]
    sent, _ = prompt_of(first.body, first.api, "")
    offered = {t.get("name") or t["function"]["name"] for t in first.body["tools"]}
    assert "propose_plan" not in offered
    assert abs(run.first_estimate - sent.tokens) <= 0.1 * sent.tokens, (run.first_estimate, sent.tokens)


def test_agent_usage_gives_totals_cache_share_and_money_and_survives_a_resume(run: Run) -> None:
    out = run.kernel.text("%agent usage")
    assert "turns:       5 (9 model requests)" in out, out
    share = re.search(r"from cache:  [\d,]+ \((\d+)% of input\)", out)
    assert share and int(share.group(1)) >= 70, out
    assert "cost:        unknown for fake-model (set prices with AGENTIK_PRICES)" in out
    priced = '{"fake-model": {"input": 3.0, "output": 15.0, "cached_input": 0.3, "cache_write": 3.75}}'
    run.kernel.run(f"import os; os.environ['AGENTIK_PRICES'] = {priced!r}")
    out = run.kernel.text("%agent usage")
    assert re.search(r"cost:        \$\d+\.\d{4} at list prices, \d+\.\d{4} saved by the cache", out), out
    session = re.search(r"session:\s+(conv_\w+)", run.kernel.text("%agent status"))
    assert session
    run.kernel.run("%agent new")
    assert "No tokens recorded" in run.kernel.text("%agent usage") or "No session" in run.kernel.text("%agent usage")
    run.kernel.run(f"%agent resume {session.group(1)}")
    assert "turns:       5 (9 model requests)" in run.kernel.text("%agent usage")
