"""mcp.json: where it is found, `${VAR}` expansion, and errors that name the server and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentik_jupyter.mcp import (
    HttpServerConfig,
    MCPConfigError,
    StdioServerConfig,
    discover_config,
    find_config_path,
    load_config,
    parse_config,
)
from agentik_jupyter.mcp.config import expand


def test_stdio_and_http_servers_with_defaults() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "server-fs", "/data"], "env": {"A": "1"}},
                "web": {"url": "https://example.org/mcp", "headers": {"Authorization": "Bearer x"}},
            }
        },
        environ={},
    )
    files, web = config.servers["files"], config.servers["web"]
    assert isinstance(files, StdioServerConfig) and isinstance(web, HttpServerConfig)
    assert files.args == ["-y", "server-fs", "/data"] and files.env == {"A": "1"}
    assert web.headers == {"Authorization": "Bearer x"}
    assert files.policy == web.policy == "ask"
    assert files.timeout == 60 and files.startup_timeout == 30
    assert not config.errors


def test_policy_timeouts_and_type_field() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "a": {"type": "stdio", "command": "x", "policy": "auto", "timeout": 5, "startupTimeout": 2},
                "b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "policy": "deny"},
                "off": {"command": "x", "disabled": True},
            }
        },
        environ={},
    )
    assert config.servers["a"].policy == "auto"
    assert config.servers["a"].timeout == 5 and config.servers["a"].startup_timeout == 2
    assert config.servers["b"].policy == "deny"
    assert "off" not in config.servers


def test_expansion_in_every_string() -> None:
    env = {"TOKEN": "s3cret", "HOME_DIR": "/home/u", "EMPTY": ""}
    config = parse_config(
        {
            "mcpServers": {
                "s": {
                    "command": "${HOME_DIR}/bin/server",
                    "args": ["--token=${TOKEN}", "${MISSING:-fallback}", "${EMPTY:-used-when-empty}"],
                    "env": {"T": "${TOKEN}", "MODE": "${MODE:-prod}"},
                    "cwd": "${HOME_DIR}/work",
                },
                "h": {"url": "https://${HOST:-api.example.org}/mcp", "headers": {"X-Key": "k-${TOKEN}"}},
            }
        },
        environ=env,
    )
    s = config.servers["s"]
    assert isinstance(s, StdioServerConfig)
    assert s.command == "/home/u/bin/server"
    assert s.args == ["--token=s3cret", "fallback", "used-when-empty"]
    assert s.env == {"T": "s3cret", "MODE": "prod"}
    assert s.cwd == "/home/u/work"
    h = config.servers["h"]
    assert isinstance(h, HttpServerConfig)
    assert h.url == "https://api.example.org/mcp" and h.headers == {"X-Key": "k-s3cret"}


def test_expand_keeps_text_without_variables() -> None:
    assert expand("plain $HOME {x} $", {}) == "plain $HOME {x} $"


def test_missing_variable_names_server_field_and_variable() -> None:
    config = parse_config(
        {"mcpServers": {"gh": {"command": "x", "env": {"GITHUB_TOKEN": "${GH_TOKEN}"}}, "ok": {"command": "y"}}},
        environ={},
    )
    assert "ok" in config.servers, "one broken entry must not hide the others"
    message = config.errors["gh"]
    assert "server 'gh'" in message and "env.GITHUB_TOKEN" in message and "'GH_TOKEN'" in message
    assert "${GH_TOKEN:-default}" in message


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"command": "x", "policy": "sometimes"}, "field 'policy'"),
        ({"command": "x", "timeout": -1}, "field 'timeout'"),
        ({"command": "x", "args": "not-a-list"}, "field 'args'"),
        ({"command": ""}, "field 'command'"),
        ({"url": "ftp://host/mcp"}, "field 'url'"),
        ({"args": ["a"]}, "needs either 'command'"),
        ({"command": "x", "url": "http://h/mcp"}, "both 'command'"),
        ({"type": "sse", "url": "http://h/sse"}, "SSE transport is not supported"),
        ("just a string", "must be an object"),
    ],
)
def test_validation_errors_name_server_and_field(entry: object, expected: str) -> None:
    config = parse_config({"mcpServers": {"broken": entry}}, environ={})
    assert "broken" not in config.servers
    assert "server 'broken'" in config.errors["broken"]
    assert expected in config.errors["broken"]


def test_unknown_fields_are_warned_not_fatal() -> None:
    config = parse_config({"mcpServers": {"s": {"command": "x", "autoApprove": ["t"]}}}, environ={})
    assert "s" in config.servers
    assert any("autoApprove" in w and "'s'" in w for w in config.warnings)


@pytest.mark.parametrize(
    ("data", "expected"),
    [([], "top level"), ({"servers_typo": {}}, "mcpServers"), ({"mcpServers": []}, "must be an object")],
)
def test_file_level_errors(data: object, expected: str) -> None:
    with pytest.raises(MCPConfigError, match=expected):
        parse_config(data, environ={})


def test_invalid_json_reports_line(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {\n  "a": {"command": "x",}\n}}')
    with pytest.raises(MCPConfigError, match=r"not valid JSON \(line 2"):
        load_config(path)


def test_relative_cwd_and_command_resolve_beside_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps({"mcpServers": {"s": {"command": "./bin/srv", "cwd": "data"}, "p": {"command": "python"}}})
    )
    config = load_config(path, environ={})
    s = config.servers["s"]
    assert isinstance(s, StdioServerConfig)
    assert s.command == str(tmp_path.resolve() / "bin" / "srv")
    assert s.cwd == str(tmp_path.resolve() / "data")
    assert config.servers["p"].command == "python"  # type: ignore[union-attr]


def test_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jupyter_dir = tmp_path / "jupyter"
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(jupyter_dir))
    notebook_dir = tmp_path / "project"
    notebook_dir.mkdir()
    assert find_config_path(notebook_dir, environ={}) is None
    assert discover_config(notebook_dir, environ={}).servers == {}

    user = jupyter_dir / "agentik" / "mcp.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"mcpServers": {"user": {"command": "u"}}}))
    assert find_config_path(notebook_dir, environ={}) == user

    beside = notebook_dir / "mcp.json"
    beside.write_text(json.dumps({"mcpServers": {"project": {"command": "p"}}}))
    assert find_config_path(notebook_dir, environ={}) == beside
    assert list(discover_config(notebook_dir, environ={}).servers) == ["project"]

    explicit = tmp_path / "elsewhere.json"
    explicit.write_text(json.dumps({"mcpServers": {"explicit": {"command": "e"}}}))
    env = {"AGENTIK_MCP_CONFIG": str(explicit)}
    assert list(discover_config(notebook_dir, environ=env).servers) == ["explicit"]


def test_explicit_config_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    env = {"AGENTIK_MCP_CONFIG": str(tmp_path / "nope.json")}
    with pytest.raises(MCPConfigError, match="not found"):
        discover_config(tmp_path, environ=env)
