"""MCP servers as tools (the optional `agentik_jupyter[mcp]` extra).

Importing this package never needs the `mcp` SDK: config parsing and schema
conversion are plain Python, and the SDK is imported when a server starts.
A configured server without the SDK fails with the install hint instead.
"""

from __future__ import annotations

from agentik_jupyter.errors import MCPConfigError, MCPServerError, MCPToolError
from agentik_jupyter.mcp.client import MCPManager, ServerStatus
from agentik_jupyter.mcp.config import (
    CONFIG_ENV,
    HttpServerConfig,
    MCPConfig,
    ServerConfig,
    StdioServerConfig,
    discover_config,
    find_config_path,
    load_config,
    parse_config,
)
from agentik_jupyter.mcp.connection import MCPNotInstalledError, ServerState
from agentik_jupyter.mcp.schema import output_from_content, parameters_from_schema, tool_name

__all__ = [
    "CONFIG_ENV",
    "HttpServerConfig",
    "MCPConfig",
    "MCPConfigError",
    "MCPManager",
    "MCPNotInstalledError",
    "MCPServerError",
    "MCPToolError",
    "ServerConfig",
    "ServerState",
    "ServerStatus",
    "StdioServerConfig",
    "discover_config",
    "find_config_path",
    "load_config",
    "output_from_content",
    "parameters_from_schema",
    "parse_config",
    "tool_name",
]
