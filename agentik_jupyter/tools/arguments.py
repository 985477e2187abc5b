"""Limits on a tool call's arguments: how deep they nest and how big they are.

A model (or a hostile prompt) can send arguments nested thousands of levels deep or
megabytes long. Past the limits below they are replaced by `{}` with a parse error
before the call is stored, approved or run, so the model reads a clear tool error and
the loop goes on; nothing deep reaches pydantic, JSON encoding or SQLite (where depth
300 failed the turn). The checks walk the value with an explicit stack: no recursion.
"""

from __future__ import annotations

from typing import Any

from agentik_jupyter.providers._constants import MAX_ARGUMENT_DEPTH
from agentik_jupyter.providers.base import ProviderToolCall

MAX_ARGUMENT_CHARS = 1_000_000
"""Characters of argument text (the raw JSON, or strings and keys once parsed)."""

MAX_ARGUMENT_NODES = 100_000
"""Values (objects, arrays, strings, numbers) in one call's arguments."""

_SCALAR_CHARS = 8  # what a number, boolean or null counts toward MAX_ARGUMENT_CHARS


def limit_problem(args: Any) -> str | None:
    """What makes `args` too deep or too big for a tool call, or None when within the limits.

    Never raises for any value, JSON or not (cycles end at the node limit).
    """
    stack: list[tuple[Any, int]] = [(args, 1)]
    nodes = 0
    chars = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if isinstance(value, dict):
            if depth > MAX_ARGUMENT_DEPTH:
                return depth_message()
            for key, item in value.items():
                chars += len(key) if isinstance(key, str) else _SCALAR_CHARS
                stack.append((item, depth + 1))
        elif isinstance(value, (list, tuple)):
            if depth > MAX_ARGUMENT_DEPTH:
                return depth_message()
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            chars += len(value)
        else:
            chars += _SCALAR_CHARS
        if chars > MAX_ARGUMENT_CHARS:
            return size_message()
        if nodes > MAX_ARGUMENT_NODES:
            return f"arguments hold more than {MAX_ARGUMENT_NODES:,} values; send fewer or smaller ones"
    return None


def depth_message() -> str:
    return f"arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep; send a flatter structure"


def size_message() -> str:
    return f"arguments are longer than {MAX_ARGUMENT_CHARS:,} characters; send less, or put large data in a variable"


def bound_arguments(calls: list[ProviderToolCall]) -> list[ProviderToolCall]:
    """The calls with any over-limit arguments replaced by `{}` and a parse error naming the limit.

    The error reaches the model through the same path as invalid JSON (validation.check_call),
    so the call is not run and the loop goes on.
    """
    out: list[ProviderToolCall] = []
    for call in calls:
        raw = call.arguments_raw
        problem = size_message() if raw is not None and len(raw) > MAX_ARGUMENT_CHARS else limit_problem(call.args)
        if problem is not None:
            call = call.model_copy(update={"args": {}, "arguments_raw": None, "parse_error": problem})
        out.append(call)
    return out
