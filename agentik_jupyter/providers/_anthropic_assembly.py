"""Assemble Anthropic Messages stream events into deltas and one response.

A non-streaming body is replayed as the events that would have produced it, so
both paths share one accumulator and give identical results.
"""

from __future__ import annotations

import json
from typing import Any

from agentik_jupyter.providers._convert import parse_arguments
from agentik_jupyter.providers._http import error_from_event
from agentik_jupyter.providers.base import (
    ProviderChatResponse,
    ProviderDelta,
    ProviderToolCall,
    ReasoningDelta,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    UsageDelta,
)
from agentik_jupyter.types import Usage

TOOL_BLOCKS = ("tool_use", "server_tool_use")


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def anthropic_usage(raw: dict[str, Any]) -> Usage:
    """Anthropic counts input read from the cache and written to it apart from `input_tokens`;
    our `input_tokens` is all three together, as OpenAI's `prompt_tokens` is."""
    fresh, read, written = (
        _count(raw.get(k)) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    total = None if fresh is None and read is None and written is None else (fresh or 0) + (read or 0) + (written or 0)
    return Usage(
        input_tokens=total,
        output_tokens=_count(raw.get("output_tokens")),
        cached_tokens=read,
        cache_write_tokens=written,
    )


class MessageAccumulator:
    """Feed events (dicts) in order; read deltas back; `snapshot()` is the response."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str] | None] = {}
        self._call_index: dict[int, int] = {}
        self._usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.stopped = False

    def feed(self, event: Any, *, in_stream: bool = True) -> list[ProviderDelta]:
        if not isinstance(event, dict):
            return []
        kind = event.get("type")
        if kind == "error" or (kind is None and event.get("error")):
            raise error_from_event(event, partial=self.snapshot(), in_stream=in_stream)
        if kind == "message_start":
            message = event["message"] if isinstance(event.get("message"), dict) else {}
            self._merge_usage(message.get("usage"))
            out: list[ProviderDelta] = []
            content = message.get("content")
            for i, block in enumerate(content if isinstance(content, list) else []):
                out += self._start(i, block)
                out += self._stop(i)
            return out
        if kind == "content_block_start":
            return self._start(event.get("index", len(self._blocks)), event.get("content_block") or {})
        if kind == "content_block_delta":
            return self._delta(event.get("index", 0), event.get("delta") or {})
        if kind == "content_block_stop":
            return self._stop(event.get("index", 0))
        if kind == "message_delta":
            delta = event.get("delta") or {}
            if "stop_reason" in delta:
                self.stop_reason = delta["stop_reason"]
            if "stop_sequence" in delta:
                self.stop_sequence = delta["stop_sequence"]
            self._merge_usage(event.get("usage"))
            return []
        if kind == "message_stop":
            self.stopped = True
        return []

    def _merge_usage(self, usage: Any) -> None:
        """message_delta usage is cumulative: overwrite each field it carries, never add."""
        if isinstance(usage, dict):
            self._usage.update({k: v for k, v in usage.items() if v is not None})

    def _start(self, index: int, block: dict[str, Any]) -> list[ProviderDelta]:
        block = dict(block)
        self._blocks[index] = block
        kind = block.get("type")
        if kind in TOOL_BLOCKS:
            self._json[index] = None
            if kind == "tool_use":
                position = len(self._call_index)
                self._call_index[index] = position
                return [ToolCallStart(index=position, id=block.get("id", ""), name=block.get("name", ""))]
            return []
        if kind == "text" and block.get("text"):
            return [TextDelta(text=block["text"])]
        if kind == "thinking" and block.get("thinking"):
            return [ReasoningDelta(text=block["thinking"])]
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ProviderDelta]:
        block = self._blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text") or ""
            block["text"] = block.get("text", "") + text
            return [TextDelta(text=text)] if text else []
        if kind == "thinking_delta":
            text = delta.get("thinking") or ""
            block["thinking"] = block.get("thinking", "") + text
            return [ReasoningDelta(text=text)] if text else []
        if kind == "signature_delta":
            block["signature"] = delta.get("signature", "")
            return []
        if kind == "citations_delta" and delta.get("citation") is not None:
            block["citations"] = [*(block.get("citations") or []), delta["citation"]]
            return []
        if kind == "input_json_delta":
            fragment = delta.get("partial_json") or ""
            parts = self._json.get(index) or []
            parts.append(fragment)
            self._json[index] = parts
            if index in self._call_index and fragment:
                return [ToolCallArgsDelta(index=self._call_index[index], text=fragment)]
        return []

    def _stop(self, index: int) -> list[ProviderDelta]:
        block = self._blocks.get(index)
        if block is None or block.get("type") not in TOOL_BLOCKS:
            return []
        parts = self._json.get(index)
        if parts is not None:
            args, _ = parse_arguments("".join(parts))
            block["input"] = args
            return []
        if index in self._call_index and block.get("input"):
            return [ToolCallArgsDelta(index=self._call_index[index], text=json.dumps(block["input"]))]
        return []

    def final_deltas(self) -> list[ProviderDelta]:
        usage = self.usage()
        return [UsageDelta(usage=usage)] if usage is not None else []

    def usage(self) -> Usage | None:
        if not self._usage:
            return None
        return anthropic_usage(self._usage)

    def snapshot(self) -> ProviderChatResponse:
        blocks = [self._blocks[i] for i in sorted(self._blocks)]
        texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
        thinking = [b.get("thinking", "") for b in blocks if b.get("type") == "thinking"]
        calls = []
        for index in sorted(self._call_index):
            block = self._blocks[index]
            parts = self._json.get(index)
            raw = "".join(parts) if parts is not None else None
            args, error = parse_arguments(raw) if raw is not None else (block.get("input") or {}, None)
            calls.append(
                ProviderToolCall(
                    id=block.get("id", ""), name=block.get("name", ""), args=args, arguments_raw=raw, parse_error=error
                )
            )
        return ProviderChatResponse(
            content="".join(texts) if texts else None,
            reasoning="".join(thinking) if thinking else None,
            reasoning_field="thinking" if thinking else None,
            tool_calls=calls,
            finish_reason=self.stop_reason,
            stop_sequence=self.stop_sequence,
            usage=self.usage(),
            content_blocks=[_clean(b) for b in blocks],
        )


def _clean(block: dict[str, Any]) -> dict[str, Any]:
    """A block as it may be sent back in history: no null fields (the API rejects some)."""
    return {k: v for k, v in block.items() if v is not None}


def message_as_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A non-streaming Messages body as the stream events that would have produced it."""
    if body.get("type") == "error" or body.get("error"):
        return [{"type": "error", "error": body.get("error")}]
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"usage": body.get("usage")}}]
    content = body.get("content")
    for index, block in enumerate(content if isinstance(content, list) else []):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")},
        }
    )
    events.append({"type": "message_stop"})
    return events
