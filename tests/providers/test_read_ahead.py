"""Reading ahead: what arrived together is handed over as one delta, a slow stream token by token.

Both adapters against the fake provider over real HTTP on 127.0.0.1: a body that arrives in
one write reaches the consumer as a few merged deltas with the exact text; chunks that arrive
apart reach it apart (nothing is held back to be merged); a stream error comes after the text
before it; Stop (cancelling the consumer) hangs up on the provider and leaves no task behind.
"""

from __future__ import annotations

import asyncio
import gzip
import time

import httpx2
import pytest

from agentik_jupyter.errors import StreamError
from agentik_jupyter.providers._read_ahead import merge
from agentik_jupyter.providers.base import (
    ChatParams,
    ProviderAdapter,
    ReasoningDelta,
    StreamDone,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    collect,
)
from agentik_jupyter.providers.config import load_config, make_adapter
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing import _wire as W
from agentik_jupyter.types import ChatMessage

PROVIDERS = ["openai-compatible", "anthropic"]
PARAMS = ChatParams(model="fake-model", messages=[ChatMessage(role="user", content="hello")])
ANSWER = "".join(f"word{i} " for i in range(1_000))


def adapter_for(server: FakeLLMServer, provider: str) -> ProviderAdapter:
    return make_adapter(load_config(server.env(provider)))


def one_write(provider: str, reply: Reply) -> Reply:
    """The whole stream as one body, written at once: it arrives in as few reads as the OS likes."""
    ids = iter(range(10**6))
    new_id = lambda prefix: f"{prefix}{next(ids)}"  # noqa: E731
    if provider == "anthropic":
        frames = W.anthropic_stream(reply, model="fake-model", prompt=3, new_id=new_id)
    else:
        frames = W.openai_stream(reply, model="fake-model", prompt=3, include_usage=True, new_id=new_id)
    return Reply.raw(b"".join(frames))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_what_arrived_together_is_one_delta(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.push(one_write(provider, Reply.text(ANSWER, chunks=1_000)))
    deltas = [d async for d in adapter_for(fake_llm, provider).stream(PARAMS)]
    texts = [d.text for d in deltas if isinstance(d, TextDelta)]
    assert "".join(texts) == ANSWER
    assert len(texts) <= 20, f"1,000 chunks read together came as {len(texts)} deltas"
    assert isinstance(deltas[-1], StreamDone) and deltas[-1].response.content == ANSWER


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_slow_stream_still_arrives_token_by_token(provider: str) -> None:
    with FakeLLMServer(chunk_delay=0.1) as server:
        reply = Reply.text("one two three four five six", chunks=6)
        server.push(reply)
        arrivals: list[tuple[float, str]] = []
        async for delta in adapter_for(server, provider).stream(PARAMS):
            if isinstance(delta, TextDelta):
                arrivals.append((time.monotonic(), delta.text))
    assert [text for _, text in arrivals] == reply.pieces() and len(arrivals) == 6
    gaps = [b - a for (a, _), (b, _) in zip(arrivals, arrivals[1:])]
    assert min(gaps) > 0.05, f"each token was handed over when it came, not held back: {gaps}"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_error_comes_after_the_text_before_it(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.push(Reply.fault("stream_error", message="overloaded mid-answer"))
    texts: list[str] = []
    with pytest.raises(StreamError, match="overloaded mid-answer") as caught:
        async for delta in adapter_for(fake_llm, provider).stream(PARAMS):
            if isinstance(delta, TextDelta):
                texts.append(delta.text)
    assert texts and caught.value.partial is not None
    assert caught.value.partial.content == "".join(texts)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_stop_hangs_up_and_leaves_no_task(provider: str) -> None:
    with FakeLLMServer(chunk_delay=0.05) as server:
        server.push(Reply.text(ANSWER, chunks=200))
        first = asyncio.Event()

        async def consume() -> None:
            async for delta in adapter_for(server, provider).stream(PARAMS):
                if isinstance(delta, TextDelta):
                    first.set()

        before = asyncio.all_tasks()
        task = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert asyncio.all_tasks() == before, "the reading task went with the turn"
        deadline = time.monotonic() + 5
        while not server.hangups and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert server.hangups, "the provider saw the connection close"


def test_merge_joins_neighbours_of_one_kind_and_keeps_the_order() -> None:
    batch = [
        TextDelta(text="a"),
        TextDelta(text="b"),
        ReasoningDelta(text="r1"),
        ReasoningDelta(text="r2"),
        TextDelta(text="c"),
        ToolCallStart(index=0, id="c0", name="f"),
        ToolCallArgsDelta(index=0, text='{"x"'),
        ToolCallArgsDelta(index=0, text=": 1}"),
        ToolCallArgsDelta(index=1, text="{}"),
    ]
    assert merge(batch) == [
        TextDelta(text="ab"),
        ReasoningDelta(text="r1r2"),
        TextDelta(text="c"),
        ToolCallStart(index=0, id="c0", name="f"),
        ToolCallArgsDelta(index=0, text='{"x": 1}'),
        ToolCallArgsDelta(index=1, text="{}"),
    ]
    assert merge([TextDelta(text="only")]) == [TextDelta(text="only")]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_that_says_it_is_over_ends_the_answer_though_the_body_goes_on(provider: str) -> None:
    """A server that keeps the response open after its last event (`[DONE]`, `message_stop`):
    the answer ends there, without waiting for a body end that never comes."""
    ids = iter(range(10**6))
    new_id = lambda prefix: f"{prefix}{next(ids)}"  # noqa: E731
    reply = Reply.text(ANSWER, chunks=300)
    if provider == "anthropic":
        frames = W.anthropic_stream(reply, model="fake-model", prompt=3, new_id=new_id)
    else:
        frames = W.openai_stream(reply, model="fake-model", prompt=3, include_usage=True, new_id=new_id)
    held: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
        )
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for frame in frames:
            writer.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        await writer.drain()
        held.append(writer)  # no last chunk: the body never ends

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with FakeLLMServer() as fake:  # (only for its environment's shape)
            env = fake.env(provider)
        base = f"http://127.0.0.1:{port}" + ("" if provider == "anthropic" else "/v1")
        env[next(k for k in env if k.endswith("BASE_URL"))] = base
        adapter = make_adapter(load_config(env))
        deltas = await asyncio.wait_for(_collect(adapter), 10)
        assert isinstance(deltas[-1], StreamDone) and deltas[-1].response.content == ANSWER
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def _collect(adapter: ProviderAdapter) -> list[object]:
    return [d async for d in adapter.stream(PARAMS)]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_gzip_encoded_stream_is_read_decoded(fake_llm: FakeLLMServer, provider: str) -> None:
    """A server that compresses its event stream (the client offers gzip) is read through the
    decoder; only a body that comes as it is is read from its raw chunks."""
    body = one_write(provider, Reply.text(ANSWER, chunks=50)).raw_body or b""
    handler = lambda request: httpx2.Response(  # noqa: E731
        200, headers={"content-type": "text/event-stream", "content-encoding": "gzip"}, content=gzip.compress(body)
    )
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    adapter = make_adapter(load_config(fake_llm.env(provider)), client=client)
    response = await collect(adapter.stream(PARAMS))
    assert response.content == ANSWER
    await client.aclose()
