"""Reading a provider's answer: server-sent events or one JSON body, decoded to JSON.

Shared by every adapter; what the JSON means is each wire format's own business.
A broken body becomes our typed error, and a stream error carries the answer
assembled so far (`partial`) so the user keeps what already arrived.
"""

from __future__ import annotations

import codecs
import json
from typing import Any, AsyncIterator, Callable

import httpx2

from . import _constants as C
from ._http import error_from_transport
from ._sse import SSEDecoder
from .errors import MalformedResponseError, StreamError


class AnswerLimit:
    """Counts what an answer delivers and stops it past `C.MAX_ANSWER_CHARS` (the error carries
    the part that arrived): a runaway provider must not fill the kernel's memory and widgets."""

    def __init__(self, partial: Callable[[], Any], limit: int = C.MAX_ANSWER_CHARS) -> None:
        self.partial = partial
        self.limit = limit
        self.chars = 0

    def count(self, deltas: list[Any]) -> list[Any]:
        for delta in deltas:
            text = getattr(delta, "text", None)
            if isinstance(text, str):
                self.chars += len(text)
        if self.chars > self.limit:
            err = StreamError(
                f"The answer passed {self.limit:,} characters, more than any model writes in one answer; "
                "stopped reading it.",
                status=200,
                in_stream=True,
            )
            err.partial = self.partial()
            raise err
        return deltas


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


async def json_events(
    response: httpx2.Response,
    url: str,
    *,
    api: str,
    partial: Callable[[], Any],
    done: str | None = None,
    on_done: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[str, Any]]:
    """(event name, decoded data) for each server-sent event with data, until the stream ends
    or `done` (then `on_done()` is called, so the caller can tell a finished stream from a cut one).

    The body is UTF-8 whatever its charset says (the SSE standard). A broken or timed-out body
    becomes our typed error; an event that is not JSON raises with `partial()` attached; a
    stream that ends without any data says which API the base URL was expected to serve.
    """
    seen = False
    decoder = SSEDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    try:
        async for chunk in response.aiter_bytes():
            for name, raw in decoder.feed(utf8.decode(chunk)):
                data = raw.strip()
                if done is not None and data == done:
                    if on_done is not None:
                        on_done()
                    return
                if not data:
                    continue
                seen = True
                try:
                    payload = json.loads(data)
                except ValueError:
                    err = malformed("a stream event", raw, in_stream=True)
                    err.partial = partial()
                    raise err from None
                yield name, payload
    except httpx2.HTTPError as exc:
        raise error_from_transport(exc, url, in_stream=True) from None
    decoder.feed(utf8.decode(b"", final=True))
    decoder.close()
    if not seen:
        raise MalformedResponseError(
            f"The provider's event stream ended without any data. Is LLM_BASE_URL an {api}?",
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
