"""URLs that carry credentials: shown without them, and their secret parts known to the scrubber.

A base URL can hold a credential that is not LLM_API_KEY: a proxy's `user:password@` or a key
in the query (`?api-key=…`, `?key=…`). `redact_url` is how every URL is shown or logged
(userinfo and query values replaced with `***`, names and host kept); `url_secrets` lists the
parts the scrubber masks wherever they slip through anyway.
"""

from __future__ import annotations

import re
import urllib.parse

from agentik_jupyter.security.pieces import PIECE_CHARS

REDACTED = "***"
URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
"""A URL inside free text (an error message, a log line)."""
SECRET_PARAM = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|SIG|AUTH|CODE|CREDENTIAL", re.I)
"""Query parameter names whose values are credentials (`api-key`, `access_token`, `sig`, `code`…)."""


def _split(url: str) -> urllib.parse.SplitResult | None:
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return None
    return parts if parts.scheme and parts.netloc else None


def _host(parts: urllib.parse.SplitResult) -> str:
    return parts.netloc.rpartition("@")[2]


def redact_url(url: str) -> str:
    """`url` with its userinfo and every query value replaced by `***` and the fragment dropped;
    anything that is not a `scheme://host…` URL is returned as it is."""
    parts = _split(url)
    if parts is None:
        return url
    netloc = _host(parts)
    if "@" in parts.netloc:
        netloc = f"{REDACTED}@{netloc}"
    query = "&".join(
        f"{name}={REDACTED}" if sep else name
        for name, sep, _ in (p.partition("=") for p in parts.query.split("&") if p)
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact_urls(text: str) -> str:
    """`text` with every URL in it redacted (`redact_url`)."""
    if "://" not in text:
        return text
    return URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def url_secrets(value: str, secret_name: bool, min_chars: int) -> list[str]:
    """The parts of URL `value` to mask: its userinfo password, `user:password@`, and each secret
    query value with its `name=value` (every query value when the variable's name is secret, and
    then a username, path and path segment of PIECE_CHARS or more too). A part shorter than `min_chars` is
    masked only with its context (`key=abc`), never alone; shorter still, not at all (`redact_url`
    keeps it out of what is shown). Empty when `value` is not a URL or carries no credential."""
    parts = _split(value)
    if parts is None:
        return []
    found: list[str] = []
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    user, has_password, password = userinfo.partition(":")
    if has_password and password:
        found.append(f"{userinfo}@")
        found.append(password)
    for name, sep, raw in (p.partition("=") for p in parts.query.split("&") if p):
        if sep and raw and (secret_name or SECRET_PARAM.search(name)):
            found.append(f"{name}={raw}")
            found.append(raw)
    if secret_name:  # a DSN's key is its username, a webhook's token is in its path
        rest = parts.path + (f"?{parts.query}" if parts.query else "")
        found.extend(p for p in (user, rest, *parts.path.split("/")) if len(p) >= PIECE_CHARS)
    for part in list(found):
        decoded = urllib.parse.unquote(part)
        if decoded != part:
            found.append(decoded)
    return [p for p in found if len(p) >= min_chars]
