"""Assemble OpenAI-compatible chat-completion chunks into deltas and one response.

Every quirk listed in DESIGN.md ("Wire-format pitfalls") and exercised by the
conformance corpus is handled here, in one place, for streamed chunks and for
non-streaming bodies alike (a non-streaming message is fed as one big delta).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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

CONTENT_LIST_THINKING = "content[].thinking"


@dataclass
class _Call:
    """One tool call being assembled; `fragments` stays None if no arguments key was ever sent."""

    id: str
    name: str = ""
    fragments: list[str] | None = None
    started: bool = False
    pending: list[str] = field(default_factory=list)


def usage_from(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    if prompt is None and completion is None:
        return None
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=prompt, output_tokens=completion, cached_tokens=cached if isinstance(cached, int) else None
    )


class ChatCompletionAccumulator:
    """Feed chunks (dicts) in order; read deltas back; call `finish()` at the end."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._saw_content = False
        self._reasoning: list[str] = []
        self._reasoning_field: str | None = None
        self._calls: list[_Call] = []
        self._by_index: dict[int, int] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def feed(self, chunk: Any, *, in_stream: bool = True) -> list[ProviderDelta]:
        """Deltas for one chunk; a top-level `error` raises StreamError with the partial answer."""
        if not isinstance(chunk, dict):
            return []
        text = only_text(chunk)
        if text is not None:
            self._saw_content = True
            return self._add_text(text)
        if chunk.get("error"):
            raise error_from_event(chunk, partial=self.snapshot(), in_stream=in_stream)
        usage = usage_from(chunk.get("usage"))
        if usage is not None:
            self.usage = usage
        out: list[ProviderDelta] = []
        for choice in _list(chunk.get("choices")):
            if not isinstance(choice, dict) or choice.get("index") not in (0, None):
                continue
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                delta = message if isinstance(message := choice.get("message"), dict) else {}
            out += self._content(delta.get("content"))
            out += self._reasoning_fields(delta)
            for position, raw_call in enumerate(_list(delta.get("tool_calls"))):
                if isinstance(raw_call, dict):
                    out += self._tool_call(raw_call, position)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def _content(self, content: Any) -> list[ProviderDelta]:
        if content is None:
            return []
        self._saw_content = True
        if isinstance(content, str):
            return self._add_text(content)
        out: list[ProviderDelta] = []
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                out += self._add_text(part["text"])
            elif part.get("type") == "thinking":
                out += self._add_reasoning(_thinking_text(part.get("thinking")), CONTENT_LIST_THINKING)
        return out

    def _reasoning_fields(self, delta: dict[str, Any]) -> list[ProviderDelta]:
        for name in ("reasoning_content", "reasoning"):
            value = delta.get(name)
            if isinstance(value, str) and value:
                return self._add_reasoning(value, name)
        return []

    def add_text(self, text: str) -> bool:
        """The text of a text-only chunk, kept without building a delta; False when it is empty."""
        self._saw_content = True
        if text:
            self._text.append(text)
        return bool(text)

    def _add_text(self, text: str) -> list[ProviderDelta]:
        if not text:
            return []
        self._text.append(text)
        return [TextDelta(text=text)]

    def _add_reasoning(self, text: str, source: str) -> list[ProviderDelta]:
        if not text:
            return []
        self._reasoning.append(text)
        self._reasoning_field = self._reasoning_field or source
        return [ReasoningDelta(text=text)]

    def _target(self, raw: dict[str, Any], position: int, call_id: str) -> int:
        """Which call a fragment belongs to (a list position), creating one when it is new.

        Index first; a new non-empty id at a known index starts a new call (Ollama
        sends index 0 for every call); without an index, ids and order decide.
        """
        index = raw.get("index")
        if not isinstance(index, int):
            index = None
        if index is not None and index in self._by_index:
            current = self._by_index[index]
            existing = self._calls[current].id
            if call_id and existing and call_id != existing:
                return self._new_call(call_id, index)
            return current
        if index is not None:
            return self._new_call(call_id, index)
        if call_id:
            for pos, call in enumerate(self._calls):
                if call.id == call_id:
                    return pos
            return self._new_call(call_id, None)
        if self._calls:
            return len(self._calls) - 1
        return self._new_call(call_id, position)

    def _new_call(self, call_id: str, index: int | None) -> int:
        self._calls.append(_Call(id=call_id))
        pos = len(self._calls) - 1
        if index is not None:
            self._by_index[index] = pos
        return pos

    def _tool_call(self, raw: dict[str, Any], position: int) -> list[ProviderDelta]:
        call_id = raw_id if isinstance(raw_id := raw.get("id"), str) else ""
        pos = self._target(raw, position, call_id)
        call = self._calls[pos]
        if call_id and not call.id:
            call.id = call_id
        function = found if isinstance(found := raw.get("function"), dict) else {}
        name = function.get("name")
        if isinstance(name, str) and name:
            call.name = name
        out: list[ProviderDelta] = []
        if "arguments" in function:
            if call.fragments is None:
                call.fragments = []
            args = function["arguments"]
            if isinstance(args, (dict, list)):
                args = json.dumps(args)
            if isinstance(args, str) and args:
                call.fragments.append(args)
                if call.started:
                    out.append(ToolCallArgsDelta(index=pos, text=args))
                else:
                    call.pending.append(args)
        if call.name and not call.started:
            out += self._start(pos)
        return out

    def _start(self, pos: int) -> list[ProviderDelta]:
        call = self._calls[pos]
        call.started = True
        out: list[ProviderDelta] = [ToolCallStart(index=pos, id=call.id, name=call.name)]
        out += [ToolCallArgsDelta(index=pos, text=text) for text in call.pending]
        call.pending = []
        return out

    def finish(self) -> list[ProviderDelta]:
        """Deltas still owed at the end: starts of nameless calls, and the final usage."""
        out: list[ProviderDelta] = []
        for pos, call in enumerate(self._calls):
            if not call.started:
                out += self._start(pos)
        if self.usage is not None:
            out.append(UsageDelta(usage=self.usage))
        return out

    def snapshot(self) -> ProviderChatResponse:
        """The response assembled so far (also the final one after `finish()`)."""
        calls = []
        for call in self._calls:
            raw = None if call.fragments is None else "".join(call.fragments)
            args, error = parse_arguments(raw)
            calls.append(ProviderToolCall(id=call.id, name=call.name, args=args, arguments_raw=raw, parse_error=error))
        return ProviderChatResponse(
            content="".join(self._text) if self._saw_content else None,
            reasoning="".join(self._reasoning) if self._reasoning else None,
            reasoning_field=self._reasoning_field,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
        )


def _list(value: Any) -> list[Any]:
    """A list field as sent, or none: a provider's `"choices": true` is no choice, not a crash."""
    return value if isinstance(value, list) else []


def only_text(chunk: Any) -> str | None:
    """The text of the usual chunk (one choice, a delta of `content` and maybe `role`, nothing
    else to assemble), found in a few lookups; None sends the chunk through the general path."""
    if type(chunk) is not dict:
        return None
    choices = chunk.get("choices")
    if type(choices) is not list or len(choices) != 1 or chunk.get("usage") or chunk.get("error"):
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("finish_reason") or choice.get("index") not in (0, None):
        return None
    delta = choice.get("delta")
    if type(delta) is not dict:
        return None
    content = delta.get("content")
    if type(content) is not str or not (len(delta) == 1 or (len(delta) == 2 and "role" in delta)):
        return None
    return content


def _thinking_text(thinking: Any) -> str:
    """Mistral thinking chunks hold a string or a list of `{type: text, text}` parts."""
    if isinstance(thinking, str):
        return thinking
    if isinstance(thinking, list):
        return "".join(p.get("text", "") for p in thinking if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def completion_as_chunk(body: dict[str, Any]) -> dict[str, Any]:
    """A non-streaming completion rewritten as one chunk, so one code path assembles both.

    Non-streaming tool calls carry no `index`; their list position is their index.
    """
    chunk: dict[str, Any] = {"usage": body.get("usage"), "choices": []}
    if body.get("error"):
        chunk["error"] = body["error"]
    for choice in _list(body.get("choices")):
        if not isinstance(choice, dict):
            continue
        message = dict(choice["message"]) if isinstance(choice.get("message"), dict) else {}
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            message["tool_calls"] = [{**c, "index": i} if isinstance(c, dict) else c for i, c in enumerate(calls)]
        chunk["choices"].append(
            {"index": choice.get("index", 0), "delta": message, "finish_reason": choice.get("finish_reason")}
        )
    return chunk
