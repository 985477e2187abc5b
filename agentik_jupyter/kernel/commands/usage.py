"""`%agent usage`: the tokens the session spent, the share served from the provider's cache, and what it cost."""

from __future__ import annotations

import os
from typing import Any

from agentik_jupyter.persistence import TurnUsage
from agentik_jupyter.providers.prices import PRICES_ENV, PricesError, price_of


def usage_lines(turns: list[TurnUsage], environ: Any = None) -> list[str]:
    """The session's totals in words, priced per turn by the model that ran it when its price is known."""
    env = os.environ if environ is None else environ
    if not turns:
        return ["No tokens recorded in this session yet."]
    total_in = sum(t.input_tokens for t in turns)
    cached = sum(t.cached_tokens for t in turns)
    written = sum(t.cache_write_tokens for t in turns)
    out = sum(t.output_tokens for t in turns)
    requests = sum(t.requests for t in turns)
    share = cached / total_in if total_in else 0.0
    lines = [
        f"turns:       {len(turns)} ({requests} model requests)",
        f"tokens in:   {total_in:,}",
        f"from cache:  {cached:,} ({share:.0%} of input)",
    ]
    if written:
        lines.append(f"cache write: {written:,}")
    lines.append(f"tokens out:  {out:,}")
    try:
        prices = [price_of(t.model, env) for t in turns]
    except PricesError as exc:
        return [*lines, f"cost:        unknown ({exc})"]
    if any(p is None for p in prices):
        unpriced = sorted({t.model or "unknown model" for t, p in zip(turns, prices) if p is None})
        lines.append(f"cost:        unknown for {', '.join(unpriced)} (set prices with {PRICES_ENV})")
        return lines
    cost = sum(
        p.cost(t.input_tokens, t.cached_tokens, t.cache_write_tokens, t.output_tokens)
        for t, p in zip(turns, prices)
        if p is not None
    )
    uncached = sum(p.cost(t.input_tokens, 0, 0, t.output_tokens) for t, p in zip(turns, prices) if p is not None)
    saved = f", {uncached - cost:,.4f} saved by the cache" if uncached > cost else ""
    lines.append(f"cost:        ${cost:,.4f} at list prices{saved}")
    return lines


async def usage_command(agent: Any, args: list[str]) -> None:
    session = agent.session
    if session is None:
        print("No session yet: the next %%agent cell starts one.")
        return
    for line in usage_lines(await session.usage()):
        print(line)
