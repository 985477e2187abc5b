"""A scripted, in-process model: drives the loop in tests without any HTTP.

Each scripted step is what the model "says" on one request: text, tool calls,
or an exception to raise. Requests are recorded so tests can check what the
model was sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from agentik_jupyter.providers.base import (
    ProviderChatResponse,
    ProviderDelta,
    ProviderToolCall,
    StreamDone,
    TextDelta,
    UsageDelta,
)
from agentik_jupyter.types import AgentContext, ChatMessage, ToolSchema, Usage, new_id


@dataclass
class Step:
    """One scripted model answer."""

    text: str = ""
    tool_calls: list[ProviderToolCall] = field(default_factory=list)
    raises: BaseException | None = None
    chunk_size: int = 4
    delay: float = 0.0
    usage: Usage | None = None

    @classmethod
    def say(cls, text: str, **kw: Any) -> Step:
        return cls(text=text, **kw)

    @classmethod
    def call(cls, name: str, args: dict[str, Any] | None = None, *, text: str = "", **kw: Any) -> Step:
        return cls(text=text, tool_calls=[ProviderToolCall(id=new_id("call_"), name=name, args=args or {})], **kw)

    @classmethod
    def calls(cls, *calls: tuple[str, dict[str, Any]], text: str = "") -> Step:
        return cls(text=text, tool_calls=[ProviderToolCall(id=new_id("call_"), name=n, args=a) for n, a in calls])

    @classmethod
    def fail(cls, error: BaseException) -> Step:
        return cls(raises=error)


@dataclass
class SentRequest:
    messages: list[ChatMessage]
    context: AgentContext | None
    tool_schemas: list[ToolSchema]


class ScriptedTransport:
    """Answers each request with the next Step; a callable step sees the request first."""

    def __init__(self, steps: list[Step | Callable[[SentRequest], Step]] | None = None) -> None:
        self.steps = list(steps or [])
        self.requests: list[SentRequest] = []
        self.model: str | None = None  # a turn's `--model` lands here; the script answers whatever it is

    def push(self, *steps: Step | Callable[[SentRequest], Step]) -> None:
        self.steps.extend(steps)

    async def stream(
        self,
        messages: list[ChatMessage],
        context: AgentContext | None,
        tool_schemas: list[ToolSchema],
    ) -> AsyncIterator[ProviderDelta]:
        request = SentRequest(list(messages), context, list(tool_schemas))
        self.requests.append(request)
        if not self.steps:
            raise AssertionError("ScriptedTransport ran out of steps")
        step = self.steps.pop(0)
        if callable(step):
            step = step(request)
        if step.raises is not None:
            raise step.raises
        for i in range(0, len(step.text), max(1, step.chunk_size)):
            if step.delay:
                await asyncio.sleep(step.delay)
            yield TextDelta(text=step.text[i : i + step.chunk_size])
        usage = step.usage or Usage(input_tokens=10, output_tokens=max(1, len(step.text) // 4))
        yield UsageDelta(usage=usage)
        yield StreamDone(
            response=ProviderChatResponse(
                content=step.text or None,
                tool_calls=step.tool_calls,
                finish_reason="tool_calls" if step.tool_calls else "stop",
                usage=usage,
            )
        )
