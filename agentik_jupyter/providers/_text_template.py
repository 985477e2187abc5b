"""Recognise a streamed event that differs from an earlier text-only event only in its text.

A provider streams an answer as a thousand events that are byte for byte the same but for
one JSON string (`{"id":"…","choices":[{"index":0,"delta":{"content":"…"}}]}`). Parsing
each with `json.loads` and walking the dict was most of what a turn spent decoding, so
once one such event has been parsed, the bytes around its text become a template: a later
event that starts and ends with the same bytes has the same structure, and its text is the
middle, taken as it is when it holds no quote, backslash or control character, or else
decoded as one JSON string. Anything else (another field, another shape, an error, a
malformed middle) goes through the full parse, so the result is always what `json.loads`
gives. The usual chunk, one whole `data: …` event, is matched on its bytes before any
decoding (`frame`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agentik_jupyter.providers import _constants as C

_LITERAL_BODY = rb'([^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*)'
"""The body of a JSON string literal in bytes: no quote or control byte, a backslash only before
another byte (whether that makes a valid escape is left to `json.loads`)."""
PROBE = "agentik-probe"
"""Put in place of the text when learning, to prove the bytes found are the text's."""
MAX_LEARNS = 8
"""How often a stream may learn a new template (its first event with `role`, then the rest)."""


class TextTemplate:
    """The bytes around the text of one text-only event, learned from a parsed one."""

    def __init__(self, text_of: Callable[[Any], str | None], max_frame_bytes: int = C.MAX_SSE_EVENT_CHARS) -> None:
        self._text_of = text_of
        self._prefix: str | None = None
        self._suffix = ""
        self._frame: tuple[bytes, bytes] | None = None
        self._frames: re.Pattern[bytes] | None = None
        self._max_frame_bytes = max_frame_bytes
        self._learns = 0

    def frame(self, chunk: bytes) -> str | None:
        """The text of a chunk that is the whole server-sent event `data: <template>\n\n` (the
        usual chunk), read from its bytes; None when the decoders must see it. Only for a
        decoder between events (`EventDecoder.idle`)."""
        if self._frame is None:
            return None
        head, tail = self._frame
        if not (chunk.startswith(head) and chunk.endswith(tail)) or len(chunk) > self._max_frame_bytes:
            return None
        end = len(chunk) - len(tail)
        if end < len(head):
            return None
        middle = chunk[len(head) : end]
        if b'"' in middle or b"\\" in middle:
            return None
        try:
            text = middle.decode()
        except UnicodeDecodeError:
            return None
        return text if text.isprintable() else None

    def frames(self, chunks: list[bytes]) -> str | None:
        """The text of chunks that together are whole events `data: <template>\n\n`, one after
        another (the usual run of a stream), read from their bytes at once; None when anything
        in them must go through the decoders. Only for a decoder between events.

        The bytes are matched in one pass and must be covered by the events end to end; each
        event's text is then what `frame` or `match` gives, joined."""
        if self._frames is None or self._frame is None:
            return None
        data = b"".join(chunks)
        texts: list[bytes] = self._frames.findall(data)
        around = len(self._frame[0]) + len(self._frame[1])
        if not texts or len(data) != around * len(texts) + sum(map(len, texts)):
            return None  # something else among them
        if max(map(len, texts)) + around > self._max_frame_bytes:
            return None
        joined = b"".join(texts)
        try:  # (each on its own when not ASCII: a character is never split across events)
            parts = [joined.decode()] if joined.isascii() else [t.decode() for t in texts]
        except UnicodeDecodeError:
            return None
        literal = "".join(parts)
        if not literal.isprintable():
            return None
        if "\\" not in literal:
            return literal
        try:  # JSON escapes: one literal, unless a \u escape could pair across two events
            if "\\u" not in literal:
                return str(json.loads('"' + literal + '"'))
            return "".join(json.loads('"' + t.decode() + '"') for t in texts)
        except ValueError:
            return None

    def match(self, data: str) -> str | None:
        """The text of `data` when it fits the template; None sends it to the full parse."""
        prefix, suffix = self._prefix, self._suffix
        if prefix is None or not data.startswith(prefix) or not data.endswith(suffix):
            return None
        end = len(data) - len(suffix)
        if end < len(prefix):
            return None
        middle = data[len(prefix) : end]
        if '"' not in middle and "\\" not in middle and middle.isprintable():
            return middle
        try:
            return json.loads('"' + middle + '"')  # one string literal, or it raises
        except ValueError:
            return None

    def learn(self, data: str, payload: Any) -> None:
        """Take `data` (parsed as `payload`) as the template if it is a text-only event whose
        text can be found in it unambiguously."""
        if self._learns >= MAX_LEARNS:
            return
        text = self._text_of(payload)
        if not text or PROBE in data:
            return
        self._learns += 1
        for literal in {json.dumps(text), json.dumps(text, ensure_ascii=False)}:
            start = data.find(literal)
            if start < 0 or data.find(literal, start + 1) >= 0:
                continue
            prefix, suffix = data[: start + 1], data[start + len(literal) - 1 :]
            try:
                probe = self._text_of(json.loads(prefix + PROBE + suffix))
            except ValueError:
                continue
            if probe == PROBE:
                self._prefix, self._suffix = prefix, suffix
                lines = "\n" in prefix + suffix or "\r" in prefix + suffix  # not one `data:` line
                self._frame = None if lines else (b"data: " + prefix.encode(), suffix.encode() + b"\n\n")
                self._frames = (
                    None
                    if self._frame is None
                    else re.compile(re.escape(self._frame[0]) + _LITERAL_BODY + re.escape(self._frame[1]))
                )
                return
