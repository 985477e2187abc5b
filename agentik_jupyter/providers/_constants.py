"""Every number of the HTTP policy in one place, so they are tuned together."""

from __future__ import annotations

CONNECT_TIMEOUT_S: float = 10.0
"""Time to open a TCP/TLS connection; a dead host should fail fast."""

READ_TIMEOUT_S: float = 120.0
"""Longest silence between bytes: reasoning models can think a long time before the first token."""

MAX_READ_TIMEOUT_S: float = 3600.0
"""The largest `LLM_TIMEOUT` accepted."""

WRITE_TIMEOUT_S: float = 30.0
POOL_TIMEOUT_S: float = 10.0

MAX_RETRIES: int = 2
"""Retries after the first attempt, only before a stream has started."""

BACKOFF_BASE_S: float = 0.5
BACKOFF_CAP_S: float = 8.0
JITTER_FRACTION: float = 0.25
"""Each backoff is multiplied by a random factor in [1 - JITTER_FRACTION, 1]."""

MAX_RETRY_AFTER_S: float = 60.0
"""A server's retry-after longer than this is not waited for: the error is raised instead."""

RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 429})
"""Statuses worth another attempt, besides every 5xx (see `_http.is_retryable`)."""

ANTHROPIC_VERSION: str = "2023-06-01"
ANTHROPIC_DEFAULT_MAX_TOKENS: int = 4096

DEFAULT_OPENAI_BASE_URL: str = "https://api.openai.com/v1"
DEFAULT_ANTHROPIC_BASE_URL: str = "https://api.anthropic.com"

ERROR_BODY_PREVIEW_CHARS: int = 300
"""How much of an unparseable error body is quoted back to the user."""

MAX_ARGUMENT_DEPTH: int = 64
"""Tool-call arguments nested deeper than this are a parse error the model reads, checked
before decoding so no deep structure (or RecursionError) reaches the rest of the turn."""

MAX_ANSWER_CHARS: int = 1_000_000
"""Text, reasoning and tool-argument characters read from one answer (~250k tokens, past any
model's output limit); a provider sending more is broken, and reading on would stall the kernel."""

MAX_SSE_EVENT_CHARS: int = 1024 * 1024
"""One server-sent event's size at most (httpx2's own bound); a stream that never ends its
event is broken, and buffering it would fill the kernel's memory."""

MIN_TEMPLATE_RUN: int = 8
"""Chunks read in one go are matched against the text template together from this many on
(`OpenAIStream.feed_many`); fewer are read one by one."""

FEED_EVERY_CHUNKS: int = 256
"""The read-ahead task hands its chunks to the assembly at least this often while the network
keeps it busy (the answer's limit is checked then), else whenever the turn takes them."""
