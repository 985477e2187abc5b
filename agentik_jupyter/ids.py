"""What a session id may be: `[A-Za-z0-9_-]{1,64}`, checked wherever one is read.

Ids come from the sessions file, and a project can ship that file. An id travels on into
URLs, terminals, the sidebar and (once) code the sidebar built, so anything but a plain token
is refused: rows with other ids are not listed or served, routes answer 400, the kernel
refuses to resume them. The ids agentik writes (`conv_` + 16 hex digits) always pass.
"""

from __future__ import annotations

import re
from typing import TypeGuard

from agentik_jupyter.errors import AgentikError

SESSION_ID_PATTERN = r"[A-Za-z0-9_-]{1,64}"
SESSION_ID_RULE = "a session id is 1 to 64 letters, digits, '_' or '-'"
_SESSION_ID = re.compile(SESSION_ID_PATTERN)
_SHOWN_CHARS = 40


class InvalidSessionIdError(AgentikError, ValueError):
    """Not a session id; the message shows the value escaped and clipped."""

    def __init__(self, value: object) -> None:
        super().__init__(f"not a session id: {shown(value)} ({SESSION_ID_RULE})")
        self.value = value


def is_session_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _SESSION_ID.fullmatch(value) is not None


def check_session_id(value: object) -> str:
    """The id itself, or InvalidSessionIdError."""
    if not is_session_id(value):
        raise InvalidSessionIdError(value)
    return value


def shown(value: object) -> str:
    """A value as an error message may show it: repr (newlines and controls escaped), clipped."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def valid_id_sql(column: str) -> str:
    """An SQL condition true when `column` holds a session id. The byte length equals the
    character length only for ASCII without NUL (SQLite's length() and GLOB stop at a NUL)."""
    return (
        f"(typeof({column}) = 'text' AND length(CAST({column} AS BLOB)) BETWEEN 1 AND 64"
        f" AND length(CAST({column} AS BLOB)) = length({column}) AND {column} NOT GLOB '*[^A-Za-z0-9_-]*')"
    )
