"""MCP input schemas → ToolParameters, tool names, and results → ToolOutput."""

from __future__ import annotations

import re

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agentik_jupyter.mcp import output_from_content, parameters_from_schema, tool_name
from agentik_jupyter.mcp.schema import error_text
from agentik_jupyter.tools.validation import validate_arguments


def test_top_level_properties_become_parameters() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to read"},
            "limit": {"type": "integer", "title": "Limit", "default": 10},
            "mode": {"enum": ["fast", "slow"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "ratio": {"type": ["number", "null"]},
            "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
        },
        "required": ["path"],
    }
    params = {p.key: p for p in parameters_from_schema(schema)}
    assert list(params) == ["path", "limit", "mode", "tags", "ratio", "opts"]
    assert params["path"].type == "string" and params["path"].required
    assert params["path"].description == "File to read"
    assert params["limit"].type == "integer" and not params["limit"].required
    assert params["limit"].description == "Limit"
    assert params["mode"].type == "string" and params["mode"].enum == ["fast", "slow"]
    assert params["tags"].type == "array"
    assert params["ratio"].type == "number"
    assert params["opts"].type == "object"
    assert params["opts"].json_schema == schema["properties"]["opts"]  # nested schema kept as-is
    assert params["tags"].json_schema == {"type": "array", "items": {"type": "string"}}


def test_refs_are_inlined_and_optional_unions_unwrapped() -> None:
    schema = {
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {
            "where": {"$ref": "#/$defs/Point", "description": "A point"},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "integer"}], "default": None},
            "loop": {"$ref": "#/$defs/Missing"},
        },
        "required": ["where"],
    }
    params = {p.key: p for p in parameters_from_schema(schema)}
    where = params["where"]
    assert where.type == "object" and where.description == "A point"
    assert where.json_schema is not None and "$ref" not in str(where.json_schema)
    assert where.json_schema["properties"] == {"x": {"type": "number"}}
    assert params["maybe"].type == "integer" and not params["maybe"].required
    assert params["loop"].type == "object"


def test_converted_parameters_validate_like_the_server_expects() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    params = parameters_from_schema(schema)
    assert validate_arguments({"a": 1, "b": 2}, params) == []
    assert any("'b'" in p for p in validate_arguments({"a": 1}, params))


def test_no_or_empty_schema_means_no_parameters() -> None:
    assert parameters_from_schema(None) == []
    assert parameters_from_schema({"type": "object"}) == []


def test_tool_names_are_provider_safe() -> None:
    assert tool_name("files", "read_file") == "files__read_file"
    assert tool_name("my server", "get.item") == "my_server__get_item"
    long = tool_name("s" * 40, "t" * 40)
    assert len(long) == 64 and re.fullmatch(r"[A-Za-z0-9_-]+", long)
    assert long != tool_name("s" * 40, "t" * 39 + "u"), "truncated names stay distinct"


def test_text_and_image_content() -> None:
    out = output_from_content(
        [TextContent(type="text", text="chart:"), ImageContent(type="image", data="aGVsbG8=", mime_type="image/png")]
    )
    assert out.text.startswith("chart:\n[image: image/png")
    assert out.display is not None and out.display["image/png"] == "aGVsbG8="
    two = output_from_content(
        [
            ImageContent(type="image", data="AA==", mime_type="image/png"),
            ImageContent(type="image", data="AQ==", mime_type="image/jpeg"),
        ]
    )
    assert two.display is not None and two.display["text/html"].count("<img") == 2


def test_resources_audio_links_and_structured_content() -> None:
    out = output_from_content(
        [
            EmbeddedResource(type="resource", resource=TextResourceContents(uri="file:///a.txt", text="hello")),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///b.bin", blob="AAAA", mime_type="application/x"),
            ),
            AudioContent(type="audio", data="AA==", mime_type="audio/wav"),
            ResourceLink(type="resource_link", uri="file:///c", name="c"),
        ]
    )
    assert "[resource file:///a.txt]\nhello" in out.text
    assert "file:///b.bin (application/x), 3 bytes" in out.text
    assert "[audio: audio/wav" in out.text and "[resource link: c file:///c]" in out.text
    assert out.display is None
    assert output_from_content([], {"rows": 3}).text == '{"rows": 3}'


def test_error_text() -> None:
    assert error_text([TextContent(type="text", text="bad input")]) == "bad input"
    assert "without a message" in error_text([])
