"""The tool registry and the @tool decorator."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from agentik_jupyter.errors import DuplicateToolError
from agentik_jupyter.tools.registry import DefinitionRegistry, ToolRegistry, tool
from agentik_jupyter.types import ToolDefinition, ToolParameter


def test_definition_registry_basics() -> None:
    reg: DefinitionRegistry[int] = DefinitionRegistry()
    reg.register("a", 1)
    assert reg.has("a") and reg.get("a") == 1 and reg.get("b") is None
    assert reg.get_all() == [1]
    with pytest.raises(DuplicateToolError, match="already registered"):
        reg.register("a", 2)
    reg.register("a", 2, replace=True)
    assert reg.get("a") == 2


def test_schema_export_with_optional_string() -> None:
    reg = ToolRegistry()
    reg.add(
        ToolDefinition(
            name="get_asset",
            description="Look up an asset",
            parameters=[ToolParameter(key="assetId", type="string", required=False)],
            execute=lambda assetId=None: assetId,
        )
    )
    schemas = reg.to_tool_schemas()
    assert [s.name for s in schemas] == ["get_asset"]
    assert [p.model_dump(include={"key", "type", "required"}) for p in schemas[0].parameters] == [
        {"key": "assetId", "type": "string", "required": False}
    ]


class Filter(BaseModel):
    column: str
    value: float


def test_decorator_reads_hints_defaults_and_docstring() -> None:
    reg = ToolRegistry()

    @tool(registry=reg)
    def query(
        table: str,
        limit: int = 10,
        ratio: float = 0.5,
        exact: bool = False,
        columns: list[str] | None = None,
        options: dict = {},  # noqa: B006
        mode: Literal["fast", "slow"] = "fast",
        label: str | None = None,
        where: Filter | None = None,
    ) -> str:
        """Query a table.

        Args:
            table: which table to read
            limit: how many rows
        """
        return table

    d = reg.get("query")
    assert d is not None and d.description == "Query a table."
    params = {p.key: p for p in d.parameters}
    assert {k: (p.type, p.required) for k, p in params.items()} == {
        "table": ("string", True),
        "limit": ("integer", False),
        "ratio": ("number", False),
        "exact": ("boolean", False),
        "columns": ("array", False),
        "options": ("object", False),
        "mode": ("string", False),
        "label": ("string", False),
        "where": ("object", False),
    }
    assert params["table"].description == "which table to read"
    assert params["mode"].enum == ["fast", "slow"]
    assert params["where"].json_schema is not None and "column" in str(params["where"].json_schema)
    assert query("t") == "t"  # the function itself is unchanged


async def test_decorator_converts_pydantic_arguments_and_keeps_async() -> None:
    reg = ToolRegistry()

    @tool(registry=reg)
    async def apply(where: Filter) -> str:
        return f"{where.column}>{where.value}"

    d = reg.get("apply")
    assert d is not None
    assert await d.execute(where={"column": "x", "value": 1}) == "x>1.0"


def test_duplicate_name_is_an_error_unless_replace() -> None:
    reg = ToolRegistry()

    @tool(registry=reg)
    def lookup(x: str) -> str:
        return "first"

    def other(x: str) -> str:
        return "second"

    with pytest.raises(DuplicateToolError, match="lookup"):
        tool(name="lookup", registry=reg)(other)
    tool(name="lookup", registry=reg, replace=True)(other)
    d = reg.get("lookup")
    assert d is not None and d.execute(x="a") == "second"


def test_redefining_the_same_function_replaces_it() -> None:
    reg = ToolRegistry()
    for answer in ("v1", "v2"):

        def lookup(x: str, _a: str = answer) -> str:
            return _a

        tool(registry=reg)(lookup)
    d = reg.get("lookup")
    assert d is not None and d.execute(x="a") == "v2" and len(reg) == 1


class Weird:
    pass


def test_unsupported_hint_is_a_clear_error() -> None:
    def f(w: Weird) -> None: ...

    with pytest.raises(TypeError, match="'w'"):
        tool(registry=ToolRegistry())(f)


def test_unresolvable_hint_is_a_clear_error() -> None:
    def g(w: NoSuchType) -> None: ...  # noqa: F821

    with pytest.raises(TypeError, match="Cannot resolve the type hints of tool 'g'"):
        tool(registry=ToolRegistry())(g)
