"""providers/prices.py: the price table, AGENTIK_PRICES, and what cached tokens cost."""

from __future__ import annotations

import pytest

from agentik_jupyter.providers.prices import PricesError, price_of


def test_known_families_are_priced_with_cache_reads_cheaper_than_input() -> None:
    sonnet = price_of("claude-sonnet-4-5")
    assert sonnet is not None and sonnet.input == 3.0 and sonnet.cached_input == pytest.approx(0.3)
    # a million input tokens, 900k of them read from cache, 100k written: 0.27 + 0.375
    assert sonnet.cost(1_000_000, 900_000, 100_000, 0) == pytest.approx(0.645)
    assert price_of("gpt-4o-mini-2024-07-18") == price_of("gpt-4o-mini")
    assert price_of("my-local-llama") is None and price_of(None) is None


def test_agentik_prices_overrides_and_bad_json_says_what_is_expected() -> None:
    env = {
        "AGENTIK_PRICES": '{"my-local-llama": {"input": 0, "output": 0}, "claude-sonnet": {"input": 1, "output": 2}}'
    }
    assert price_of("my-local-llama", env).cost(10, 0, 0, 10) == 0
    assert price_of("claude-sonnet-4-5", env).input == 1
    with pytest.raises(PricesError, match="AGENTIK_PRICES must be a JSON object"):
        price_of("x", {"AGENTIK_PRICES": "{not json"})
    with pytest.raises(PricesError):
        price_of("x", {"AGENTIK_PRICES": '{"x": {"input": "cheap"}}'})
