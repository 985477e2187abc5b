"""Wire quirks from DESIGN.md that the recorded corpus does not cover, served over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentik_jupyter.errors import StreamError
from agentik_jupyter.providers.base import ChatParams, ProviderChatResponse, collect
from agentik_jupyter.providers.config import load_config, make_adapter
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.types import ChatMessage

PARAMS = ChatParams(model="m", messages=[ChatMessage(role="user", content="hi")])


def sse(*chunks: Any, done: bool = True) -> str:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    return body + ("data: [DONE]\n\n" if done else "")


def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def call(
    index: int | None = None, id: str | None = None, name: str | None = None, args: Any = "<absent>"
) -> dict[str, Any]:
    tc: dict[str, Any] = {"function": {}}
    if index is not None:
        tc["index"] = index
    if id is not None:
        tc["id"] = id
    if name is not None:
        tc["function"]["name"] = name
    if args != "<absent>":
        tc["function"]["arguments"] = args
    return delta({"tool_calls": [tc]})


async def openai_stream(srv: FakeLLMServer, body: str) -> ProviderChatResponse:
    srv.push(Reply.raw(body))
    adapter = make_adapter(load_config(srv.env(api_key="k-quirks")))
    try:
        return await collect(adapter.stream(PARAMS))
    finally:
        await adapter.aclose()


def calls(response: ProviderChatResponse) -> list[tuple[str, str, dict[str, Any]]]:
    return [(c.id, c.name, c.args) for c in response.tool_calls]


async def test_ollama_index_zero_for_every_call(fake_llm: FakeLLMServer) -> None:
    body = sse(
        call(0, "call_a", "first", '{"x": 1}'),
        call(0, "call_b", "second", '{"y": 2}'),
        delta({}, "stop"),
    )
    response = await openai_stream(fake_llm, body)
    assert calls(response) == [("call_a", "first", {"x": 1}), ("call_b", "second", {"y": 2})]
    assert response.finish_reason == "stop"


async def test_vllm_missing_or_empty_id_and_resent_name(fake_llm: FakeLLMServer) -> None:
    body = sse(
        call(0, "", "lookup", ""),
        call(0, None, "lookup", '{"q": '),
        call(0, None, None, '"cats"}'),
        call(1, None, "other", None),
    )
    response = await openai_stream(fake_llm, body)
    assert calls(response) == [("", "lookup", {"q": "cats"}), ("", "other", {})]


async def test_missing_index_new_id_starts_a_new_call(fake_llm: FakeLLMServer) -> None:
    body = sse(
        call(None, "c1", "a", '{"n":'),
        call(None, None, None, "1}"),
        call(None, "c2", "b", "{}"),
        call(None, "c2", None, ""),
    )
    assert calls(await openai_stream(fake_llm, body)) == [("c1", "a", {"n": 1}), ("c2", "b", {})]


@pytest.mark.parametrize("args", ["", "{}", None, "null"])
async def test_no_argument_tools(fake_llm: FakeLLMServer, args: Any) -> None:
    response = await openai_stream(fake_llm, sse(call(0, "c", "now", args)))
    assert calls(response) == [("c", "now", {})] and response.tool_calls[0].parse_error is None


async def test_invalid_json_arguments_keep_raw_and_report(fake_llm: FakeLLMServer) -> None:
    response = await openai_stream(fake_llm, sse(call(0, "c", "f", '{"a": tru')))
    tool_call = response.tool_calls[0]
    assert tool_call.args == {} and tool_call.arguments_raw == '{"a": tru'
    assert tool_call.parse_error and "not valid JSON" in tool_call.parse_error


async def test_non_object_arguments_are_reported(fake_llm: FakeLLMServer) -> None:
    response = await openai_stream(fake_llm, sse(call(0, "c", "f", "[1, 2]")))
    assert response.tool_calls[0].parse_error == "arguments must be a JSON object, got list"


async def test_reasoning_never_leaks_into_content(fake_llm: FakeLLMServer) -> None:
    body = sse(
        delta({"reasoning_content": "think "}), delta({"reasoning": "more"}), delta({"content": "answer"}, "stop")
    )
    response = await openai_stream(fake_llm, body)
    assert (response.content, response.reasoning, response.reasoning_field) == (
        "answer",
        "think more",
        "reasoning_content",
    )


async def test_stream_without_done_and_crlf_lines(fake_llm: FakeLLMServer) -> None:
    body = sse(delta({"content": "a"}), delta({"content": "b"}, "stop"), done=False).replace("\n", "\r\n")
    assert (await openai_stream(fake_llm, body)).content == "ab"


async def test_anthropic_overloaded_error_event_in_a_200_stream(fake_llm: FakeLLMServer) -> None:
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half an ans"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    fake_llm.push(Reply.raw("".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)))
    adapter = make_adapter(load_config(fake_llm.env("anthropic", api_key="k-quirks")))
    with pytest.raises(StreamError) as info:
        await collect(adapter.stream(PARAMS))
    await adapter.aclose()
    assert "Overloaded" in str(info.value) and info.value.status == 200 and info.value.in_stream
    assert info.value.error_type == "overloaded_error"
    assert info.value.partial.content == "Half an ans"


async def test_anthropic_stream_cut_before_message_stop(fake_llm: FakeLLMServer) -> None:
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}},
    ]
    fake_llm.push(Reply.raw("".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)))
    adapter = make_adapter(load_config(fake_llm.env("anthropic", api_key="k-quirks")))
    with pytest.raises(StreamError, match="incomplete"):
        await collect(adapter.stream(PARAMS))
    await adapter.aclose()


async def test_server_that_ignores_stream_true(fake_llm: FakeLLMServer) -> None:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}]}
    fake_llm.push(Reply.raw(json.dumps(body), content_type="application/json"))
    adapter = make_adapter(load_config(fake_llm.env(api_key="k-quirks")))
    assert (await collect(adapter.stream(PARAMS))).content == "whole"
    await adapter.aclose()
