"""The adapter interface every wire format implements.

The orchestrator consumes `stream()`: a sequence of deltas that ends with one
`StreamDone` holding the assembled response. `chat()` is the same call, collected.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, Union, runtime_checkable

from pydantic import BaseModel, Field

from agentik_jupyter.errors import MalformedResponseError
from agentik_jupyter.types import ChatMessage, ToolSchema, Usage


class ChatParams(BaseModel):
    model: str
    messages: list[ChatMessage]
    system_prompt: str = ""
    tool_schemas: list[ToolSchema] = Field(default_factory=list)
    max_tokens: int | None = None
    cache_key: str | None = None
    """The same for every request of a session: sent as OpenAI's `prompt_cache_key` (when on)."""


class ProviderToolCall(BaseModel):
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    arguments_raw: str | None = None
    parse_error: str | None = None


class ProviderChatResponse(BaseModel):
    content: str | None = None
    reasoning: str | None = None
    reasoning_field: str | None = None
    tool_calls: list[ProviderToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    stop_sequence: str | None = None
    usage: Usage | None = None
    content_blocks: list[dict[str, Any]] | None = None


class TextDelta(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ReasoningDelta(BaseModel):
    type: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallStart(BaseModel):
    type: Literal["tool_call_start"] = "tool_call_start"
    index: int
    id: str
    name: str


class ToolCallArgsDelta(BaseModel):
    type: Literal["tool_call_args"] = "tool_call_args"
    index: int
    text: str


class UsageDelta(BaseModel):
    type: Literal["usage"] = "usage"
    usage: Usage


class StreamDone(BaseModel):
    type: Literal["done"] = "done"
    response: ProviderChatResponse


ProviderDelta = Union[TextDelta, ReasoningDelta, ToolCallStart, ToolCallArgsDelta, UsageDelta, StreamDone]


@runtime_checkable
class ProviderAdapter(Protocol):
    """One wire format. Errors are raised as `errors.ProviderError` subclasses."""

    def stream(self, params: ChatParams) -> AsyncIterator[ProviderDelta]: ...

    async def chat(self, params: ChatParams) -> ProviderChatResponse: ...

    async def aclose(self) -> None: ...


async def collect(deltas: AsyncIterator[ProviderDelta]) -> ProviderChatResponse:
    """Drain a delta stream and return the response its StreamDone carries."""
    final: ProviderChatResponse | None = None
    async for delta in deltas:
        if isinstance(delta, StreamDone):
            final = delta.response
    if final is None:
        raise MalformedResponseError("The provider stream ended without a final response.")
    return final
