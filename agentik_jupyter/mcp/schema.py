"""Translate between MCP shapes and the agent's own: input schemas, names, results.

Pure functions over plain data (no `mcp` import), so they are tested without a
server and work whatever SDK version produced the values.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, get_args

from agentik_jupyter.types import ParameterType, ToolOutput, ToolParameter

MAX_NAME = 64
_NAME_BAD = re.compile(r"[^A-Za-z0-9_-]")
_TYPES: tuple[str, ...] = get_args(ParameterType)
_MAX_REF_DEPTH = 8


def tool_name(server: str, tool: str) -> str:
    """`<server>__<tool>`, made safe for providers (`[A-Za-z0-9_-]{1,64}`)."""
    name = _NAME_BAD.sub("_", f"{server}__{tool}")
    if len(name) > MAX_NAME:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def _resolve_refs(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """Inline local `$ref`s so a property's schema stands alone when sent to a provider."""
    if isinstance(schema, list):
        return [_resolve_refs(s, defs, depth) for s in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
        target = defs.get(ref.rsplit("/", 1)[-1])
        if target is None or depth >= _MAX_REF_DEPTH:
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return rest or {"type": "object"}
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return _resolve_refs(merged, defs, depth + 1)
    return {k: _resolve_refs(v, defs, depth) for k, v in schema.items() if k not in ("$defs", "definitions")}


def _type_of(schema: dict[str, Any]) -> ParameterType:
    """The one internal type that best fits a JSON schema (first non-null option wins)."""
    declared = schema.get("type")
    options = declared if isinstance(declared, list) else [declared]
    for option in options:
        if option in _TYPES:
            return option
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or []:
            if isinstance(branch, dict) and branch.get("type") != "null":
                return _type_of(branch)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        first = enum[0]
        if isinstance(first, bool):
            return "boolean"
        if isinstance(first, int):
            return "integer"
        if isinstance(first, float):
            return "number"
        return "string"
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def parameters_from_schema(input_schema: dict[str, Any] | None) -> list[ToolParameter]:
    """Top-level properties of an MCP tool's input schema as ToolParameters.

    Each parameter keeps its own schema (with `$ref`s inlined) in `json_schema`,
    so the provider sees what the server declared, nested objects included.
    """
    if not isinstance(input_schema, dict):
        return []
    defs = {**(input_schema.get("definitions") or {}), **(input_schema.get("$defs") or {})}
    properties = input_schema.get("properties") or {}
    required = set(input_schema.get("required") or [])
    params: list[ToolParameter] = []
    for key, raw in properties.items():
        prop = _resolve_refs(raw if isinstance(raw, dict) else {}, defs)
        description = prop.get("description") or prop.get("title") or ""
        enum = prop.get("enum") if isinstance(prop.get("enum"), list) else None
        params.append(
            ToolParameter(
                key=key,
                type=_type_of(prop),
                required=key in required,
                description=str(description),
                enum=enum,
                json_schema=prop,
            )
        )
    return params


def _resource_text(resource: Any) -> str:
    uri = str(getattr(resource, "uri", ""))
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource {uri}]\n{text}"
    blob = getattr(resource, "blob", "") or ""
    mime = getattr(resource, "mime_type", None) or "application/octet-stream"
    return f"[resource {uri} ({mime}), {len(blob) * 3 // 4} bytes]"


def output_from_content(content: list[Any], structured: Any = None) -> ToolOutput:
    """An MCP result's content blocks as text for the model and a MIME bundle for the card.

    Images go to the card (the first as its own MIME type, all of them as HTML
    when there are several) and the model reads a short note in their place.
    """
    texts: list[str] = []
    images: list[tuple[str, str]] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            images.append((block.mime_type, block.data))
            texts.append(f"[image: {block.mime_type}, {len(block.data) * 3 // 4} bytes, shown to the user]")
        elif kind == "audio":
            texts.append(f"[audio: {block.mime_type}, not shown]")
        elif kind == "resource":
            texts.append(_resource_text(block.resource))
        elif kind == "resource_link":
            texts.append(f"[resource link: {getattr(block, 'name', '')} {block.uri}]")
        else:
            texts.append(f"[unsupported content: {kind}]")
    if not content and structured is not None:
        texts.append(json.dumps(structured, default=str, ensure_ascii=False))
    display: dict[str, Any] | None = None
    if images:
        mime, data = images[0]
        display = {mime: data, "text/plain": "\n".join(texts)}
        if len(images) > 1:
            display["text/html"] = "".join(f'<img src="data:{m};base64,{d}"/>' for m, d in images)
    return ToolOutput(text="\n".join(texts), display=display)


def error_text(content: list[Any]) -> str:
    """The message of an `isError` result: its text blocks, or a generic note."""
    text = "\n".join(getattr(b, "text", "") for b in content if getattr(b, "type", None) == "text").strip()
    return text or "the tool reported an error without a message"
