"""The chat route's adapter cache: bounded, keyed by a hash, and it closes what it drops."""

from __future__ import annotations

import asyncio
import threading

from agentik_jupyter.core.chat_route import MAX_CACHED_ADAPTERS, AdapterCache, config_digest, stream_chat
from agentik_jupyter.providers.base import ChatParams, collect
from agentik_jupyter.providers.config import load_config, make_adapter
from agentik_jupyter.testing import FakeLLMServer
from agentik_jupyter.types import ChatMessage

KEY = "sk-agentik-LEAKCHECK-cache-1234567890"


def _client(adapter: object) -> object:
    return adapter._clients._client  # type: ignore[attr-defined]


async def _ask(cache: AdapterCache, env: dict[str, str]) -> str:
    response = await collect(
        stream_chat([ChatMessage(role="user", content="ping")], None, [], environ=env, adapters=cache)
    )
    return response.content or ""


async def test_the_cache_is_bounded_and_closes_the_adapters_it_evicts(fake_llm: FakeLLMServer) -> None:
    cache = AdapterCache()
    first_env = fake_llm.env(api_key=f"{KEY}-0")
    assert await _ask(cache, first_env) == "Echo: ping"
    first = cache.get(load_config(first_env))
    first_client = _client(first)
    assert first_client is not None and not first_client.is_closed
    for n in range(1, MAX_CACHED_ADAPTERS + 2):
        assert await _ask(cache, fake_llm.env(api_key=f"{KEY}-{n}")) == "Echo: ping"
        assert len(cache) <= MAX_CACHED_ADAPTERS
    await asyncio.sleep(0.05)  # the close runs as a task on this loop
    assert first_client.is_closed, "an evicted adapter's connection pool must be closed"
    assert cache.get(load_config(first_env)) is not first  # a fresh one when asked again
    await cache.aclose()


async def test_entries_are_keyed_by_a_hash_never_the_key(fake_llm: FakeLLMServer) -> None:
    cache = AdapterCache()
    config = load_config(fake_llm.env(api_key=KEY))
    cache.get(config)
    keys = repr(list(cache._adapters))  # type: ignore[attr-defined]
    assert KEY not in keys and config_digest(config) in keys
    other = load_config(fake_llm.env(api_key=KEY + "x"))
    assert config_digest(other) != config_digest(config)
    await cache.aclose()


def test_a_client_replaced_for_a_new_loop_is_closed_on_its_own_loop(fake_llm: FakeLLMServer) -> None:
    """One adapter used from two loops: the client made on the first (still running) is closed there."""
    adapter = make_adapter(load_config(fake_llm.env(api_key=KEY)))
    params = ChatParams(
        model="fake-model", messages=[ChatMessage(role="user", content="ping")], system_prompt="s", tool_schemas=[]
    )
    other_loop = asyncio.new_event_loop()
    thread = threading.Thread(target=other_loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(collect(adapter.stream(params)), other_loop).result(timeout=20)
        old_client = _client(adapter)

        async def on_this_loop() -> None:
            await collect(adapter.stream(params))
            await adapter.aclose()

        asyncio.run(on_this_loop())
        assert _client(adapter) is None or _client(adapter) is not old_client
        for _ in range(100):
            if old_client.is_closed:
                break
            threading.Event().wait(0.05)
        assert old_client.is_closed, "the client left behind on the other loop must be closed"
    finally:
        other_loop.call_soon_threadsafe(other_loop.stop)
        thread.join(timeout=5)
        other_loop.close()


def test_entries_of_finished_loops_are_dropped(fake_llm: FakeLLMServer) -> None:
    cache = AdapterCache()
    env = fake_llm.env(api_key=KEY)
    for _ in range(3):
        assert asyncio.run(_ask(cache, env)) == "Echo: ping"  # each asyncio.run is a new loop, closed after
    assert len(cache) == 1, "only the entry of the last loop may remain"
