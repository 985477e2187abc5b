"""Pieces of wire conversion that both adapters share: JSON schemas, tool results, arguments."""

from __future__ import annotations

import json
import re
from typing import Any

from agentik_jupyter.providers import _constants as C
from agentik_jupyter.types import ChatMessage, ToolParameter, ToolResult, ToolSchema


def parameter_schema(param: ToolParameter) -> dict[str, Any]:
    """The JSON schema of one parameter; an explicit `json_schema` wins over the short form."""
    if param.json_schema is not None:
        schema: dict[str, Any] = dict(param.json_schema)
        if param.description and "description" not in schema:
            schema["description"] = param.description
        return schema
    schema = {"type": param.type}
    if param.description:
        schema["description"] = param.description
    if param.enum is not None:
        schema["enum"] = list(param.enum)
    if param.type == "array":
        schema["items"] = {}
    return schema


def input_schema(tool: ToolSchema) -> dict[str, Any]:
    """The `{"type": "object", ...}` schema of a tool's arguments."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p.key: parameter_schema(p) for p in tool.parameters},
    }
    required = [p.key for p in tool.parameters if p.required]
    if required:
        schema["required"] = required
    return schema


def user_text(message: ChatMessage) -> str:
    """A question as the model reads it: its context note (where it was asked) first, then the words."""
    return f"{message.context_note}\n\n{message.content}" if message.context_note else message.content


def tool_result_text(result: ToolResult) -> str:
    """The string the model reads for a tool result; errors are prefixed so the model notices."""
    if result.error is not None:
        return f"Error: {result.error}"
    value = result.result
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def nesting_depth(raw: str) -> int:
    """How deep the brackets of a JSON text nest (strings skipped), without recursion."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub("", raw)):
        if match.group(0) in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """Parse tool-call arguments: `""`, `"null"` and missing mean `{}`.

    Returns (args, parse_error). Invalid or too deeply nested JSON gives `{}` and a
    message that validation reports back to the model instead of crashing the turn.
    """
    if raw is None or raw.strip() in ("", "null"):
        return {}, None
    depth = nesting_depth(raw)
    if depth > C.MAX_ARGUMENT_DEPTH:
        return {}, f"arguments nest {depth} levels deep; at most {C.MAX_ARGUMENT_DEPTH} are accepted"
    try:
        value: Any = json.loads(raw)
    except ValueError as exc:
        return {}, f"arguments are not valid JSON ({_reason(exc)})"
    except RecursionError:
        return {}, f"arguments nest too deeply; at most {C.MAX_ARGUMENT_DEPTH} levels are accepted"
    if isinstance(value, str):
        return parse_arguments(value)  # double-encoded; each level is shorter, so this ends
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, _not_object(value)
    return value, None


def _reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at position {exc.pos}"
    return str(exc)[:200]


def _not_object(value: Any) -> str:
    return f"arguments must be a JSON object, got {type(value).__name__}"
