"""What the adapters put on the wire: bodies, headers, tool schemas, history conversion."""

from __future__ import annotations

import json

import httpx2
import pytest

from agentik_jupyter.providers._http import json_request
from agentik_jupyter.providers.base import ChatParams, collect
from agentik_jupyter.providers.config import load_config, make_adapter
from agentik_jupyter.providers.openai_compatible import OpenAICompatibleAdapter
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.types import ChatMessage, ImagePart, ToolCall, ToolParameter, ToolResult, ToolSchema

SECRET = "sk-live-SECRET-77aa-request-test"

TOOL = ToolSchema(
    name="describe",
    description="Describe a DataFrame",
    parameters=[
        ToolParameter(key="name", type="string", description="variable name"),
        ToolParameter(key="mode", type="string", required=False, enum=["short", "full"]),
        ToolParameter(key="columns", type="array", required=False),
        ToolParameter(
            key="range",
            type="object",
            required=False,
            description="row range",
            json_schema={"type": "object", "properties": {"start": {"type": "integer"}}},
        ),
    ],
)
TOOL_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "variable name"},
        "mode": {"type": "string", "enum": ["short", "full"]},
        "columns": {"type": "array", "items": {}},
        "range": {"type": "object", "properties": {"start": {"type": "integer"}}, "description": "row range"},
    },
    "required": ["name"],
}

HISTORY = [
    ChatMessage(role="user", content="Describe df and df2"),
    ChatMessage(
        role="assistant",
        content="Looking.",
        tool_calls=[
            ToolCall(id="c1", name="describe", args={"name": "df"}),
            ToolCall(id="c2", name="describe", args={"name": "df2"}),
        ],
    ),
    ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name="describe", result={"rows": 3})),
    ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c2", name="describe", error="NameError: df2")),
    ChatMessage(role="assistant", content="df has 3 rows; df2 does not exist."),
    ChatMessage(role="user", content="Thanks"),
]


async def send(srv: FakeLLMServer, provider: str, params: ChatParams, *, stream: bool = True, **env: str) -> None:
    adapter = make_adapter(load_config({**srv.env(provider, api_key=SECRET), **env}))
    if stream:
        await collect(adapter.stream(params))
    else:
        await adapter.chat(params)
    await adapter.aclose()


def params(
    messages: list[ChatMessage] | None = None, tools: list[ToolSchema] | None = None, system: str = ""
) -> ChatParams:
    return ChatParams(
        model="fake-model",
        messages=messages or [ChatMessage(role="user", content="hi")],
        tool_schemas=tools or [],
        system_prompt=system,
    )


async def test_openai_stream_body_without_tools(fake_llm: FakeLLMServer) -> None:
    await send(fake_llm, "openai-compatible", params())
    request = fake_llm.requests[-1]
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_openai_usage_option_can_be_disabled(fake_llm: FakeLLMServer) -> None:
    await send(fake_llm, "openai-compatible", params(), LLM_STREAM_USAGE="0")
    assert "stream_options" not in fake_llm.requests[-1].body
    await send(fake_llm, "openai-compatible", params(), stream=False)
    assert fake_llm.requests[-1].body["stream"] is False
    assert "stream_options" not in fake_llm.requests[-1].body


async def test_usage_arrives_when_requested(fake_llm: FakeLLMServer) -> None:
    adapter = make_adapter(load_config(fake_llm.env(api_key=SECRET)))
    response = await collect(adapter.stream(params()))
    await adapter.aclose()
    assert response.usage is not None and response.usage.output_tokens == 2


async def test_openai_tools_and_history(fake_llm: FakeLLMServer) -> None:
    await send(fake_llm, "openai-compatible", params(HISTORY, [TOOL], system="You are in a notebook."))
    body = fake_llm.requests[-1].body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "describe", "description": "Describe a DataFrame", "parameters": TOOL_INPUT_SCHEMA},
        }
    ]
    assert "tool_choice" not in body
    assert body["messages"] == [
        {"role": "system", "content": "You are in a notebook."},
        {"role": "user", "content": "Describe df and df2"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "describe", "arguments": '{"name": "df"}'}},
                {"id": "c2", "type": "function", "function": {"name": "describe", "arguments": '{"name": "df2"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"rows": 3}'},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: NameError: df2"},
        {"role": "assistant", "content": "df has 3 rows; df2 does not exist."},
        {"role": "user", "content": "Thanks"},
    ]


async def test_openai_assistant_with_only_tool_calls_sends_null_content(fake_llm: FakeLLMServer) -> None:
    history = [
        ChatMessage(role="user", content="go"),
        ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="describe", args={})]),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name="describe", result="plain text")),
    ]
    await send(fake_llm, "openai-compatible", params(history))
    messages = fake_llm.requests[-1].body["messages"]
    assert messages[1]["content"] is None and messages[1]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert messages[2]["content"] == "plain text"


async def test_anthropic_body_tools_and_history(fake_llm: FakeLLMServer) -> None:
    await send(fake_llm, "anthropic", params(HISTORY, [TOOL], system="You are in a notebook."), LLM_CACHE_CONTROL="0")
    request = fake_llm.requests[-1]
    assert request.path == "/v1/messages"
    body = request.body
    assert body["system"] == "You are in a notebook."
    assert body["max_tokens"] == 4096 and body["stream"] is True and body["model"] == "fake-model"
    assert body["tools"] == [
        {"name": "describe", "description": "Describe a DataFrame", "input_schema": TOOL_INPUT_SCHEMA}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Describe df and df2"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "c1", "name": "describe", "input": {"name": "df"}},
                {"type": "tool_use", "id": "c2", "name": "describe", "input": {"name": "df2"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": '{"rows": 3}'},
                {"type": "tool_result", "tool_use_id": "c2", "content": "Error: NameError: df2", "is_error": True},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "df has 3 rows; df2 does not exist."}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
    ]


async def test_anthropic_thinking_blocks_are_sent_back(fake_llm: FakeLLMServer) -> None:
    """A turn with thinking + tool_use must be replayed with its signed thinking block."""
    fake_llm.push(Reply.tool_calls([{"name": "describe", "args": {"name": "df"}}], reasoning="Need the shape."))
    adapter = make_adapter(load_config(fake_llm.env("anthropic", api_key=SECRET)))
    first = await collect(adapter.stream(params([ChatMessage(role="user", content="shape?")], [TOOL])))
    call = first.tool_calls[0]
    history = [
        ChatMessage(role="user", content="shape?"),
        ChatMessage(
            role="assistant",
            content=first.content or "",
            tool_calls=[ToolCall(id=call.id, name=call.name, args=call.args)],
            reasoning=first.reasoning,
            provider_blocks=first.content_blocks,
        ),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=call.id, name=call.name, result="(3, 2)")),
        ChatMessage(role="user", content="and now?"),
    ]
    await collect(adapter.stream(params(history, [TOOL])))
    await adapter.aclose()
    messages = fake_llm.requests[-1].body["messages"]
    assert messages[1]["content"] == [
        {"type": "thinking", "thinking": "Need the shape.", "signature": "fake-signature"},
        {"type": "tool_use", "id": call.id, "name": "describe", "input": {"name": "df"}},
    ]
    assert messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call.id, "content": "(3, 2)"},
            {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}},
        ],
    }


async def test_anthropic_marks_tools_system_and_the_newest_message_for_the_prompt_cache(
    fake_llm: FakeLLMServer,
) -> None:
    await send(fake_llm, "anthropic", params(HISTORY, [TOOL, TOOL.model_copy(update={"name": "other"})], system="Sys."))
    body = fake_llm.requests[-1].body
    mark = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "Sys.", "cache_control": mark}]
    assert "cache_control" not in body["tools"][0] and body["tools"][1]["cache_control"] == mark
    assert body["messages"][-1]["content"][-1] == {"type": "text", "text": "Thanks", "cache_control": mark}
    marks = json.dumps(body).count('"cache_control"')
    assert marks == 3  # Anthropic allows at most 4
    cached_history = json.dumps(body["messages"][:-1])
    assert "cache_control" not in cached_history


@pytest.mark.parametrize("value", ["1", "0"])
async def test_openai_sends_a_prompt_cache_key_per_session_unless_switched_off(
    fake_llm: FakeLLMServer, value: str
) -> None:
    keyed = params(HISTORY, [TOOL]).model_copy(update={"cache_key": "agentik-conv_1"})
    await send(fake_llm, "openai-compatible", keyed, LLM_PROMPT_CACHE_KEY=value)
    body = fake_llm.requests[-1].body
    assert body.get("prompt_cache_key") == ("agentik-conv_1" if value == "1" else None)
    await send(fake_llm, "openai-compatible", params(HISTORY, [TOOL]))
    assert "prompt_cache_key" not in fake_llm.requests[-1].body  # no session, no key


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
async def test_cached_tokens_are_read_from_usage(fake_llm: FakeLLMServer, provider: str) -> None:
    long = [ChatMessage(role="user", content="word " * 6_000)]
    adapter = make_adapter(load_config(fake_llm.env(provider, api_key=SECRET)))
    fake_llm.push(Reply.text("one"), Reply.text("two"))
    first = await collect(adapter.stream(params(long, [TOOL], system="Sys.")))
    again = [*long, ChatMessage(role="assistant", content="one"), ChatMessage(role="user", content="more")]
    second = await collect(adapter.stream(params(again, [TOOL], system="Sys.")))
    await adapter.aclose()
    assert first.usage is not None and second.usage is not None
    assert not first.usage.cached_tokens
    assert second.usage.cached_tokens and second.usage.cached_tokens > 0.9 * first.usage.input_tokens
    assert second.usage.input_tokens >= second.usage.cached_tokens  # every input token, the cached included
    if provider == "anthropic":
        assert first.usage.cache_write_tokens and first.usage.cache_write_tokens > 0.9 * first.usage.input_tokens


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
async def test_key_is_only_in_the_auth_header(fake_llm: FakeLLMServer, provider: str) -> None:
    await send(fake_llm, provider, params(HISTORY, [TOOL]))
    request = fake_llm.requests[-1]
    auth_header = "authorization" if provider == "openai-compatible" else "x-api-key"
    holders = [name for name, value in request.headers.items() if SECRET in value]
    assert holders == [auth_header]
    assert SECRET not in json.dumps(request.body) and SECRET not in request.path
    if provider == "openai-compatible":
        assert request.headers["authorization"] == f"Bearer {SECRET}"
    else:
        assert request.headers["x-api-key"] == SECRET
        assert request.headers["anthropic-version"] == "2023-06-01"


async def test_base_url_with_query_and_full_path(fake_llm: FakeLLMServer) -> None:
    """Azure-style `?api-version=` survives; a base URL already ending in the path is not doubled."""
    for base in (f"{fake_llm.base_url}?api-version=2024-10-21", f"{fake_llm.base_url}/chat/completions"):
        env = {**fake_llm.env(api_key=SECRET), "LLM_BASE_URL": base}
        adapter = make_adapter(load_config(env))
        await adapter.chat(params())
        await adapter.aclose()
    paths = [r.path for r in fake_llm.requests]
    assert paths == ["/v1/chat/completions?api-version=2024-10-21", "/v1/chat/completions"]


async def test_anthropic_base_url_with_v1_suffix(fake_llm: FakeLLMServer) -> None:
    env = {**fake_llm.env("anthropic", api_key=SECRET), "LLM_BASE_URL": fake_llm.anthropic_base_url + "/v1/"}
    adapter = make_adapter(load_config(env))
    await adapter.chat(params())
    await adapter.aclose()
    assert fake_llm.requests[-1].path == "/v1/messages"


def test_a_body_with_its_history_serialised_once_is_what_httpx2_sends_for_the_same_json() -> None:
    """The bytes and headers of each request of a session equal httpx2's `json=` encoding of
    the same body, while the history's messages are taken from the request before."""
    adapter = OpenAICompatibleAdapter(api_key=SECRET, base_url="http://127.0.0.1:9/v1")
    client = httpx2.AsyncClient()
    image = ImagePart(mime="image/png", data="iVBORw0KGgo=")
    history = [
        *HISTORY,
        ChatMessage(role="user", content='Plot "ünïcode" — \u2028 \\ \x00 done', images=[image]),
        ChatMessage(role="assistant", content="", tool_calls=[ToolCall(id="c3", name="plot", args={"x": [1.5, None]})]),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c3", name="plot", result="ok", images=[image])),
        ChatMessage(role="assistant", content="Here it is 🎉"),
    ]
    requests = [history[:6], history[:8], history, [*history, ChatMessage(role="user", content="Thanks")]]
    changed = [m.model_copy(update={"content": m.content + "!"}) if m.role == "assistant" else m for m in history]
    for messages in [*requests, changed, history]:
        body = adapter.build_body(params(messages, [TOOL], system="You are in a notebook."), stream=True)
        sent = json_request(client, adapter.url, adapter.headers(stream=True), adapter._wire.body(body))
        expected = client.build_request("POST", adapter.url, headers=adapter.headers(stream=True), json=body)
        assert sent.content == expected.content
        assert sent.headers.raw == expected.headers.raw
