"""Server-Sent Events for the chat route: a turn's model call as numbered events.

One model call becomes ``start``, then ``delta`` (answer text), ``reasoning``,
``usage`` as the adapter yields them, one ``tool_call`` per finished call, and ``end``
with the assembled response; a failure ends the stream with one ``error`` event instead
(the same error/message/code/status the JSON route answers with). Each event's data is
one JSON object that repeats its ``type``; ids count up from 1.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from agentik_jupyter.core.chat_route import AdapterCache, parse_request, stream_chat
from agentik_jupyter.errors import ChatRouteError, ConfigurationError, ProviderError
from agentik_jupyter.providers.base import ReasoningDelta, StreamDone, TextDelta, UsageDelta
from agentik_jupyter.security.scrub import scrub, scrub_response
from agentik_jupyter.security.stream import StreamScrubber
from agentik_jupyter.types import ChatRequest, ToolSchema

EVENT_STREAM = "text/event-stream"
TERMINAL_EVENTS = ("end", "error")


def wants_event_stream(accept: str | None) -> bool:
    """True when the client asked for SSE (JSON stays the default for everyone else)."""
    return any(part.split(";")[0].strip().lower() == EVENT_STREAM for part in (accept or "").split(","))


def encode(event_id: int, kind: str, data: Mapping[str, Any]) -> bytes:
    """One SSE frame; the JSON has no newlines, so one ``data:`` line carries it."""
    payload = json.dumps({"type": kind, **data}, separators=(",", ":"))
    return f"id: {event_id}\nevent: {kind}\ndata: {payload}\n\n".encode()


def normalise(data: Any) -> Any:
    """The parsed request body with the spec's ``toolCalls`` accepted for ``tool_calls`` in messages.

    It takes JSON `load_body` already parsed (and depth-checked): the route reads its bytes once.
    """
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        for message in data["messages"]:
            if isinstance(message, dict) and "toolCalls" in message and "tool_calls" not in message:
                message["tool_calls"] = message.pop("toolCalls")
    return data


def error_event(exc: BaseException) -> dict[str, Any]:
    """The JSON route's error body for the same failure."""
    if isinstance(exc, ConfigurationError):
        return {"error": "Missing configuration", "message": exc.message}
    if isinstance(exc, ProviderError):
        return {"error": "LLM provider error", "message": exc.message, "code": exc.code, "status": exc.status}
    return {"error": "Internal error", "message": scrub(f"{type(exc).__name__}: {exc}")}


def parse(body: Any) -> ChatRequest:
    """Validate before the stream starts, so a bad body is a plain 400 (ChatRouteError)."""
    return parse_request(body)


async def chat_events(
    request: ChatRequest,
    tool_schemas: list[ToolSchema],
    *,
    environ: Mapping[str, str] | None = None,
    adapters: AdapterCache | None = None,
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(event type, data) pairs for one model call; never raises a provider error.

    Text and reasoning pass a `StreamScrubber` each (a key split across deltas is masked too),
    and what they hold back is sent before the last event; every other event is scrubbed whole.
    """
    text, thought = StreamScrubber(environ), StreamScrubber(environ)

    def rest() -> Iterator[tuple[str, dict[str, Any]]]:
        for kind, scrubber in (("reasoning", thought), ("delta", text)):
            held = scrubber.finish()
            if held:
                yield kind, {"text": held}

    yield "start", {"model": request.model}
    try:
        async for delta in stream_chat(
            request.messages, request.context, tool_schemas, model=request.model, environ=environ, adapters=adapters
        ):
            if isinstance(delta, TextDelta) and delta.text:
                if shown := text.push(delta.text):
                    yield "delta", {"text": shown}
            elif isinstance(delta, ReasoningDelta) and delta.text:
                if shown := thought.push(delta.text):
                    yield "reasoning", {"text": shown}
            elif isinstance(delta, UsageDelta):
                yield "usage", delta.usage.model_dump(mode="json")
            elif isinstance(delta, StreamDone):
                for event in rest():
                    yield event
                response = scrub_response(delta.response, environ)
                calls = [{"id": c.id, "name": c.name, "args": c.args} for c in response.tool_calls]
                for index, call in enumerate(calls):
                    yield "tool_call", {"index": index, **call}
                yield (
                    "end",
                    {
                        "content": response.content or "",
                        "toolCalls": calls,
                        "reasoning": response.reasoning,
                        "finish_reason": response.finish_reason,
                        "usage": response.usage.model_dump(mode="json") if response.usage else None,
                    },
                )
                return
    except ChatRouteError as exc:
        for event in rest():
            yield event
        yield "error", exc.body
        return
    except Exception as exc:  # every failure becomes the stream's last event
        for event in rest():
            yield event
        yield "error", error_event(exc)
        return
    for event in rest():
        yield event
    yield "error", {"error": "LLM provider error", "message": "The provider stream ended without a final response."}
