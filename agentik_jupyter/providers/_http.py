"""The HTTP policy shared by every adapter: client, timeouts, retries, error mapping.

Retries happen only before a response body is handed to the adapter. Once the
adapter has started reading a stream, a broken connection is an error the user
sees (`StreamError`), never a silent second request that could duplicate output.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import random
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2

from agentik_jupyter.errors import (
    AuthenticationError,
    BadRequestError,
    MalformedResponseError,
    NotFoundError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    RedirectError,
    ServerError,
    StreamError,
)
from agentik_jupyter.providers import _constants as C
from agentik_jupyter.security.urls import redact_url

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Timeouts:
    """Connect and read timeouts; tests pass small ones instead of sleeping long."""

    connect: float = C.CONNECT_TIMEOUT_S
    read: float = C.READ_TIMEOUT_S
    write: float = C.WRITE_TIMEOUT_S
    pool: float = C.POOL_TIMEOUT_S

    def to_httpx(self) -> httpx2.Timeout:
        return httpx2.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.pool)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait; `sleep` and `rand` are injectable for fast tests."""

    max_retries: int = C.MAX_RETRIES
    backoff_base: float = C.BACKOFF_BASE_S
    backoff_cap: float = C.BACKOFF_CAP_S
    jitter: float = C.JITTER_FRACTION
    max_retry_after: float = C.MAX_RETRY_AFTER_S
    sleep: Sleep = field(default=asyncio.sleep, compare=False)
    rand: Callable[[], float] = field(default=random.random, compare=False)

    def backoff(self, retry_number: int) -> float:
        """Exponential backoff for the n-th retry (1-based), with downward jitter."""
        base = min(self.backoff_cap, self.backoff_base * (2 ** (retry_number - 1)))
        return base * (1 - self.jitter * self.rand())

    def delay_for(self, error: ProviderError, retry_number: int) -> float | None:
        """Seconds to wait before retrying `error`, or None if it must not be retried."""
        if retry_number > self.max_retries or not is_retryable(error):
            return None
        if error.retry_after is not None:
            if error.retry_after > self.max_retry_after:
                return None
            return max(0.0, error.retry_after)
        return self.backoff(retry_number)


NO_RETRY = RetryPolicy(max_retries=0)


def is_retryable(error: ProviderError) -> bool:
    """408/409/429/5xx and failures to connect; never anything after a stream started."""
    if error.in_stream:
        return False
    if isinstance(error, ProviderConnectionError):
        return True
    if error.status is None:
        return False
    return error.status in C.RETRY_STATUSES or error.status >= 500


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """Loading CA certificates takes ~0.1 s; do it once per process, not once per client."""
    return httpx2.create_ssl_context(trust_env=True)


def make_client(timeouts: Timeouts | None = None) -> httpx2.AsyncClient:
    """One pooled client per adapter; `trust_env` keeps corporate proxy settings working.

    Redirects are never followed: the request carries the key and the conversation, and a
    3xx could send both to another origin (see `redirect_error`)."""
    return httpx2.AsyncClient(
        timeout=(timeouts or Timeouts()).to_httpx(), follow_redirects=False, verify=_ssl_context()
    )


def redirect_error(status: int, url: str, location: str | None) -> RedirectError:
    """A 3xx as a typed error naming the status and the target's origin (never its path or query)."""
    try:
        target = httpx2.URL(url).join(location or "")
        where = f"{target.scheme}://{target.host}" + (f":{target.port}" if target.port else "")
    except Exception:
        where = "an unreadable address"
    return RedirectError(
        f"The provider answered HTTP {status}, a redirect to {where}. Requests carrying LLM_API_KEY "
        "never follow redirects: set LLM_BASE_URL to the final address if you trust it.",
        status=status,
    )


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds from `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))


def error_details(body: Any) -> tuple[str | None, str | None, Any]:
    """(message, type, code) from the error bodies OpenAI, Anthropic, vLLM and others send."""
    if not isinstance(body, dict):
        return None, None, None
    err = body.get("error")
    if isinstance(err, dict):
        message = err.get("message")
        return (str(message) if message is not None else None), err.get("type"), err.get("code")
    if isinstance(err, str):
        return err, body.get("type") if isinstance(body.get("type"), str) else None, body.get("code")
    for key in ("message", "detail"):
        if body.get(key):
            value = body[key]
            return (value if isinstance(value, str) else json.dumps(value)), body.get("type"), body.get("code")
    return None, None, None


def _body_message(raw: bytes) -> tuple[str, str | None]:
    try:
        parsed = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        text = raw.decode("utf-8", "replace").strip()
        return text[: C.ERROR_BODY_PREVIEW_CHARS], None
    message, error_type, _ = error_details(parsed)
    if message is None:
        return raw.decode("utf-8", "replace").strip()[: C.ERROR_BODY_PREVIEW_CHARS], error_type
    return message, error_type


def error_from_status(status: int, raw_body: bytes, headers: Mapping[str, str]) -> ProviderError:
    """Map an HTTP error response to a typed error with a short, actionable message."""
    message, error_type = _body_message(raw_body)
    said = f": {message}" if message else ""
    retry_after = parse_retry_after(headers)
    kwargs: dict[str, Any] = {"status": status, "error_type": error_type, "retry_after": retry_after}
    if status == 401:
        return AuthenticationError(f"Authentication failed (HTTP 401){said}. Check LLM_API_KEY.", **kwargs)
    if status == 403:
        return PermissionDeniedError(
            f"Permission denied (HTTP 403){said}. Check that LLM_API_KEY may use this model.", **kwargs
        )
    if status == 404:
        return NotFoundError(
            f"Not found (HTTP 404){said}. Model not found? Check LLM_MODEL (and LLM_BASE_URL).", **kwargs
        )
    if status in (400, 422):
        return BadRequestError(f"The provider rejected the request (HTTP {status}){said}", **kwargs)
    if status == 429:
        wait = f" The provider asks to wait {retry_after:g} s." if retry_after is not None else ""
        return RateLimitError(f"Rate limited (HTTP 429){said}.{wait} Wait a moment and try again.", **kwargs)
    if status >= 500:
        return ServerError(f"The provider failed (HTTP {status}){said}. Try again later.", **kwargs)
    return ProviderError(f"The provider answered HTTP {status}{said}", **kwargs)


def error_from_event(payload: Any, *, partial: Any = None, in_stream: bool = True) -> StreamError:
    """An `error` object inside a 200 stream: the answer stopped, the user must see why."""
    message, error_type, _ = error_details(payload)
    text = message or json.dumps(payload)[: C.ERROR_BODY_PREVIEW_CHARS]
    err = StreamError(
        f"The provider reported an error during the answer: {text}",
        status=200,
        error_type=error_type,
        in_stream=in_stream,
    )
    err.partial = partial
    return err


def error_from_transport(exc: Exception, url: str, *, in_stream: bool) -> ProviderError:
    """Map an httpx2 exception; `in_stream` says whether the body had started arriving.

    The URL is named without its userinfo and query values (a proxy password, `?api-key=`):
    redacted here, where it is known whole, since the error's own pass finds URLs in free text
    by a pattern that ends at a space or a quote, which a password can hold. The error scrubs
    the rest of its message (`detail` too)."""
    detail = str(exc) or type(exc).__name__
    url = redact_url(url)
    if isinstance(exc, httpx2.SSEError):
        return MalformedResponseError(f"The provider sent a malformed event stream: {detail}", in_stream=in_stream)
    if isinstance(exc, httpx2.ConnectTimeout):
        return ProviderConnectionError(
            f"Timed out connecting to {url}. Check LLM_BASE_URL and your network.", in_stream=in_stream
        )
    if isinstance(exc, httpx2.TimeoutException):
        return ProviderTimeoutError(
            f"The provider at {url} did not answer in time ({type(exc).__name__}). Try again, or use a faster model.",
            in_stream=in_stream,
            status=200 if in_stream else None,
        )
    if in_stream:
        return StreamError(
            f"The connection to the provider broke while the answer was streaming ({detail}). "
            "The answer is incomplete; send the message again.",
            status=200,
            in_stream=True,
        )
    if isinstance(exc, (httpx2.ConnectError, httpx2.NetworkError, httpx2.RemoteProtocolError)):
        return ProviderConnectionError(
            f"Could not reach the provider at {url} ({detail}). Check LLM_BASE_URL and that the server is running.",
        )
    return ProviderConnectionError(f"HTTP request to {url} failed ({detail}).")


def json_request(
    client: httpx2.AsyncClient, url: str, headers: Mapping[str, str], body: dict[str, Any] | bytes
) -> httpx2.Request:
    """The POST of a JSON body; given as bytes, sent with the same headers in the same order
    as httpx2's `json=` (Content-Length, then Content-Type, after the caller's)."""
    if not isinstance(body, bytes):
        return client.build_request("POST", url, headers=headers, json=body)
    request = client.build_request("POST", url, headers=headers, content=body)
    request.headers["Content-Type"] = "application/json"
    return request


@asynccontextmanager
async def open_response(
    client: httpx2.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str],
    body: dict[str, Any] | bytes,
    retry: RetryPolicy,
) -> AsyncIterator[httpx2.Response]:
    """POST `body` (a JSON value, or its bytes) and yield a successful streaming response,
    retrying per `retry`.

    Errors raised while the caller reads the body are not retried here.
    """
    attempt = 0
    while True:
        try:
            response = await client.send(json_request(client, url, headers, body), stream=True, follow_redirects=False)
        except httpx2.HTTPError as exc:
            error = error_from_transport(exc, url, in_stream=False)
        else:
            if 300 <= response.status_code < 400:
                location = response.headers.get("location")
                await response.aclose()
                raise redirect_error(response.status_code, url, location)
            if response.status_code < 400:
                try:
                    yield response
                finally:
                    await response.aclose()
                return
            try:
                raw = await response.aread()
            except httpx2.HTTPError:
                raw = b""
            finally:
                await response.aclose()
            error = error_from_status(response.status_code, raw, response.headers)
        attempt += 1
        delay = retry.delay_for(error, attempt)
        if delay is None:
            raise error
        await retry.sleep(delay)


def close_on_its_loop(close: Callable[[], Coroutine[Any, Any, None]], loop: asyncio.AbstractEventLoop | None) -> None:
    """Run `close()` (a client's or adapter's aclose) on the loop its client was made on.

    A client cannot be closed from another loop; if its loop is gone its sockets went with it.
    """
    if loop is None or loop.is_closed():
        return
    try:
        current = asyncio.get_running_loop()
    except RuntimeError:
        current = None
    if loop is current:
        task = loop.create_task(close())
        _closing.add(task)
        task.add_done_callback(_closing.discard)
    elif loop.is_running():
        asyncio.run_coroutine_threadsafe(close(), loop)


_closing: set[asyncio.Task[None]] = set()
"""Close tasks in flight, kept so they are not garbage-collected before they finish."""


class ClientHolder:
    """Owns the adapter's httpx2 client, one per event loop (a client cannot cross loops)."""

    def __init__(self, client: httpx2.AsyncClient | None, timeouts: Timeouts | None) -> None:
        self._timeouts = timeouts
        self._client = client
        self._owned = client is None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> httpx2.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or (self._owned and self._loop is not loop):
            if self._client is not None:
                close_on_its_loop(self._client.aclose, self._loop)
            self._client = make_client(self._timeouts)
            self._loop = loop
        return self._client

    def close_soon(self) -> None:
        """Close the owned client without awaiting (for an adapter dropped from a cache)."""
        if self._owned and self._client is not None:
            close_on_its_loop(self._client.aclose, self._loop)
        self._client = None

    async def aclose(self) -> None:
        if not self._owned or self._client is None:
            return
        if self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        else:
            close_on_its_loop(self._client.aclose, self._loop)
        self._client = None
