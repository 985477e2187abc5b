"""Reading a provider's answer: server-sent events or one JSON body, decoded to JSON.

Shared by every adapter; what the JSON means is each wire format's own business.
A broken body becomes our typed error, and a stream error carries the answer
assembled so far (`partial`) so the user keeps what already arrived.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx2

from agentik_jupyter.errors import MalformedResponseError, StreamError
from agentik_jupyter.providers import _constants as C
from agentik_jupyter.providers._http import error_from_transport
from agentik_jupyter.providers._sse import SSEDecoder


class AnswerLimit:
    """Counts what an answer delivers and stops it past `C.MAX_ANSWER_CHARS` (the error carries
    the part that arrived): a runaway provider must not fill the kernel's memory and widgets."""

    def __init__(self, partial: Callable[[], Any], limit: int = C.MAX_ANSWER_CHARS) -> None:
        self.partial = partial
        self.limit = limit
        self.chars = 0

    def count(self, deltas: list[Any]) -> list[Any]:
        chars = 0
        for delta in deltas:
            text = getattr(delta, "text", None)
            if isinstance(text, str):
                chars += len(text)
        self.add(chars)
        return deltas

    def add(self, chars: int) -> None:
        """Count `chars` more characters of the answer; past the limit, stop it."""
        self.chars += chars
        if self.chars > self.limit:
            err = StreamError(
                f"The answer passed {self.limit:,} characters, more than any model writes in one answer; "
                "stopped reading it.",
                status=200,
                in_stream=True,
            )
            err.partial = self.partial()
            raise err


def cut_short(missing: str, partial: Any) -> StreamError:
    """A stream that ended before its wire format's last event (`missing`), with what arrived."""
    err = StreamError(
        f"The provider's stream ended before the answer was complete ({missing}). "
        "The answer is incomplete; send the message again.",
        status=200,
        in_stream=True,
    )
    err.partial = partial
    return err


def malformed(what: str, raw: str, *, in_stream: bool) -> MalformedResponseError:
    """A body or event that is not the JSON the wire format promises."""
    preview = raw[: C.ERROR_BODY_PREVIEW_CHARS]
    return MalformedResponseError(
        f"The provider sent {what} that is not valid JSON: {preview!r}. "
        "Check LLM_BASE_URL and LLM_PROVIDER match the server.",
        status=200,
        in_stream=in_stream,
    )


def is_event_stream(response: httpx2.Response) -> bool:
    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    return content_type == "text/event-stream"


class EventDecoder:
    """The bytes of an event stream in, (event name, decoded JSON) out, for each event with data.

    The body is UTF-8 whatever its charset says (the SSE standard). `done` is the data that
    ends the stream (OpenAI's `[DONE]`): after it `self.done` is set and nothing more is read.
    An event that is not JSON raises with `partial()` attached; a stream that ends without any
    data says (in `end()`) which API the base URL was expected to serve.
    """

    def __init__(self, *, api: str, partial: Callable[[], Any], done: str | None = None) -> None:
        self.api = api
        self.partial = partial
        self.done_marker = done
        self.done = False
        self.seen = False
        self._sse = SSEDecoder()
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, chunk: bytes) -> Iterator[tuple[str, Any]]:
        """The events these bytes complete, one at a time: the caller takes each before a bad one raises."""
        for name, data in self.data(chunk):
            yield name, self.parse(data)

    def data(self, chunk: bytes) -> Iterator[tuple[str, str]]:
        """The events these bytes complete as (name, data) strings, for `parse` or a faster reading."""
        for name, raw in self._sse.feed(self._utf8.decode(chunk)):
            data = raw.strip()
            if self.done_marker is not None and data == self.done_marker:
                self.done = True
                return
            if data:
                self.seen = True
                yield name, data

    @property
    def idle(self) -> bool:
        """Between events, with no partial character or line waiting: a chunk that is one whole
        `data: …` event may then be read without the decoders (`TextTemplate.frame`)."""
        return self._sse.idle and not self._utf8.getstate()[0]

    def parse(self, data: str) -> Any:
        """One event's JSON; an event that is not JSON raises with the answer so far attached."""
        try:
            return json.loads(data)
        except ValueError:
            err = malformed("a stream event", data, in_stream=True)
            err.partial = self.partial()
            raise err from None

    def end(self) -> None:
        """The body ended (an event without its blank line is dropped, as the standard says)."""
        self._sse.close()
        if not self.seen and not self.done:
            raise MalformedResponseError(
                f"The provider's event stream ended without any data. Is LLM_BASE_URL an {self.api}?",
                status=200,
                in_stream=True,
            )


async def read_json_object(response: httpx2.Response, url: str) -> dict[str, Any]:
    """The whole body of a non-streaming answer, which must be a JSON object."""
    try:
        raw = await response.aread()
    except httpx2.HTTPError as exc:
        raise error_from_transport(exc, url, in_stream=True) from None
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise malformed("a response body", raw.decode("utf-8", "replace"), in_stream=False) from None
    if not isinstance(body, dict):
        raise MalformedResponseError(
            f"The provider's answer is not a JSON object: {json.dumps(body)[:200]}", status=200
        )
    return body
