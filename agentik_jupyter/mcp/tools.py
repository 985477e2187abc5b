"""A server's tools in the ToolRegistry: registered, withdrawn, and never clobbering another's.

Each tool a server lists becomes `<server>__<tool>` with the server's policy. A
policy the user set with `%agent policy` is remembered when the tools are
withdrawn (a crash, a restart) and applied again when they come back. Two
servers can produce the same name (`a_`+`b` and `a`+`_b`, or names that differ
only in characters providers refuse): the name stays with whoever had it, and
the other tool is reported as a collision instead of silently replacing it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentik_jupyter.errors import MCPToolError
from agentik_jupyter.mcp.connection import ServerConnection
from agentik_jupyter.mcp.schema import error_text, output_from_content, parameters_from_schema, tool_name
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import ApprovalPolicy, ToolDefinition


class ToolPublisher:
    """Which registry names each server holds, its collisions, and the policies users chose."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self._registered: dict[str, list[str]] = {}
        self._collisions: dict[str, list[str]] = {}
        self._kept_policies: dict[str, ApprovalPolicy] = {}

    def publish(self, connection: ServerConnection) -> list[str]:
        """Register the server's tools (replacing its own earlier ones); returns collision notices."""
        self.withdraw(connection.name, connection.policy)
        names: list[str] = []
        collisions: list[str] = []
        for tool in connection.tools:
            name = tool_name(connection.name, tool.name)
            origin = f"mcp:{connection.name}:{tool.name}"
            existing = self.registry.get(name)
            if (existing is not None and existing.origin != origin) or name in names:
                holder = (
                    "another of its tools"
                    if existing is None or name in names
                    else (existing.origin if existing.source == "mcp" else f"the {existing.source} tool")
                )
                collisions.append(
                    f"tool '{tool.name}' would be named '{name}', which {holder} already has; "
                    f"'{tool.name}' is not offered (rename one of the servers in mcp.json)"
                )
                continue
            parameters = parameters_from_schema(tool.input_schema)
            definition = ToolDefinition(
                name=name,
                description=tool.description or getattr(tool, "title", None) or "",
                parameters=parameters,
                execute=_executor(connection, tool.name, parameters),
                policy=self._kept_policies.get(name, connection.policy),
                source="mcp",
                origin=origin,
                read_only=declares_read_only(tool),
            )
            self.registry.add(definition, replace=True)
            names.append(name)
        self._registered[connection.name] = names
        self._collisions[connection.name] = collisions
        return [f"MCP server '{connection.name}': {message}" for message in collisions]

    def withdraw(self, server: str, declared: ApprovalPolicy | None) -> None:
        """Remove the server's tools, remembering each policy that differs from the declared one."""
        for name in self._registered.pop(server, []):
            current = self.registry.get(name)
            if current is not None and declared is not None and current.policy != declared:
                self._kept_policies[name] = current.policy
            self.registry.unregister(name)
        self._collisions.pop(server, None)

    def servers(self) -> list[str]:
        return list(self._registered)

    def names(self, server: str) -> tuple[str, ...]:
        return tuple(self._registered.get(server, []))

    def collisions(self, server: str) -> tuple[str, ...]:
        return tuple(self._collisions.get(server, []))


def declares_read_only(tool: Any) -> bool:
    """The server's `readOnlyHint` (what Ask and Plan offer): only an explicit true counts."""
    annotations = getattr(tool, "annotations", None)
    if isinstance(annotations, dict):
        return annotations.get("readOnlyHint") is True
    # the SDK's field name changed between versions (readOnlyHint, read_only_hint)
    return any(getattr(annotations, name, None) is True for name in ("read_only_hint", "readOnlyHint"))


def _executor(connection: ServerConnection, tool: str, parameters: list[Any]) -> Callable[..., Any]:
    """The tool's `execute`: call the server, turn `isError` into an exception."""
    optional = {p.key for p in parameters if not p.required}

    async def execute(**kwargs: Any) -> Any:
        args = {k: v for k, v in kwargs.items() if not (v is None and k in optional)}
        result = await connection.call(tool, args)
        if result.is_error:
            raise MCPToolError(error_text(result.content))
        return output_from_content(result.content, result.structured_content)

    execute.__name__ = tool_name(connection.name, tool)
    return execute
