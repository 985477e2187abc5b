"""What a `FakeLLMServer` answers (`Reply`) and what it was asked (`RecordedRequest`).

Replies are wire-format neutral: the same `Reply.text("hi")` is streamed as
OpenAI chat-completion chunks or as Anthropic Messages events, whichever API
the client called.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from agentik_jupyter.core.prompt import NOTE_HEADING

Fault = Literal[
    "401",
    "403",
    "404",
    "429",
    "500",
    "503",
    "reset",
    "malformed_sse",
    "stream_error",
    "slow_first_byte",
    "truncated",
    "redirect",
]
"""HTTP errors; `reset` closes the connection mid-stream; `malformed_sse` sends an event that is
not JSON; `stream_error` sends an in-band error event inside a 200 stream; `slow_first_byte`
waits `delay` seconds before answering (to trip a client's read timeout); `truncated` ends the
stream cleanly halfway, without its final events; `redirect` answers 307 to `location`."""

FAULTS: tuple[str, ...] = get_args(Fault)
HTTP_FAULTS = {"401": 401, "403": 403, "404": 404, "429": 429, "500": 500, "503": 503}


@dataclass(frozen=True)
class ToolCallReply:
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    raw_args: str | None = None
    """Exactly this argument text instead of `json.dumps(args)` (invalid or odd JSON)."""

    def arguments(self) -> str:
        return self.raw_args if self.raw_args is not None else json.dumps(self.args)


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with `Reply.text`, `Reply.tool_calls` or `Reply.fault`."""

    content: str = ""
    reasoning: str | None = None
    calls: tuple[ToolCallReply, ...] = ()
    chunks: int | None = None
    fault_kind: Fault | None = None
    message: str | None = None
    retry_after: float | None = None
    retry_after_ms: float | None = None
    delay: float | None = None
    location: str | None = None
    raw_body: bytes | None = None
    raw_status: int = 200
    raw_content_type: str = "text/event-stream"

    @classmethod
    def text(
        cls,
        text: str,
        *,
        chunks: int | None = None,
        reasoning: str | None = None,
        first_byte_after: float | None = None,
    ) -> Reply:
        """A plain answer, streamed word by word or in `chunks` equal pieces (after
        `first_byte_after` seconds without a byte, as a model that thinks first)."""
        if first_byte_after is None:
            return cls(content=text, chunks=chunks, reasoning=reasoning)
        return cls(
            content=text, chunks=chunks, reasoning=reasoning, fault_kind="slow_first_byte", delay=first_byte_after
        )

    @classmethod
    def tool_calls(
        cls,
        calls: list[Mapping[str, Any]],
        *,
        text: str | None = None,
        chunks: int | None = None,
        reasoning: str | None = None,
    ) -> Reply:
        """`calls` are `{"name": ..., "args": {...}, "id": optional, "raw_args": optional str}` dicts."""
        parsed = tuple(
            ToolCallReply(name=c["name"], args=dict(c.get("args") or {}), id=c.get("id"), raw_args=c.get("raw_args"))
            for c in calls
        )
        return cls(content=text or "", calls=parsed, chunks=chunks, reasoning=reasoning)

    @classmethod
    def fault(
        cls,
        kind: Fault | int,
        *,
        message: str | None = None,
        retry_after: float | None = None,
        retry_after_ms: float | None = None,
        delay: float | None = None,
        location: str | None = None,
        text: str = "This answer is cut short by a fault",
    ) -> Reply:
        """A failure: an HTTP status ("401", 429, ...) or a stream fault ("reset", ...)."""
        name = str(kind)
        if name not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; choose one of {', '.join(FAULTS)}")
        return cls(
            content=text,
            fault_kind=cast(Fault, name),  # (checked above)
            message=message,
            retry_after=retry_after,
            retry_after_ms=retry_after_ms,
            delay=delay,
            location=location,
        )

    @classmethod
    def raw(cls, body: bytes | str, *, status: int = 200, content_type: str = "text/event-stream") -> Reply:
        """Exactly these bytes (e.g. a recorded provider response), whatever the request asked for."""
        data = body.encode() if isinstance(body, str) else body
        return cls(raw_body=data, raw_status=status, raw_content_type=content_type)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reply:
        """A reply from a script entry: `{"text": ...}`, `{"tool_calls": [...]}` or `{"fault": "429", ...}`."""
        if "fault" in data:
            options = {
                k: data[k]
                for k in ("message", "retry_after", "retry_after_ms", "delay", "location", "text")
                if k in data
            }
            return cls.fault(data["fault"], **options)
        if "tool_calls" in data:
            return cls.tool_calls(
                data["tool_calls"], text=data.get("text"), chunks=data.get("chunks"), reasoning=data.get("reasoning")
            )
        return cls.text(str(data.get("text", "")), chunks=data.get("chunks"), reasoning=data.get("reasoning"))

    def pieces(self, text: str | None = None) -> list[str]:
        """The text split into stream chunks: `chunks` equal parts, else word by word."""
        value = self.content if text is None else text
        if not value:
            return []
        if self.chunks:
            size = max(1, -(-len(value) // self.chunks))
            return [value[i : i + size] for i in range(0, len(value), size)]
        return re.findall(r"\s*\S+\s*|\s+", value)


def _without_note(text: str) -> str:
    if text.startswith(NOTE_HEADING) and "\n\n" in text:
        return text.split("\n\n", 1)[1]
    return text


@dataclass
class RecordedRequest:
    """One request the fake server received (headers lower-cased, body parsed from JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    api: Literal["openai", "anthropic", "other"]

    @property
    def stream(self) -> bool:
        return bool(isinstance(self.body, dict) and self.body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or []) if isinstance(self.body, dict) else []

    def last_user_text(self) -> str:
        """The text of the last user message (string content or text blocks), without the notebook
        context note the agent puts before a question."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return _without_note(content)
            if isinstance(content, list):
                texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
                if len(texts) == 1:  # OpenAI-compatible with images: the note and question in one part
                    return _without_note(texts[0])
                texts = [t for t in texts if not t.startswith(NOTE_HEADING)]
                if texts:
                    return "".join(texts)
        return ""

    def user_images(self) -> list[tuple[str, str]]:
        """The images of the last user message as (media type, base64 data), from either wire format:
        OpenAI-compatible `image_url` data URLs, Anthropic `image` blocks with a base64 source."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            found: list[tuple[str, str]] = []
            for part in content if isinstance(content, list) else []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "image_url":
                    url = str((part.get("image_url") or {}).get("url", ""))
                    head, _, data = url.partition(";base64,")
                    found.append((head.removeprefix("data:"), data))
                elif part.get("type") == "image":
                    source = part.get("source") or {}
                    found.append((str(source.get("media_type", "")), str(source.get("data", ""))))
            return found
        return []

    def to_json(self) -> str:
        return json.dumps({"method": self.method, "path": self.path, "body": self.body})
