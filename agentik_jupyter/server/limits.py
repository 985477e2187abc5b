"""How much the chat route reads: a byte cap on the request body, answered with 413.

The chat route holds the server's LLM key, so any logged-in client can make it parse, validate
and forward whatever it sends; 60 MB bodies were read whole into memory. A Content-Length over
the cap is refused before the body is read; a chunked body (no length) is read to its end, but
nothing past the cap is kept, and then refused. Jupyter's own max_body_size still bounds both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

MAX_BODY_ENV = "AGENTIK_MAX_BODY_BYTES"
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


def max_body_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The cap from AGENTIK_MAX_BODY_BYTES (a positive number of bytes), else 8 MiB."""
    raw = (os.environ if environ is None else environ).get(MAX_BODY_ENV, "").strip()
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_BODY_BYTES
    return value if value > 0 else DEFAULT_MAX_BODY_BYTES


def human_size(n: int) -> str:
    """8388608 -> '8 MiB', 65536 -> '64 KiB', 1000 -> '1,000 bytes'."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % (size // 16 or 1) == 0:
            return f"{n / size:g} {unit}"
    return f"{n:,} bytes"


def too_large_body(cap: int, length: int | None = None) -> dict[str, Any]:
    """The 413 reply: the limit, and how the operator raises it."""
    sent = f" ({human_size(length)})" if length is not None else ""
    return {
        "error": "Request body too large",
        "message": f"the request body{sent} is over this server's limit of {human_size(cap)}; "
        f"the server's operator can raise it with {MAX_BODY_ENV}",
    }
