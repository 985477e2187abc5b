"""The Anthropic Messages wire format (`POST /v1/messages`), streamed or not.

History conversion and request building live here; event assembly lives in
`_anthropic_assembly`, the HTTP policy in `_http`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
from pydantic import SecretStr

from agentik_jupyter.providers import _constants as C
from agentik_jupyter.providers._anthropic_assembly import MessageAccumulator, message_as_events
from agentik_jupyter.providers._convert import input_schema, tool_result_text
from agentik_jupyter.providers._http import ClientHolder, RetryPolicy, Timeouts, open_response
from agentik_jupyter.providers._read_ahead import Assembled, feed_each, read_ahead
from agentik_jupyter.providers._streaming import AnswerLimit, EventDecoder, cut_short, is_event_stream, read_json_object
from agentik_jupyter.providers.base import ChatParams, ProviderChatResponse, ProviderDelta, StreamDone, collect
from agentik_jupyter.providers.openai_compatible import endpoint_url
from agentik_jupyter.security.urls import redact_url
from agentik_jupyter.types import ChatMessage, ImagePart, ToolSchema


def tool_to_wire(tool: ToolSchema) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": tool.name, "input_schema": input_schema(tool)}
    if tool.description:
        wire["description"] = tool.description
    return wire


def _assistant_blocks(message: ChatMessage) -> list[dict[str, Any]]:
    """Provider blocks (thinking with signature, server tools) are sent back verbatim when kept."""
    calls = message.tool_calls or []
    if message.provider_blocks:
        ids = {b.get("id") for b in message.provider_blocks if b.get("type") == "tool_use"}
        if all(call.id in ids for call in calls):
            return [{k: v for k, v in b.items() if v is not None} for b in message.provider_blocks]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in calls]
    return blocks


def messages_to_wire(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Internal history to Messages turns: tool results become user `tool_result` blocks and
    consecutive turns of one role are merged, since the API wants them to alternate."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "user":
            texts = [message.context_note, message.content]  # the note its own block, the question as written
            role, blocks = "user", [{"type": "text", "text": t} for t in texts if t]
            blocks += image_blocks(message.images or [])  # the question's own images, after its words
        elif message.role == "assistant":
            role, blocks = "assistant", _assistant_blocks(message)
        elif message.tool_result is not None:
            result = message.tool_result
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": result.tool_call_id,
                "content": tool_result_text(result),
            }
            if result.images:
                block["content"] = [{"type": "text", "text": block["content"]}] + image_blocks(result.images)
            if result.error is not None:
                block["is_error"] = True
            role, blocks = "user", [block]
        else:
            continue
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def image_blocks(images: list[ImagePart]) -> list[dict[str, Any]]:
    """Messages image blocks: each image as a base64 source."""
    return [{"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.data}} for i in images]


CACHE_POINT = {"type": "ephemeral"}
CACHE_BREAKPOINTS = 4
"""Anthropic caches a request's prefix up to a block marked `cache_control`; at most 4 marks."""


def add_cache_breakpoints(body: dict[str, Any]) -> None:
    """Mark the last tool, the system prompt and the newest message's last block (3 of the 4
    allowed): the tools and system prompt are read from cache on every call, and the whole
    history up to the newest message on the next one (reads cost 0.1×, writes 1.25×)."""
    marks = 0
    tools = body.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": CACHE_POINT}
        marks += 1
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": CACHE_POINT}]
        marks += 1
    messages = body.get("messages") or []
    for message in reversed(messages):
        if marks >= CACHE_BREAKPOINTS:
            break
        blocks = [b for b in message.get("content") or [] if b.get("type") not in ("thinking", "redacted_thinking")]
        if blocks:  # thinking blocks cannot carry a mark
            blocks[-1]["cache_control"] = CACHE_POINT
            break


class AnthropicStream:
    """A streamed message: events fed as their bytes come, until `message_stop` or the body's end."""

    def __init__(self, acc: MessageAccumulator) -> None:
        self.acc = acc
        self.limit = AnswerLimit(acc.snapshot)
        self.events = EventDecoder(api="Anthropic Messages API", partial=acc.snapshot)

    @property
    def done(self) -> bool:
        return self.acc.stopped

    def feed(self, chunk: bytes, out: list[ProviderDelta]) -> None:
        for name, payload in self.events.feed(chunk):
            if name == "error" and isinstance(payload, dict) and payload.get("type") != "error":
                payload = {"type": "error", "error": payload.get("error", payload)}
            out += self.limit.count(self.acc.feed(payload))
            if self.acc.stopped:
                break

    def feed_many(self, chunks: list[bytes], out: list[Assembled]) -> None:
        feed_each(self, chunks, out)  # (what follows message_stop is not read)

    def end(self) -> list[ProviderDelta]:
        """Nothing owed here (the adapter adds the final deltas), or the error of a cut stream."""
        if self.acc.stopped:
            return []
        self.events.end()
        raise cut_short("no message_stop", self.acc.snapshot())


class AnthropicAdapter:
    """`POST {base_url}/v1/messages` with `x-api-key` and `anthropic-version`."""

    def __init__(
        self,
        *,
        api_key: str | SecretStr,
        base_url: str = C.DEFAULT_ANTHROPIC_BASE_URL,
        max_tokens: int = C.ANTHROPIC_DEFAULT_MAX_TOKENS,
        cache_control: bool = True,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        client: httpx2.AsyncClient | None = None,
    ) -> None:
        self._api_key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)
        self.base_url = base_url
        self.url = endpoint_url(base_url.rstrip("/").removesuffix("/v1"), "/v1/messages")
        self.max_tokens = max_tokens
        self.cache_control = cache_control
        self.retry = retry or RetryPolicy()
        self._clients = ClientHolder(client, timeouts)

    def __repr__(self) -> str:
        return f"AnthropicAdapter(base_url={redact_url(self.base_url)!r})"  # no proxy password or query key

    def headers(self, *, stream: bool) -> dict[str, str]:
        return {
            "x-api-key": self._api_key.get_secret_value(),
            "anthropic-version": C.ANTHROPIC_VERSION,
            "Accept": "text/event-stream" if stream else "application/json",
        }

    def build_body(self, params: ChatParams, *, stream: bool) -> dict[str, Any]:
        """The JSON body: system prompt top-level, `max_tokens` always (the API requires it)."""
        body: dict[str, Any] = {
            "model": params.model,
            "max_tokens": params.max_tokens or self.max_tokens,
            "messages": messages_to_wire(params.messages),
            "stream": stream,
        }
        if params.system_prompt:
            body["system"] = params.system_prompt
        if params.tool_schemas:
            body["tools"] = [tool_to_wire(t) for t in params.tool_schemas]
        if self.cache_control:
            add_cache_breakpoints(body)
        return body

    def stream(self, params: ChatParams) -> AsyncIterator[ProviderDelta]:
        return self._run(params, stream=True)

    async def chat(self, params: ChatParams) -> ProviderChatResponse:
        return await collect(self._run(params, stream=False))

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def _run(self, params: ChatParams, *, stream: bool) -> AsyncIterator[ProviderDelta]:
        body = self.build_body(params, stream=stream)
        client = self._clients.get()
        async with open_response(
            client, self.url, headers=self.headers(stream=stream), body=body, retry=self.retry
        ) as response:
            acc = MessageAccumulator()
            if is_event_stream(response):
                async for delta in read_ahead(response, self.url, AnthropicStream(acc)):
                    yield delta
            else:
                payload = await read_json_object(response, self.url)
                limit = AnswerLimit(acc.snapshot)
                for event in message_as_events(payload):
                    for delta in limit.count(acc.feed(event, in_stream=False)):
                        yield delta
            for delta in acc.final_deltas():
                yield delta
            yield StreamDone(response=acc.snapshot())
