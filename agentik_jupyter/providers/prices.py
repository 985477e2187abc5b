"""What tokens cost: a small table of list prices for common models, which `AGENTIK_PRICES` overrides.

Prices are US dollars per million tokens, matched by a substring of the model name (first match
wins, so specific names come before their families). Input read from the prompt cache and input
written to it are priced apart: Anthropic reads at 0.1× and writes (5-minute cache) at 1.25× the
input price; OpenAI's cached input is 0.5× or less and writing costs nothing extra. The table is a
convenience, not a bill: prices change, so the user can set their own::

    %env AGENTIK_PRICES={"my-model": {"input": 1.0, "output": 4.0, "cached_input": 0.1}}

A model the table doesn't know and the user didn't price is shown in tokens only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

PRICES_ENV = "AGENTIK_PRICES"


class Price(BaseModel):
    """Dollars per million tokens. `cached_input` and `cache_write` default to the input price."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(self, input_tokens: int, cached: int, written: int, output_tokens: int) -> float:
        """Dollars for these tokens; `input_tokens` counts all input, the cached and written included."""
        fresh = max(0, input_tokens - cached - written)
        read = self.input if self.cached_input is None else self.cached_input
        write = self.input if self.cache_write is None else self.cache_write
        return (fresh * self.input + cached * read + written * write + output_tokens * self.output) / 1_000_000


def _anthropic(input_price: float, output_price: float) -> Price:
    return Price(input=input_price, output=output_price, cached_input=input_price * 0.1, cache_write=input_price * 1.25)


def _openai(input_price: float, output_price: float, cached: float) -> Price:
    return Price(input=input_price, output=output_price, cached_input=cached, cache_write=input_price)


PRICES: tuple[tuple[str, Price], ...] = (
    ("claude-opus-4-5", _anthropic(5.0, 25.0)),
    ("claude-opus-4", _anthropic(15.0, 75.0)),
    ("claude-sonnet", _anthropic(3.0, 15.0)),
    ("claude-haiku-4", _anthropic(1.0, 5.0)),
    ("claude-3-5-haiku", _anthropic(0.8, 4.0)),
    ("gpt-4.1-mini", _openai(0.4, 1.6, 0.1)),
    ("gpt-4.1-nano", _openai(0.1, 0.4, 0.025)),
    ("gpt-4.1", _openai(2.0, 8.0, 0.5)),
    ("gpt-4o-mini", _openai(0.15, 0.6, 0.075)),
    ("gpt-4o", _openai(2.5, 10.0, 1.25)),
    ("gpt-5-mini", _openai(0.25, 2.0, 0.025)),
    ("gpt-5-nano", _openai(0.05, 0.4, 0.005)),
    ("gpt-5", _openai(1.25, 10.0, 0.125)),
)
"""List prices as published by the providers (USD per million tokens); check them before you rely on them."""


class PricesError(ValueError):
    """AGENTIK_PRICES is not a JSON object of model -> {input, output[, cached_input, cache_write]}."""


def user_prices(environ: Mapping[str, str] | None = None) -> dict[str, Price]:
    """The prices the user set in AGENTIK_PRICES (empty when unset); bad JSON is a clear error."""
    raw = ((os.environ if environ is None else environ).get(PRICES_ENV) or "").strip()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        return {str(name): Price.model_validate(value) for name, value in data.items()}
    except (ValueError, ValidationError) as exc:
        raise PricesError(
            f"{PRICES_ENV} must be a JSON object like "
            '{"my-model": {"input": 3.0, "output": 15.0, "cached_input": 0.3}} (USD per million tokens): '
            f"{str(exc).splitlines()[0]}"
        ) from None


def price_of(model: str | None, environ: Mapping[str, str] | None = None) -> Price | None:
    """The price of `model`: the user's (exact name, then substring) before the table's."""
    name = (model or "").lower()
    if not name:
        return None
    mine = {k.lower(): v for k, v in user_prices(environ).items()}
    if name in mine:
        return mine[name]
    for needle, price in [*mine.items(), *PRICES]:
        if needle in name:
            return price
    return None


class Spent(Protocol):
    """Tokens one turn spent, and the model that spent them (persistence's TurnUsage)."""

    @property
    def model(self) -> str | None: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def cached_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...


def cost_of(turns: Sequence[Spent], environ: Mapping[str, str] | None = None) -> float | None:
    """Dollars these turns cost at list prices, each priced by its own model; None when a model's
    price is unknown. A bad AGENTIK_PRICES raises PricesError."""
    prices = [price_of(t.model, environ) for t in turns]
    if any(p is None for p in prices):
        return None
    return sum(
        p.cost(t.input_tokens, t.cached_tokens, t.cache_write_tokens, t.output_tokens)
        for t, p in zip(turns, prices, strict=True)
        if p is not None
    )
