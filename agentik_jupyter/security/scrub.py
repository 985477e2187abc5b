"""One scrubber for everything that leaves the agent: tool results, errors, rows, replies, logs.

It masks the configured key (`LLM_API_KEY`), the values of environment variables whose names
look secret, and the credentials in any variable that holds a URL (`user:password@`, `?key=`),
in the forms a value takes on its way out: raw, escaped (repr, JSON, unicode escapes),
HTML-escaped, URL-encoded and base64 (also inside a longer base64 text such as `user:key`).
Any 12-character piece of a secret is masked too (pieces.py), so a value cut short on its way
out rebuilds nothing. Each is replaced with `[hidden: NAME]` so the model can tell the user what
it could not see. The environment is read at every call (a key set with `%env` mid-session
counts at once); what to look for is built once per set of values.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import logging
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentik_jupyter.security.pieces import PIECE_CHARS, PieceIndex, aligned_grams, grams_of, piece_sources
from agentik_jupyter.security.urls import url_secrets

KEY_VARIABLE = "LLM_API_KEY"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|DSN|CREDENTIAL|WEBHOOK", re.I)
"""Environment variable names whose values are treated as secrets (PASS covers PASSWORD, PASSWD)."""
LOCATION_NAME = re.compile(r"^(OLD)?PWD$|ASKPASS|_(DIR|FILE|PATH)S?$", re.I)
"""Names that match SECRET_NAME but hold a place, not a secret: the shell's working directory,
an askpass program, `*_KEY_FILE`, `*_TOKEN_PATH`, `CACHE_KEY_DIR`."""
MIN_SECRET_CHARS = 6
"""Shorter values are not masked: masking `true` or `1` would mangle ordinary text and protect nothing."""
_PATH = re.compile(r"~?/[^/]*/")
"""A value that starts like a filesystem path of two or more parts (`/a/b`, `~/a/b`)."""
MIN_EMBEDDED_B64_CHARS = 12
"""A base64 fragment shorter than this could match ordinary text by chance."""
MAX_SCRUB_DEPTH = 32
"""Nested structures deeper than this are masked through their JSON text instead."""
PATTERN_CACHE_SIZE = 8
LOGGER_NAME = "agentik_jupyter"

Secrets = tuple[tuple[str, str], ...]


def mask(name: str) -> str:
    return f"[hidden: {name}]"


@functools.lru_cache(maxsize=1024)
def _secret_name(name: str) -> bool:
    return name != KEY_VARIABLE and SECRET_NAME.search(name) is not None and LOCATION_NAME.search(name) is None


_seen: tuple[dict[Any, Any], Secrets] | None = None
"""The process environment's raw data when last read, and its secrets (see `current_secrets`)."""
_held: Secrets = ()
"""Secrets this process keeps outside its environment (the Jupyter server holds the provider's key
so that kernels don't inherit it); masked like the environment's own."""


def hold_secrets(environ: Mapping[str, str]) -> None:
    """Mask these values too, from now on in this process, although they left `os.environ`."""
    global _held, _seen
    found = [pair for pair in _read_secrets(environ) if pair not in _held]
    _held = (*_held, *found)
    _seen = None


def current_secrets(environ: Mapping[str, str] | None = None) -> Secrets:
    """(name, value) pairs to mask, the configured key first.

    The process environment is read again only when it changed since the last call, which is
    told by comparing its raw data with a copy (in C, ~50x faster than reading it): a turn
    scrubs what leaves it a dozen times."""
    global _seen
    if environ is None:
        data = getattr(os.environ, "_data", None)  # (CPython's store behind os.environ)
        if isinstance(data, dict):
            seen = _seen
            if seen is not None and seen[0] == data:
                return seen[1]
            secrets = _with_held(_read_secrets(os.environ))
            _seen = (dict(data), secrets)
            return secrets
    return _with_held(_read_secrets(os.environ if environ is None else environ))


def _with_held(secrets: Secrets) -> Secrets:
    if not _held:
        return secrets
    return (*secrets, *(pair for pair in _held if pair not in secrets))


def _read_secrets(env: Mapping[str, str]) -> Secrets:
    """The key; every value of MIN_SECRET_CHARS or more under a secret name (whatever it looks
    like: digits, a path, a URL); and a URL's credentials under any name, with the whole URL."""
    found: list[tuple[str, str]] = []
    key = (env.get(KEY_VARIABLE) or "").strip()
    if len(key) >= MIN_SECRET_CHARS:
        found.append((KEY_VARIABLE, key))
    for name, value in env.items():
        value = value.strip()
        if name == KEY_VARIABLE or len(value) < MIN_SECRET_CHARS:
            continue
        secret = _secret_name(name)
        parts = url_secrets(value, secret, MIN_SECRET_CHARS) if "://" in value else []
        if secret or parts:
            found.append((name, value))
        found.extend((name, part) for part in parts)
    return tuple(found)


def _embedded_b64(data: bytes, encode: Callable[[bytes], bytes]) -> set[str]:
    """Fragments that appear in the base64 of any text containing `data`, at each of the
    three byte alignments (so `user:key` and `Basic …` headers are caught too)."""
    out: set[str] = set()
    for offset in range(3):
        encoded = encode(b"\0" * offset + data).decode()
        head = -(-8 * offset // 6)  # the first character made of the value's bits only
        tail = 8 * (offset + len(data)) // 6  # past the last such character
        fragment = encoded[head:tail]
        if len(fragment) >= MIN_EMBEDDED_B64_CHARS:
            out.add(fragment)
    return out


_BOTH_QUOTES = "\"'"
"""Put before a value, it makes repr() quote with `'` and escape every `'` (and not `"`)."""


def _literal_bodies(value: str) -> set[str]:
    """`value` as the inside of a string literal: repr() with its `'` escaped or not (that depends
    on the quotes of the whole text repr'd, as in a dict or an error holding a `"`), ascii(),
    JSON (also with `/` written `\\/`, as some encoders do) and unicode escapes."""
    escape_all = len(_BOTH_QUOTES) + 2  # `'"\'` opens the repr of _BOTH_QUOTES + value
    as_json = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    return {
        value,
        repr(value)[1:-1],
        repr(_BOTH_QUOTES + value)[escape_all:-1],
        ascii(value)[1:-1],
        ascii(_BOTH_QUOTES + value)[escape_all:-1],
        value.encode("unicode_escape").decode("ascii"),
        *as_json,
        *(j.replace("/", "\\/") for j in as_json),
    }


def escaped_forms(value: str) -> set[str]:
    """`value` raw, as a literal's body, and as the body of a literal of that (a repr inside
    JSON, JSON inside a repr, a repr of a repr), each also HTML-escaped."""
    once = _literal_bodies(value)
    twice = set(once)
    for body in once:
        if body != value:
            twice |= _literal_bodies(body)
    return twice | {html.escape(e) for e in twice}


def forms(value: str) -> set[str]:
    """The ways `value` can be written in text that leaves the kernel."""
    out = escaped_forms(value)
    out |= {urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value), urllib.parse.quote(value)}
    data = value.encode()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode()
        out |= {whole, whole.rstrip("=")}
        out |= _embedded_b64(data, encode)
    return {f for f in out if f}


def _piece_forms(value: str) -> set[str]:
    """What pieces are taken from: the value's long parts raw, escaped as a literal's body (a cut
    repr or JSON text) and in base64 (a cut base64 text).

    Not a URL's (its secret parts are entries of their own: urls.url_secrets) nor a path's: a
    path's pieces (`/run/user/1000/…` of GNOME_KEYRING_CONTROL) are in every other path there."""
    if "://" in value or _PATH.match(value):
        return set()
    out: set[str] = set()
    for source in piece_sources(value):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            out |= _embedded_b64(source.encode(), encode)
    for form in escaped_forms(value):  # (a value without quotes or backslashes has one: itself)
        out.update(piece_sources(form))
    return out


@dataclass(frozen=True)
class Masks:
    """What to look for, built once per set of secrets: every whole form, and the pieces."""

    pattern: re.Pattern[str] | None
    names: dict[str, str]
    """Each whole form and the name it is masked with."""
    form_grams: frozenset[str]
    """Every gram of the forms of PIECE_CHARS or more: one holds an aligned gram of the text."""
    anchors: tuple[str, ...]
    """The first characters of the shorter forms: a fast substring test for them."""
    pieces: PieceIndex

    def apply(self, text: str) -> str:
        """`text` with every whole form, then every remaining piece, masked.

        One pass takes the text's aligned grams; the regex runs only if they meet a form's
        grams (or a short form's anchor is in the text), and the pieces start from them too."""
        if not text or self.pattern is None:
            return text
        grams = aligned_grams(text)
        if not grams.isdisjoint(self.form_grams) or any(a in text for a in self.anchors):
            names = self.names
            masked = self.pattern.sub(lambda m: mask(names[m.group(0)]), text)
            if masked != text:
                text, grams = masked, aligned_grams(masked)
        return self.pieces.mask(text, mask, grams) if self.pieces else text


@functools.lru_cache(maxsize=PATTERN_CACHE_SIZE)
def masks_for(secrets: Secrets) -> Masks:
    """The Masks of `secrets` (cached: the environment rarely changes within a session)."""
    names: dict[str, str] = {}
    sources: list[tuple[str, str]] = []
    for name, value in secrets:
        for form in forms(value):
            names.setdefault(form, name)
        sources.extend((name, f) for f in sorted(_piece_forms(value)))
    pattern = None
    if names:
        pattern = re.compile("|".join(re.escape(a) for a in sorted(names, key=len, reverse=True)))
    form_grams = grams_of(form for form in names if len(form) >= PIECE_CHARS)
    anchors = tuple(sorted({form[:MIN_SECRET_CHARS] for form in names if len(form) < PIECE_CHARS}))
    return Masks(pattern, names, form_grams, anchors, PieceIndex(sources))


def scrub(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every secret (in any of its forms, or a piece of it) replaced by `[hidden: NAME]`."""
    if not text:
        return text
    return masks_for(current_secrets(environ)).apply(text)


def scrub_value(value: Any, environ: Mapping[str, str] | None = None, _depth: int = 0) -> Any:
    """A JSON-like value (tool result, MIME bundle) with every string scrubbed."""
    if isinstance(value, str):
        return scrub(value, environ)
    if _depth > MAX_SCRUB_DEPTH:
        return json.loads(scrub(json.dumps(value, default=str), environ))
    if isinstance(value, dict):
        return {
            scrub(k, environ) if isinstance(k, str) else k: scrub_value(v, environ, _depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [scrub_value(v, environ, _depth + 1) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return scrub(str(value), environ)


def scrub_result(result: Any) -> Any:
    """A ToolResult with its text, error and display bundle scrubbed (a copy; the input is kept)."""
    return result.model_copy(
        update={
            "result": scrub_value(result.result),
            "error": scrub(result.error) if result.error is not None else None,
            "display": scrub_value(result.display) if result.display is not None else None,
        }
    )


def scrub_response(response: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A model's assembled answer (ProviderChatResponse) with its text, reasoning, tool-call
    arguments and content blocks scrubbed (a copy): what is shown and kept is what was streamed."""

    def text(value: str | None) -> str | None:
        return scrub(value, environ) if value else value

    calls = [
        c.model_copy(
            update={
                "args": scrub_value(c.args, environ),
                "arguments_raw": text(c.arguments_raw),
                "parse_error": text(c.parse_error),
            }
        )
        for c in response.tool_calls
    ]
    blocks = response.content_blocks
    return response.model_copy(
        update={
            "content": text(response.content),
            "reasoning": text(response.reasoning),
            "tool_calls": calls,
            "content_blocks": scrub_value(blocks, environ) if blocks else blocks,
        }
    )


class SecretFilter(logging.Filter):
    """Masks secrets in a log record's message, arguments, traceback and stack."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


_FILTER = SecretFilter()


def _package_record_factory(previous: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.name == LOGGER_NAME or record.name.startswith(LOGGER_NAME + "."):
            _FILTER.filter(record)
        return record

    factory.agentik_scrub = True  # type: ignore[attr-defined]
    return factory


def scrubbed_logger(parent: logging.Logger, suffix: str = "agentik") -> logging.Logger:
    """A child of `parent` whose records are masked; they still reach `parent`'s handlers.

    The Jupyter server's handlers log to the server's own logger (and so does its access
    log, through `handler.log`), which the package's filter does not see: our handlers log
    to this child instead, so their lines look the same and carry no secret.
    """
    child = parent.getChild(suffix)
    if _FILTER not in child.filters:
        child.addFilter(_FILTER)
    return child


def install_log_filter() -> None:
    """Mask secrets in every record of the package's loggers, once per process.

    A filter on a logger does not see its children's records, so the same filter also runs
    where records are made (the record factory), for `agentik_jupyter.*` names only.
    """
    logger = logging.getLogger(LOGGER_NAME)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    current = logging.getLogRecordFactory()
    if not getattr(current, "agentik_scrub", False):
        logging.setLogRecordFactory(_package_record_factory(current))
