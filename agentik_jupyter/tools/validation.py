"""Tool-argument validation: nothing runs with arguments the tool did not declare.

A failure becomes a ToolResult error the model can read and correct, so every
message names the tool and the argument at fault.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from agentik_jupyter.types import ParameterType, ToolCall, ToolDefinition, ToolParameter, ToolResult

_PY_NAMES: dict[str, str] = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
}


def type_matches(value: Any, ptype: ParameterType) -> bool:
    if ptype == "string":
        return isinstance(value, str)
    if ptype == "boolean":
        return isinstance(value, bool)
    if ptype == "integer":
        if isinstance(value, float) and value.is_integer():
            return True
        return isinstance(value, int) and not isinstance(value, bool)
    if ptype == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if ptype == "array":
        return isinstance(value, list)
    return isinstance(value, dict)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object"}
PREVIEW_CHARS = 60
"""How much of a wrong value an error message quotes back to the model."""


def _preview(value: Any) -> str:
    """A short repr that cannot fail on huge or deeply nested values."""
    try:
        return repr(value)[:PREVIEW_CHARS]
    except (RecursionError, ValueError):
        return f"<{_json_type(value)}>"


def allowed_types(p: ToolParameter) -> set[str] | None:
    """The JSON types a parameter accepts: its schema's `type` list or `anyOf`/`oneOf`
    alternatives when it has them (None: anything), else its declared type."""
    schema = p.json_schema or {}
    declared = schema.get("type")
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        found: set[str] = set()
        for option in options:
            kind = option.get("type") if isinstance(option, dict) else None
            if isinstance(kind, list):
                found.update(t for t in kind if isinstance(t, str))
            elif isinstance(kind, str):
                found.add(kind)
            else:
                return None
        return found
    return {p.type}


def _matches_any(value: Any, kinds: set[str]) -> bool:
    if value is None:
        return "null" in kinds
    return any(type_matches(value, k) for k in kinds if _is_json_type(k))


def _is_json_type(kind: str) -> TypeGuard[ParameterType]:
    return kind in _JSON_TYPES


def validate_arguments(args: Any, parameters: list[ToolParameter]) -> list[str]:
    """Every problem with `args`, each naming the argument; empty when valid."""
    if not isinstance(args, dict):
        return [f"arguments must be a JSON object, got {_json_type(args)}"]
    problems: list[str] = []
    declared = {p.key: p for p in parameters}
    for param in parameters:
        if param.required and param.key not in args:
            problems.append(f"missing required argument '{param.key}' ({param.type})")
    for key, value in args.items():
        p = declared.get(key)
        if p is None:
            known = ", ".join(declared) or "none"
            problems.append(f"unexpected argument '{key}' (declared: {known})")
            continue
        if value is None and not p.required:
            continue
        kinds = allowed_types(p)
        if kinds is not None and not _matches_any(value, kinds):
            wanted = " or ".join(_PY_NAMES.get(k, k) for k in sorted(kinds))
            problems.append(f"argument '{key}' must be {wanted}, got {_json_type(value)} {_preview(value)}")
        elif p.enum is not None and value not in p.enum:
            problems.append(f"argument '{key}' must be one of {p.enum!r}, got {_preview(value)}")
    return problems


def coerce_arguments(args: dict[str, Any], parameters: list[ToolParameter]) -> dict[str, Any]:
    """Integral floats (3.0) for integer parameters become ints; nothing else changes."""
    types = {p.key: p.type for p in parameters}
    return {k: int(v) if types.get(k) == "integer" and isinstance(v, float) else v for k, v in args.items()}


def check_call(call: ToolCall, definition: ToolDefinition | None, parse_error: str | None = None) -> ToolResult | None:
    """The error ToolResult for a call that must not run, or None when it may run."""
    if definition is None:
        return ToolResult(tool_call_id=call.id, name=call.name, error=f"Unknown tool '{call.name}'.")
    if parse_error:
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            error=f"Invalid arguments for '{call.name}': not valid JSON ({parse_error}).",
        )
    problems = validate_arguments(call.args, definition.parameters)
    if problems:
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            error=f"Invalid arguments for '{call.name}': " + "; ".join(problems) + ".",
        )
    return None
