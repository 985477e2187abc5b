"""Property-based fuzzing of what reads a provider's answer: no input crashes, only typed errors.

The SSE parser and both assemblers get random byte streams, random event sequences built
from the real wire vocabulary, and random tool-argument text (deep nesting included); the
argument validator gets random values for random declarations. Every outcome is either a
finished response or a `ProviderError` the turn can show; nothing else may escape.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentik_jupyter.errors import ProviderError
from agentik_jupyter.providers._anthropic_assembly import MessageAccumulator, message_as_events
from agentik_jupyter.providers._convert import parse_arguments
from agentik_jupyter.providers._openai_assembly import ChatCompletionAccumulator, completion_as_chunk
from agentik_jupyter.providers._read_ahead import read_ahead
from agentik_jupyter.providers.anthropic import AnthropicAdapter, AnthropicStream
from agentik_jupyter.providers.base import StreamDone
from agentik_jupyter.providers.openai_compatible import OpenAICompatibleAdapter, OpenAIStream
from agentik_jupyter.tools.validation import validate_arguments
from agentik_jupyter.types import ToolParameter

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)

OPENAI_PIECES = [
    {"choices": [{"index": 0, "delta": {"content": "hi "}}]},
    {"choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}}]},
    {
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}]},
            }
        ]
    },
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a": '}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "[[[["}}]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}},
    {"error": {"message": "boom"}},
]
ANTHROPIC_PIECES = [
    {"type": "message_start", "message": {"content": [], "usage": {"input_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
    },
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"a": ['}},
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
    {"type": "message_stop"},
    {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
]


def frames(events: list[Any], extra: list[bytes]) -> bytes:
    out = b""
    for n, event in enumerate(events):
        kind = event.get("type") if isinstance(event, dict) else None
        head = f"event: {kind}\n".encode() if isinstance(kind, str) and "\n" not in kind else b""
        out += head + b"data: " + json.dumps(event).encode() + b"\n\n"
        if n < len(extra):
            out += extra[n]
    return out


def run_adapter(adapter: Any, body: bytes) -> None:
    """Feed `body` as an event stream through the adapter's real parser and assembler."""

    async def go() -> None:
        request = httpx2.Request("POST", "http://127.0.0.1:1/v1")
        response = httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body, request=request)
        assembly = AnthropicStream(MessageAccumulator()) if isinstance(adapter, AnthropicAdapter) else OpenAIStream()
        deltas = read_ahead(response, adapter.url, assembly)
        last = None
        async for delta in deltas:
            last = delta
        if isinstance(adapter, OpenAICompatibleAdapter):
            assert isinstance(last, StreamDone)

    try:
        asyncio.run(go())
    except ProviderError:
        pass


ADAPTERS = [
    OpenAICompatibleAdapter(api_key="k", base_url="http://127.0.0.1:1/v1"),
    AnthropicAdapter(api_key="k", base_url="http://127.0.0.1:1"),
]

noise = st.lists(
    st.sampled_from(
        [
            b"",
            b"\n",
            b"\r\n",
            b": ping\n\n",
            b"data: [DONE]\n\n",
            b"data: {\n\n",
            b"event: error\n",
            b"data:\n\n",
            b"retry: 10\n",
            b"\xff\xfe",
            b"data: null\n\n",
            b"data: 42\n\n",
            b'data: "x"\n\n',
        ]
    ),
    max_size=6,
)


@FUZZ
@given(raw=st.binary(max_size=400), which=st.sampled_from([0, 1]))
def test_random_bytes_never_crash_the_sse_parser(raw: bytes, which: int) -> None:
    run_adapter(ADAPTERS[which], raw)


@FUZZ
@given(events=st.lists(st.sampled_from(OPENAI_PIECES) | json_values, max_size=12), extra=noise)
def test_openai_event_sequences_give_a_response_or_a_typed_error(events: list[Any], extra: list[bytes]) -> None:
    run_adapter(ADAPTERS[0], frames(events, extra))


@FUZZ
@given(events=st.lists(st.sampled_from(ANTHROPIC_PIECES) | json_values, max_size=12), extra=noise)
def test_anthropic_event_sequences_give_a_response_or_a_typed_error(events: list[Any], extra: list[bytes]) -> None:
    run_adapter(ADAPTERS[1], frames(events, extra))


@FUZZ
@given(chunks=st.lists(json_values, max_size=10))
def test_assemblers_take_any_json(chunks: list[Any]) -> None:
    for acc in (ChatCompletionAccumulator(), MessageAccumulator()):
        try:
            for chunk in chunks:
                acc.feed(chunk)
            acc.snapshot()
        except ProviderError:
            pass


argument_text = st.one_of(
    st.text(max_size=200),
    json_values.map(json.dumps),
    st.integers(min_value=1, max_value=20_000).map(lambda n: "[" * n + "]" * n),
    st.integers(min_value=1, max_value=20_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(min_value=1, max_value=5_000).map(lambda n: json.dumps(json.dumps({"a": [[[]]]})) * (n % 3 + 1)),
)


@FUZZ
@given(raw=argument_text)
def test_tool_arguments_parse_to_an_object_or_a_parse_error(raw: str) -> None:
    args, error = parse_arguments(raw)
    assert isinstance(args, dict)
    assert (error is None) or (args == {} and isinstance(error, str))
    if error is None:
        json.dumps(args)  # what reaches the rest of the turn can be written and sent


def test_deep_arguments_are_a_parse_error_naming_the_limit() -> None:
    args, error = parse_arguments("[" * 100_000 + "]" * 100_000)
    assert args == {} and error is not None and "at most 64" in error


parameters = st.lists(
    st.builds(
        ToolParameter,
        key=st.sampled_from(["a", "b", "name", "n"]),
        type=st.sampled_from(["string", "integer", "number", "boolean", "array", "object"]),
        required=st.booleans(),
        enum=st.none() | st.lists(json_values, max_size=3),
        json_schema=st.none() | st.dictionaries(st.sampled_from(["type", "anyOf", "oneOf"]), json_values, max_size=2),
    ),
    max_size=4,
)


@FUZZ
@given(args=json_values, declared=parameters)
def test_the_validator_reports_problems_as_text(args: Any, declared: list[ToolParameter]) -> None:
    problems = validate_arguments(args, declared)
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)


@pytest.mark.parametrize("depth", [500, 5000])
def test_the_validator_survives_values_it_cannot_repr(depth: int) -> None:
    value: Any = []
    for _ in range(depth):
        value = [value]
    problems = validate_arguments({"a": value}, [ToolParameter(key="a", type="string")])
    assert len(problems) == 1 and "must be a string" in problems[0]


ODD_SHAPES: list[Any] = [
    {"choices": True},
    {"choices": "x"},
    {"choices": {"0": {}}},
    {"choices": [{"delta": {"tool_calls": True}}]},
    {"choices": [{"delta": {"tool_calls": "x"}}]},
    {"choices": [{"message": True}]},
    {"type": "message_start", "message": True},
    {"type": "message_start", "message": {"content": True}},
    {"type": "message_start", "message": {"content": "x", "usage": 3}},
]


@pytest.mark.parametrize("chunk", ODD_SHAPES, ids=[json.dumps(c) for c in ODD_SHAPES])
def test_fields_of_the_wrong_type_are_no_content_not_a_crash(chunk: Any) -> None:
    """Found by the fuzzer (`"choices": true`): a list field that is not a list holds nothing."""
    for acc in (ChatCompletionAccumulator(), MessageAccumulator()):
        acc.feed(chunk)
        acc.snapshot()
    completion_as_chunk(chunk)
    message_as_events({**chunk, "content": chunk.get("choices")})
