"""Render a `Reply` in the OpenAI chat-completions or Anthropic Messages wire format.

Streams are lists of SSE frames (bytes), so the server can pace them, cut them
(faults) or splice in a bad frame.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentik_jupyter.testing.replies import Reply

IdFactory = Callable[[str], str]


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


def _fragments(text: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def output_tokens(reply: Reply) -> int:
    return len(reply.pieces()) + len(reply.pieces(reply.reasoning or "")) + len(reply.calls)


@dataclass(frozen=True)
class Prompt:
    """A request's input tokens as a provider would bill them: all of them, those read from the
    prompt cache, and those written to it."""

    tokens: int
    cached: int = 0
    written: int = 0


CHARS_PER_TOKEN = 4
MIN_CACHED_PREFIX = 1_024
"""Tokens a prefix needs before either provider caches it."""
OPENAI_CACHE_STEP = 128


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def cache_text(body: Any) -> str:
    """The request in the providers' cache order (tools, system, messages), without cache marks."""
    if not isinstance(body, dict):
        return ""
    parts = [body.get("tools"), body.get("system"), *(body.get("messages") or [])]
    return "\n".join(json.dumps(_unmarked(p), ensure_ascii=False) for p in parts if p is not None)


def _marked(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value or any(_marked(v) for v in value.values())
    if isinstance(value, list):
        return any(_marked(v) for v in value)
    return False


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # by halves: slices compare in C
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def prompt_of(body: Any, api: str, before: str) -> tuple[Prompt, str]:
    """Count a request's input like a provider with a prompt cache: ~4 characters a token; the
    prefix it shares with the request ``before`` is read from cache (OpenAI: automatically, in
    128-token steps; Anthropic: when the request marks `cache_control`, and the rest up to the
    newest mark is written). Returns the count and this request's text, for the next one."""
    text = cache_text(body)
    tokens = max(1, len(text) // CHARS_PER_TOKEN)
    same = _common_prefix(text, before)
    shared = same // CHARS_PER_TOKEN if same >= MIN_CACHED_PREFIX * CHARS_PER_TOKEN else 0
    if api == "anthropic":
        if not _marked(body):
            return Prompt(tokens), text
        written = tokens - shared if tokens >= MIN_CACHED_PREFIX else 0
        return Prompt(tokens, shared, written), text
    return Prompt(tokens, shared // OPENAI_CACHE_STEP * OPENAI_CACHE_STEP), text


# ---- OpenAI chat completions ----


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _openai_usage(reply: Reply, prompt: Prompt | int) -> dict[str, Any]:
    completion = output_tokens(reply)
    prompt = Prompt(prompt) if isinstance(prompt, int) else prompt
    return {
        "prompt_tokens": prompt.tokens,
        "completion_tokens": completion,
        "total_tokens": prompt.tokens + completion,
        "prompt_tokens_details": {"cached_tokens": prompt.cached},
    }


def _anthropic_usage(prompt: Prompt | int, output: int) -> dict[str, int]:
    prompt = Prompt(prompt) if isinstance(prompt, int) else prompt
    return {
        "input_tokens": prompt.tokens - prompt.cached - prompt.written,
        "cache_creation_input_tokens": prompt.written,
        "cache_read_input_tokens": prompt.cached,
        "output_tokens": output,
    }


def openai_stream(
    reply: Reply, *, model: str, prompt: Prompt | int, include_usage: bool, new_id: IdFactory
) -> list[bytes]:
    frames = [sse(_chunk(model, {"role": "assistant", "content": ""}))]
    frames += [sse(_chunk(model, {"reasoning_content": p})) for p in reply.pieces(reply.reasoning or "")]
    frames += [sse(_chunk(model, {"content": p})) for p in reply.pieces()]
    for index, call in enumerate(reply.calls):
        head = {"index": index, "id": call.id or new_id("call_"), "type": "function"}
        frames.append(sse(_chunk(model, {"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})))
        for fragment in _fragments(call.arguments()):
            frames.append(sse(_chunk(model, {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})))
    frames.append(sse(_chunk(model, {}, "tool_calls" if reply.calls else "stop")))
    if include_usage:
        usage_chunk = {**_chunk(model, {}), "choices": [], "usage": _openai_usage(reply, prompt)}
        frames.append(sse(usage_chunk))
    frames.append(sse("[DONE]"))
    return frames


def openai_json(reply: Reply, *, model: str, prompt: Prompt | int, new_id: IdFactory) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": call.id or new_id("call_"),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments()},
            }
            for call in reply.calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.calls else "stop"}],
        "usage": _openai_usage(reply, prompt),
    }


def openai_error(status: int, message: str) -> dict[str, Any]:
    kinds = {401: "invalid_api_key", 403: "permission_denied", 404: "model_not_found", 429: "rate_limit_exceeded"}
    return {"error": {"message": message, "type": "invalid_request_error", "code": kinds.get(status), "param": None}}


def openai_stream_error(message: str) -> bytes:
    return sse({"error": {"message": message, "type": "server_error", "code": "internal_error"}})


# ---- Anthropic messages ----


def _event(data: dict[str, Any]) -> bytes:
    return sse(data, event=data["type"])


def anthropic_stream(reply: Reply, *, model: str, prompt: Prompt | int, new_id: IdFactory) -> list[bytes]:
    start: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(prompt, 1),
    }
    frames = [_event({"type": "message_start", "message": start}), _event({"type": "ping"})]
    index = 0

    def block(opening: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        frames.append(_event({"type": "content_block_start", "index": index, "content_block": opening}))
        frames.extend(_event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas)
        frames.append(_event({"type": "content_block_stop", "index": index}))
        index += 1

    if reply.reasoning:
        thinking = [{"type": "thinking_delta", "thinking": p} for p in reply.pieces(reply.reasoning)]
        block(
            {"type": "thinking", "thinking": "", "signature": ""},
            [*thinking, {"type": "signature_delta", "signature": "fake-signature"}],
        )
    if reply.content:
        block({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in reply.pieces()])
    for call in reply.calls:
        opening = {"type": "tool_use", "id": call.id or new_id("toolu_"), "name": call.name, "input": {}}
        block(opening, [{"type": "input_json_delta", "partial_json": f} for f in ["", *_fragments(call.arguments())]])
    stop = "tool_use" if reply.calls else "end_turn"
    frames.append(
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens(reply)},
            }
        )
    )
    frames.append(_event({"type": "message_stop"}))
    return frames


def anthropic_json(reply: Reply, *, model: str, prompt: Prompt | int, new_id: IdFactory) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "fake-signature"})
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    content += [
        {"type": "tool_use", "id": c.id or new_id("toolu_"), "name": c.name, "input": c.args} for c in reply.calls
    ]
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(prompt, output_tokens(reply)),
    }


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    kinds = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
        500: "api_error",
        503: "overloaded_error",
    }
    return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}


def anthropic_stream_error(message: str) -> bytes:
    return _event({"type": "error", "error": {"type": "overloaded_error", "message": message}})
