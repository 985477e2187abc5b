"""Server-sent events decoded from text, with a fast path for the usual one-event chunk.

Providers send each event in its own HTTP chunk, `data: {...}` and a blank line; that
case is recognised without splitting lines. Anything else (several events in a chunk,
an event cut across chunks, CR or CRLF line ends, `event:` lines, comments) goes through
the general parser of the WHATWG rules, and both give the same events as httpx2's
`EventSource` (tested on the recorded provider streams cut at every size).
"""

from __future__ import annotations

from agentik_jupyter.errors import MalformedResponseError
from agentik_jupyter.providers import _constants as C

Event = tuple[str, str]
"""(event name, data); the name is "message" when the event has none."""


class SSEDecoder:
    """Feed decoded text in order, get the events it completed; `close()` at the end."""

    def __init__(self, max_event_chars: int = C.MAX_SSE_EVENT_CHARS) -> None:
        self.max_event_chars = max_event_chars
        self._line: list[str] = []
        self._line_chars = 0
        self._cr = False
        self._event = ""
        self._data: list[str] = []
        self._event_chars = 0
        self._started = False

    def feed(self, text: str) -> list[Event]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if (
            text.startswith("data:")
            and text.endswith("\n\n")
            and text.find("\n") == len(text) - 2
            and not (self._line or self._data or self._event or self._cr)
            and "\r" not in text
            and len(text) <= self.max_event_chars
        ):
            value = text[5:-2]
            return [("message", value[1:] if value.startswith(" ") else value)]
        return self._general(text)

    @property
    def idle(self) -> bool:
        """Between events: nothing of a line, an event or a CRLF waits for more text."""
        return self._started and not (self._line or self._data or self._event or self._cr)

    def close(self) -> None:
        """The stream ended: an event without its blank line is dropped, as the standard says."""
        self._line, self._data, self._event = [], [], ""

    def _general(self, text: str) -> list[Event]:
        if self._cr:
            text, self._cr = "\r" + text, False
        if text.endswith("\r"):  # maybe the first half of a CRLF
            text, self._cr = text[:-1], True
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        last = lines.pop()
        out: list[Event] = []
        if lines:
            lines[0] = "".join(self._line) + lines[0]
            self._line, self._line_chars = [], 0
            for line in lines:
                self._take(line, out)
        if last:
            self._line.append(last)
            self._line_chars += len(last)
        self._check(self._line_chars)
        return out

    def _check(self, unfinished: int = 0) -> None:
        if self._event_chars + unfinished > self.max_event_chars:
            raise MalformedResponseError(
                f"The provider sent a malformed event stream: one event passed {self.max_event_chars:,} characters.",
                status=200,
                in_stream=True,
            )

    def _take(self, line: str, out: list[Event]) -> None:
        if not line:
            if self._data or self._event:
                out.append((self._event or "message", "\n".join(self._data)))
            self._event, self._data, self._event_chars = "", [], 0
            return
        if line.startswith(":"):
            return
        self._event_chars += len(line)
        self._check()
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
