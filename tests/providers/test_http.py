"""The HTTP policy against a real loopback server: typed errors, retries, timeouts, no key leaks."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentik_jupyter.errors import (
    AuthenticationError,
    MalformedResponseError,
    NotFoundError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamError,
)
from agentik_jupyter.providers._http import RetryPolicy, Timeouts
from agentik_jupyter.providers.base import ChatParams, ProviderAdapter, StreamDone, TextDelta, collect
from agentik_jupyter.providers.config import load_config, make_adapter
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.types import ChatMessage

SECRET = "sk-live-SECRET-4b1d-never-show-me"
PROVIDERS = ["openai-compatible", "anthropic"]
LONG_TEXT = "one two three four five six seven eight nine ten eleven twelve"


class Sleeps:
    """An injected sleep that records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture(autouse=True)
def secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_API_KEY", SECRET)


def adapter_for(
    srv: FakeLLMServer, provider: str, sleeps: Sleeps, *, timeouts: Timeouts | None = None
) -> ProviderAdapter:
    config = load_config(srv.env(provider, api_key=SECRET))
    return make_adapter(config, retry=RetryPolicy(sleep=sleeps, rand=lambda: 0.0), timeouts=timeouts)


PARAMS = ChatParams(model="fake-model", messages=[ChatMessage(role="user", content="hello")])


async def run(adapter: ProviderAdapter, *, stream: bool) -> tuple[str, ProviderError | None]:
    """What the user saw (streamed text) and the error that ended the turn, if any."""
    seen = ""
    try:
        if stream:
            async for delta in adapter.stream(PARAMS):
                if isinstance(delta, TextDelta):
                    seen += delta.text
                if isinstance(delta, StreamDone):
                    assert delta.response.content == seen
        else:
            seen = (await adapter.chat(PARAMS)).content or ""
    except ProviderError as exc:
        return seen, exc
    finally:
        await adapter.aclose()
    return seen, None


def assert_no_secret(error: BaseException) -> None:
    for text in (str(error), repr(error), getattr(error, "message", "")):
        assert SECRET not in text


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "chat"])
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("fault", "error_type", "hint"),
    [
        ("401", AuthenticationError, "LLM_API_KEY"),
        ("403", PermissionDeniedError, "LLM_API_KEY"),
        ("404", NotFoundError, "LLM_MODEL"),
    ],
)
async def test_client_errors_are_typed_and_not_retried(
    fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str, stream: bool, fault: str, error_type: type, hint: str
) -> None:
    fake_llm.push(Reply.fault(fault, message=f"server says no ({fault}) to {SECRET}"))
    _, error = await run(adapter_for(fake_llm, provider, sleeps), stream=stream)
    assert isinstance(error, error_type)
    assert error.status == int(fault)
    assert f"server says no ({fault})" in str(error)
    assert hint in str(error)
    assert_no_secret(error)
    assert len(fake_llm.requests) == 1 and sleeps.waits == []


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", ["500", "503"])
async def test_server_errors_are_retried_twice_then_raised(
    fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str, fault: str
) -> None:
    fake_llm.push(*[Reply.fault(fault)] * 3)
    _, error = await run(adapter_for(fake_llm, provider, sleeps), stream=True)
    assert isinstance(error, ServerError) and error.status == int(fault)
    assert "Try again later" in str(error)
    assert len(fake_llm.requests) == 3
    assert sleeps.waits == [0.5, 1.0]
    assert_no_secret(error)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_server_error_then_success(fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str) -> None:
    fake_llm.push(Reply.fault("503"), Reply.text("recovered"))
    text, error = await run(adapter_for(fake_llm, provider, sleeps), stream=True)
    assert error is None and text == "recovered"
    assert len(fake_llm.requests) == 2 and sleeps.waits == [0.5]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_honours_retry_after_then_succeeds(fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str) -> None:
    fake_llm.push(Reply.fault("429", retry_after=1.5), Reply.fault("429", retry_after=9, retry_after_ms=250), "ok")
    text, error = await run(adapter_for(fake_llm, provider, sleeps), stream=True)
    assert error is None and text == "ok"
    assert sleeps.waits == [1.5, 0.25]
    assert len(fake_llm.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_exhausted(fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str) -> None:
    fake_llm.push(*[Reply.fault("429", retry_after=2)] * 3)
    _, error = await run(adapter_for(fake_llm, provider, sleeps), stream=False)
    assert isinstance(error, RateLimitError) and error.status == 429
    assert error.retry_after == 2
    assert "Rate limited" in str(error) and "Rate limit reached" in str(error)
    assert sleeps.waits == [2, 2] and len(fake_llm.requests) == 3


async def test_retry_after_beyond_cap_is_not_waited(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(Reply.fault("429", retry_after=3600))
    _, error = await run(adapter_for(fake_llm, "openai-compatible", sleeps), stream=True)
    assert isinstance(error, RateLimitError)
    assert "3600" in str(error)
    assert sleeps.waits == [] and len(fake_llm.requests) == 1


async def test_real_sleep_is_used_by_default(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Reply.fault("429", retry_after_ms=50), "after a short wait")
    adapter = make_adapter(load_config(fake_llm.env(api_key=SECRET)))
    start = time.monotonic()
    assert (await adapter.chat(PARAMS)).content == "after a short wait"
    assert time.monotonic() - start >= 0.05
    await adapter.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_reset_mid_stream_is_an_error_and_not_retried(
    fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str
) -> None:
    fake_llm.push(Reply.fault("reset", text=LONG_TEXT), "a retry would wrongly see this")
    seen, error = await run(adapter_for(fake_llm, provider, sleeps), stream=True)
    assert isinstance(error, StreamError) and error.in_stream
    assert "incomplete" in str(error)
    assert LONG_TEXT.startswith(seen) and seen != LONG_TEXT
    assert len(fake_llm.requests) == 1 and sleeps.waits == []
    assert_no_secret(error)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_reset_of_a_non_streamed_body(fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str) -> None:
    fake_llm.push(Reply.fault("reset"))
    _, error = await run(adapter_for(fake_llm, provider, sleeps), stream=False)
    assert isinstance(error, StreamError)
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "chat"])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_malformed_event_is_typed(fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str, stream: bool) -> None:
    fake_llm.push(Reply.fault("malformed_sse", text=LONG_TEXT))
    _, error = await run(adapter_for(fake_llm, provider, sleeps), stream=stream)
    assert isinstance(error, MalformedResponseError)
    assert "not valid JSON" in str(error) and "LLM_BASE_URL" in str(error)
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_in_band_error_event_in_a_200_stream(fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str) -> None:
    fake_llm.push(Reply.fault("stream_error", text=LONG_TEXT, message="upstream exploded"))
    seen, error = await run(adapter_for(fake_llm, provider, sleeps), stream=True)
    assert isinstance(error, StreamError)
    assert error.status == 200 and error.in_stream
    assert "upstream exploded" in str(error)
    assert seen and error.partial is not None and error.partial.content == seen
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_slow_first_byte_times_out(fake_llm: FakeLLMServer, sleeps: Sleeps, provider: str) -> None:
    fake_llm.push(Reply.fault("slow_first_byte", delay=3))
    adapter = adapter_for(fake_llm, provider, sleeps, timeouts=Timeouts(read=0.2))
    start = time.monotonic()
    _, error = await run(adapter, stream=True)
    assert isinstance(error, ProviderTimeoutError)
    assert "did not answer in time" in str(error)
    assert time.monotonic() - start < 2
    assert len(fake_llm.requests) == 1


async def test_chunk_delay_within_timeout_is_fine(sleeps: Sleeps) -> None:
    with FakeLLMServer(chunk_delay=0.02) as srv:
        srv.push(Reply.text("slow but steady", chunks=3))
        text, error = await run(adapter_for(srv, "anthropic", sleeps, timeouts=Timeouts(read=1)), stream=True)
    assert error is None and text == "slow but steady"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_connection_refused_is_retried_then_typed(sleeps: Sleeps, provider: str) -> None:
    srv = FakeLLMServer().start()
    env = srv.env(provider, api_key=SECRET)
    srv.stop()
    adapter = make_adapter(load_config(env), retry=RetryPolicy(sleep=sleeps, rand=lambda: 0.0))
    _, error = await run(adapter, stream=True)
    assert isinstance(error, ProviderConnectionError)
    assert "LLM_BASE_URL" in str(error) and "127.0.0.1" in str(error)
    assert sleeps.waits == [0.5, 1.0]
    assert_no_secret(error)


async def test_a_200_body_that_is_not_an_llm_api(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(Reply.raw("<html>hello</html>", content_type="text/html"))
    _, error = await run(adapter_for(fake_llm, "openai-compatible", sleeps), stream=True)
    assert isinstance(error, MalformedResponseError)
    assert "<html>" in str(error)


async def test_error_body_without_json_is_quoted(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(Reply.raw("Bad Gateway from nginx", status=502, content_type="text/plain"), "fine")
    text, error = await run(adapter_for(fake_llm, "openai-compatible", sleeps), stream=True)
    assert error is None and text == "fine"
    fake_llm.push(*[Reply.raw("Bad Gateway from nginx", status=502, content_type="text/plain")] * 3)
    _, error = await run(adapter_for(fake_llm, "openai-compatible", sleeps), stream=True)
    assert isinstance(error, ServerError) and "Bad Gateway from nginx" in str(error)


async def test_collect_matches_chat(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push("same answer", "same answer")
    adapter = adapter_for(fake_llm, "openai-compatible", sleeps)
    streamed = await collect(adapter.stream(PARAMS))
    whole = await adapter.chat(PARAMS)
    await adapter.aclose()
    assert streamed.content == whole.content == "same answer"


def _retry_after_cases() -> list[Any]:
    return [({"retry-after": "2"}, 2.0), ({"retry-after-ms": "1500"}, 1.5), ({"retry-after": "soon"}, None), ({}, None)]


@pytest.mark.parametrize(("headers", "expected"), _retry_after_cases())
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    from agentik_jupyter.providers._http import parse_retry_after

    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date() -> None:
    from agentik_jupyter.providers._http import parse_retry_after

    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
