"""A 30-turn analysis in a real kernel: what it sends, how much of it a provider can cache, what it costs.

One notebook, run by nbclient against the fake server in each wire format: a 10,000-row
DataFrame, then 30 `%%agent --wait` turns (tools on 25 of them, 16 of those `run_code`, answers of
~1,600 characters) with an ordinary cell between turns. From the requests the fake server
recorded it reports:

- ``input_tokens``: all input sent (~4 characters a token, as the fake server bills);
- ``cacheable_share``: the share of input tokens in a prefix identical to the previous request's,
  in the providers' cache order (tools, system, messages);
- ``cost_uncached_usd`` / ``cost_cached_usd`` and their ``cost_ratio``, at $3 per million input
  tokens: Anthropic reads the shared prefix at 0.1× and writes the rest at 1.25×; OpenAI reads
  cached input (from 1,024 tokens, in 128-token steps) at 0.5×;
- ``estimate_error``: the worst relative error of the budget's estimate of a turn's first request
  against that request's size, over all turns.

``compacting``: 60 turns under an 8,000-token budget (`AGENTIK_CONTEXT_TOKENS`), summaries written
by the demo model: the largest request against the budget, failed turns, compactions, and whether
the last request still holds turn 1's key number.
"""

from __future__ import annotations

import json
import tempfile
from typing import Any

import nbformat
from nbclient import NotebookClient

from agentik_jupyter.core.compaction import SUMMARY_HEADING
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing._wire import CHARS_PER_TOKEN, cache_text
from agentik_jupyter.testing.demo import compaction_summary

from .kernel_client import kernel_environ

TURNS = 30
WITH_TOOLS = 25
RUN_CODE = 16
INPUT_PRICE = 3.0  # USD per million input tokens
MODELS = {"openai-compatible": "gpt-4o", "anthropic": "claude-sonnet-4-5"}
ESTIMATE = (
    "__s = __import__('agentik_jupyter.kernel.agent', fromlist=['x']).get_agent(get_ipython()).session\n"
    "print(f'ESTIMATE {__s.last_estimate}')"
)


def _answer(turn: int) -> str:
    sentence = f"In turn {turn}, the mean of units is 49.5 and the 90th percentile of price is 12.3. "
    return (sentence * (1_600 // len(sentence) + 1))[:1_600]


def _replies(turn: int) -> list[Reply]:
    if turn >= WITH_TOOLS:
        return [Reply.text(_answer(turn))]
    if turn < RUN_CODE:
        code = f"result_{turn} = df['units'].rolling({turn + 2}).mean().describe()\nresult_{turn}"
        call = {"name": "run_code", "args": {"code": code}}
    else:
        call = {"name": "describe_dataframe", "args": {"name": "df"}}
    return [Reply.tool_calls([call]), Reply.text(_answer(turn))]


def _asks(message: dict[str, Any]) -> bool:
    """A request that ends with the user's question (a turn's first), not with tool results."""
    content = message.get("content")
    if message.get("role") != "user":
        return False
    return isinstance(content, str) or not any(b.get("type") == "tool_result" for b in content or [])


def _common(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _figures(bodies: list[dict[str, Any]], provider: str) -> dict[str, Any]:
    total = shared_total = 0
    uncached = cached_cost = 0.0
    before = ""
    for body in bodies:
        text = cache_text(body)
        tokens = len(text) // CHARS_PER_TOKEN
        shared = _common(text, before) // CHARS_PER_TOKEN
        before = text
        total += tokens
        shared_total += shared
        uncached += tokens * INPUT_PRICE / 1e6
        if provider == "anthropic":
            cached_cost += (shared * 0.1 + (tokens - shared) * 1.25) * INPUT_PRICE / 1e6
        else:
            hit = shared // 128 * 128 if shared >= 1_024 else 0
            cached_cost += (hit * 0.5 + (tokens - hit)) * INPUT_PRICE / 1e6
    return {
        "requests": len(bodies),
        "input_tokens": total,
        "cacheable_share": round(shared_total / total, 3) if total else 0.0,
        "uncacheable_share": round(1 - shared_total / total, 3) if total else 1.0,
        "cost_uncached_usd": round(uncached, 4),
        "cost_cached_usd": round(cached_cost, 4),
        "cost_ratio": round(cached_cost / uncached, 3) if uncached else 0.0,
    }


def run_session(provider: str) -> dict[str, Any]:
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        cells = [
            "%load_ext agentik_jupyter",
            "import numpy as np, pandas as pd\n"
            "rng = np.random.default_rng(0)\n"
            "df = pd.DataFrame({'units': np.arange(10_000), 'price': rng.normal(10, 2, 10_000).round(2),"
            " 'region': rng.choice(['north', 'south', 'east', 'west'], 10_000)})",
        ]
        for turn in range(TURNS):
            cells += [f"%%agent --wait\nQuestion {turn}: what does the data say about units and price?", ESTIMATE]
            cells.append(f"step_{turn} = df['price'].iloc[{turn}]")  # an ordinary cell between turns
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]

        def responder(request: Any) -> Reply:
            text = request.last_user_text()
            turn = int(text.split(":", 1)[0].removeprefix("Question ")) if text.startswith("Question ") else 0
            replies = _replies(turn)
            return replies[0] if _asks(request.messages[-1]) else replies[-1]

        server.set_responder(responder)
        env = kernel_environ(server.env(provider, model=MODELS[provider]), budget=None, AGENTIK_APPROVE="auto")
        client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": tmp}})
        client.execute(env=env, cwd=tmp)
        requests = server.requests
        printed = [
            "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
            for cell in nb.cells
            if cell.source.startswith("__s = ")
        ]
        estimates = [int(text.split()[1]) for text in printed]
        firsts = [r for r in requests if _asks(r.messages[-1])]
        errors = []
        for request, estimate in zip(firsts, estimates):
            sent = len(cache_text(request.body)) // CHARS_PER_TOKEN
            errors.append(abs(estimate - sent) / sent)
        figures = _figures([r.body for r in requests], provider)
        figures["turns"] = len(estimates)
        figures["estimate_error"] = round(max(errors), 3) if errors else None
        return figures


COMPACT_TURNS = 60
COMPACT_BUDGET = 8_000
KEY_NUMBER = "7919"


def run_compacting(provider: str = "anthropic") -> dict[str, Any]:
    """60 turns under an 8,000-token budget: every request stays within it, no turn fails, and the
    model still reads turn 1's key number, through the summaries (the demo model writes them)."""
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:

        def responder(request: Any) -> Reply:
            text = request.last_user_text()
            if text.startswith(SUMMARY_HEADING):
                return Reply.text(compaction_summary(text))
            turn = text.split(":", 1)[0]
            key = f" The key number is {KEY_NUMBER}." if turn == "Question 0" else ""
            return Reply.text(f"{turn}: the mean of units is 49.5.{key}\n" + _answer(0)[:1_400])

        server.set_responder(responder)
        cells = ["%load_ext agentik_jupyter"]
        cells += [f"%%agent --wait\nQuestion {t}: and what about price?" for t in range(COMPACT_TURNS)]
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
        env = kernel_environ(server.env(provider, model=MODELS[provider]), AGENTIK_CONTEXT_TOKENS=str(COMPACT_BUDGET))
        client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": tmp}})
        client.execute(env=env, cwd=tmp)
        shown = [
            str(o.get("data", {}).get("text/plain", "")) + o.get("text", "")
            for cell in nb.cells[1:]
            for o in cell.get("outputs", [])
        ]
        turns = [r for r in server.requests if not r.last_user_text().startswith(SUMMARY_HEADING)]
        largest = max(len(cache_text(r.body)) // CHARS_PER_TOKEN for r in turns)
        return {
            "turns": len(turns),
            "compactions": sum("Compacted " in text for text in shown),
            "failed_turns": sum("Error:" in text for text in shown),
            "largest_request_tokens": largest,
            "largest_request_over_budget": round(largest / COMPACT_BUDGET, 3),
            "key_number_missing": int(KEY_NUMBER not in json.dumps(turns[-1].body)),
        }


def long_session() -> dict[str, Any]:
    return {
        "openai": run_session("openai-compatible"),
        "anthropic": run_session("anthropic"),
        "compacting": run_compacting(),
    }


if __name__ == "__main__":
    print(json.dumps(long_session(), indent=2))
