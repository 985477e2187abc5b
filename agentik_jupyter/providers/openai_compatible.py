"""The OpenAI Chat Completions wire format: OpenAI, Azure, Ollama, vLLM, LM Studio, llama.cpp, OpenRouter, Groq...

Request building and history conversion live here; chunk assembly lives in
`_openai_assembly`, the HTTP policy in `_http`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from pydantic import SecretStr

from agentik_jupyter.providers import _constants as C
from agentik_jupyter.providers._convert import input_schema, tool_result_text, user_text
from agentik_jupyter.providers._http import ClientHolder, RetryPolicy, Timeouts, open_response
from agentik_jupyter.providers._openai_assembly import ChatCompletionAccumulator, completion_as_chunk, only_text
from agentik_jupyter.providers._read_ahead import Assembled, feed_each, read_ahead
from agentik_jupyter.providers._streaming import AnswerLimit, EventDecoder, cut_short, is_event_stream, read_json_object
from agentik_jupyter.providers._text_template import TextTemplate
from agentik_jupyter.providers._wire_json import WireJSON
from agentik_jupyter.providers.base import ChatParams, ProviderChatResponse, ProviderDelta, StreamDone, collect
from agentik_jupyter.security.urls import redact_url
from agentik_jupyter.types import ChatMessage, ImagePart, ToolSchema


def endpoint_url(base_url: str, path: str) -> str:
    """Append `path` to the base URL's path, keeping a query string (Azure `?api-version=`)."""
    url = httpx2.URL(base_url)
    base_path = url.path.rstrip("/")
    if base_path.endswith(path):
        base_path = base_path[: -len(path)]
    return str(url.copy_with(path=base_path + path))


def tool_to_wire(tool: ToolSchema) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": input_schema(tool)}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def messages_to_wire(messages: list[ChatMessage], system_prompt: str = "") -> list[dict[str, Any]]:
    """Internal history to Chat Completions messages (system first, tool results as role `tool`)."""
    wire: list[dict[str, Any]] = []
    if system_prompt:
        wire.append({"role": "system", "content": system_prompt})
    images: list[ImagePart] = []
    for message in messages:
        if message.role != "tool" and images:
            wire.append(images_message(images))
            images = []
        if message.role == "user":
            text = user_text(message)
            if message.images:  # the question's own images: a content array, its text first
                wire.append({"role": "user", "content": [{"type": "text", "text": text}, *image_parts(message.images)]})
            else:
                wire.append({"role": "user", "content": text})
        elif message.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                item["content"] = message.content or None
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.args, ensure_ascii=False)},
                    }
                    for call in message.tool_calls
                ]
            wire.append(item)
        elif message.role == "tool" and message.tool_result is not None:
            result = message.tool_result
            wire.append({"role": "tool", "tool_call_id": result.tool_call_id, "content": tool_result_text(result)})
            images += result.images or []
    if images:
        wire.append(images_message(images))
    return wire


def images_message(images: list[ImagePart]) -> dict[str, Any]:
    """Chat Completions has no images in `tool` messages: they follow the results as a user message."""
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": f"The {len(images)} image(s) the tool results above produced:"}
    ]
    return {"role": "user", "content": parts + image_parts(images)}


def image_parts(images: list[ImagePart]) -> list[dict[str, Any]]:
    """Chat Completions image parts: each image as a base64 data URL."""
    return [{"type": "image_url", "image_url": {"url": f"data:{i.mime};base64,{i.data}"}} for i in images]


class OpenAIStream:
    """A streamed chat completion: chunks fed as their bytes come, until `[DONE]` or the body's end.

    A chunk that differs from an earlier text-only chunk only in its text skips the JSON parse
    (`TextTemplate`) and is handed on as a bare string (`Assembled`).
    """

    def __init__(self) -> None:
        self.acc = ChatCompletionAccumulator()
        self.limit = AnswerLimit(self.acc.snapshot)
        self.events = EventDecoder(api="OpenAI-compatible API", partial=self.acc.snapshot, done="[DONE]")
        self.template = TextTemplate(only_text)

    @property
    def done(self) -> bool:
        return self.events.done

    def feed(self, chunk: bytes, out: list[Assembled]) -> None:
        text = self.template.frame(chunk) if self.events.idle else None
        if text is not None:
            self.events.seen = True
            self._text(text, out)
            return
        for name, data in self.events.data(chunk):
            text = self.template.match(data) if name == "message" else None
            if text is None:
                self._event(name, data, out)
            else:
                self._text(text, out)

    def feed_many(self, chunks: list[bytes], out: list[Assembled]) -> None:
        """Chunks read in one go: a run of whole text events is read at once (`TextTemplate.frames`),
        a run with anything else in halves, down to one chunk at a time (`feed`)."""
        if len(chunks) >= C.MIN_TEMPLATE_RUN:
            text = self.template.frames(chunks) if self.events.idle else None
            if text is not None and self.limit.chars + len(text) <= self.limit.limit:
                self.events.seen = True
                self._text(text, out)
                return
            if len(chunks) >= 2 * C.MIN_TEMPLATE_RUN:
                half = len(chunks) // 2
                self.feed_many(chunks[:half], out)
                self.feed_many(chunks[half:], out)
                return
        feed_each(self, chunks, out)

    def _text(self, text: str, out: list[Assembled]) -> None:
        if self.acc.add_text(text):
            self.limit.add(len(text))
            out.append(text)

    def _event(self, name: str, data: str, out: list[Assembled]) -> None:
        payload = self.events.parse(data)
        if name == "error" and not (isinstance(payload, dict) and payload.get("error")):
            payload = {"error": payload}
        out += self.limit.count(self.acc.feed(payload))
        if name == "message":
            self.template.learn(data, payload)

    def end(self) -> list[ProviderDelta]:
        self.events.end()
        if not self.events.done and self.acc.finish_reason is None:
            raise cut_short("no finish_reason, no [DONE]", self.acc.snapshot())
        return [*self.acc.finish(), StreamDone(response=self.acc.snapshot())]


class OpenAICompatibleAdapter:
    """`POST {base_url}/chat/completions`, streamed as SSE or answered as one JSON body."""

    def __init__(
        self,
        *,
        api_key: str | SecretStr,
        base_url: str = C.DEFAULT_OPENAI_BASE_URL,
        include_usage: bool = True,
        prompt_cache_key: bool = True,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        client: httpx2.AsyncClient | None = None,
    ) -> None:
        self._api_key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)
        self.base_url = base_url
        self.url = endpoint_url(base_url, "/chat/completions")
        self.include_usage = include_usage
        self.prompt_cache_key = prompt_cache_key
        self.retry = retry or RetryPolicy()
        self._clients = ClientHolder(client, timeouts)
        self._wire = WireJSON()  # the history's JSON, serialised once (`_wire_json`)

    def __repr__(self) -> str:
        return f"OpenAICompatibleAdapter(base_url={redact_url(self.base_url)!r})"  # no proxy password or query key

    def headers(self, *, stream: bool) -> dict[str, str]:
        key = self._api_key.get_secret_value()
        headers = {
            "Authorization": f"Bearer {key}",
            "Accept": "text/event-stream" if stream else "application/json",
        }
        if httpx2.URL(self.base_url).host.endswith(".azure.com"):
            headers["api-key"] = key
        return headers

    def build_body(self, params: ChatParams, *, stream: bool) -> dict[str, Any]:
        """The JSON body; `tools` is omitted (never null) when there are none."""
        body: dict[str, Any] = {
            "model": params.model,
            "messages": messages_to_wire(params.messages, params.system_prompt),
            "stream": stream,
        }
        if stream and self.include_usage:
            body["stream_options"] = {"include_usage": True}
        if params.tool_schemas:
            body["tools"] = [tool_to_wire(t) for t in params.tool_schemas]
        if self.prompt_cache_key and params.cache_key:
            body["prompt_cache_key"] = params.cache_key  # the same per session: requests meet the same warm cache
        if params.max_tokens is not None:
            body["max_tokens"] = params.max_tokens
        return body

    def stream(self, params: ChatParams) -> AsyncIterator[ProviderDelta]:
        return self._run(params, stream=True)

    async def chat(self, params: ChatParams) -> ProviderChatResponse:
        return await collect(self._run(params, stream=False))

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def _run(self, params: ChatParams, *, stream: bool) -> AsyncIterator[ProviderDelta]:
        body = self._wire.body(self.build_body(params, stream=stream))
        client = self._clients.get()
        async with open_response(
            client, self.url, headers=self.headers(stream=stream), body=body, retry=self.retry
        ) as response:
            if is_event_stream(response):
                async for delta in read_ahead(response, self.url, OpenAIStream()):
                    yield delta
            else:
                async for delta in self._assemble_body(response):
                    yield delta

    async def _assemble_body(self, response: httpx2.Response) -> AsyncIterator[ProviderDelta]:
        body = await read_json_object(response, self.url)
        acc = ChatCompletionAccumulator()
        for delta in AnswerLimit(acc.snapshot).count(acc.feed(completion_as_chunk(body), in_stream=False)):
            yield delta
        for delta in acc.finish():
            yield delta
        yield StreamDone(response=acc.snapshot())
