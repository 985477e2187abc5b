"""The trust store and the untrusted file's summary: keyed by path and content, nothing expanded."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from agentik_jupyter.mcp import MCPConfig, MCPManager
from agentik_jupyter.mcp.config import parse_server
from agentik_jupyter.mcp.project import read_project_file
from agentik_jupyter.security.trust import TrustStore, digest, is_user_file
from agentik_jupyter.tools.registry import ToolRegistry

SECRET = "sk-unit-SECRET-0123456789"


@pytest.fixture
def jupyter_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("AGENTIK_MCP_CONFIG", raising=False)
    monkeypatch.setenv("LLM_API_KEY", SECRET)
    return tmp_path


def test_store_is_keyed_by_path_and_content(jupyter_dirs: Path) -> None:
    file = jupyter_dirs / "project" / "mcp.json"
    file.parent.mkdir()
    file.write_text('{"mcpServers": {}}')
    store = TrustStore()
    assert store.path == jupyter_dirs / "data" / "agentik" / "trusted.json"
    sha = digest(file.read_bytes())
    assert store.decision(file, sha) is None
    store.trust(file, sha)
    assert store.is_trusted(file, sha) and stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert not store.is_trusted(file, digest(b'{"mcpServers": {"x": {}}}')), "a changed file is not trusted"
    assert not store.is_trusted(jupyter_dirs / "other" / "mcp.json", sha), "same bytes elsewhere are not"
    store.decline(file, sha)
    assert store.decision(file, sha) == "declined" and not store.is_trusted(file, sha)
    assert store.forget(file) and store.decision(file, sha) is None


def test_user_files_are_trusted(jupyter_dirs: Path) -> None:
    user = jupyter_dirs / "config" / "agentik" / "mcp.json"
    user.parent.mkdir(parents=True)
    user.write_text("{}")
    named = jupyter_dirs / "elsewhere.json"
    named.write_text("{}")
    project = jupyter_dirs / "mcp.json"
    project.write_text("{}")
    assert is_user_file(user)
    assert is_user_file(named, {"AGENTIK_MCP_CONFIG": str(named)})
    assert not is_user_file(project, {"AGENTIK_MCP_CONFIG": str(named)})


def test_untrusted_file_is_summarised_without_expansion(jupyter_dirs: Path) -> None:
    folder = jupyter_dirs / "project"
    folder.mkdir()
    (folder / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {
                        "command": "npx",
                        "args": ["-y", "server", "${HOME}"],
                        "env": {"TOKEN": "${LLM_API_KEY}"},
                        "policy": "auto",
                    },
                    "web": {
                        "url": "https://example.invalid/${LLM_API_KEY:-none}",
                        "headers": {"X-Key": "${OTHER_KEY}"},
                    },
                }
            }
        )
    )
    manager = MCPManager(ToolRegistry(), notebook_dir=folder)
    pending = manager.pending_trust
    assert pending is not None and manager.configured
    files, web = pending.servers
    assert files.target == "npx -y server ${HOME}" and files.reads == ("HOME", "LLM_API_KEY")
    assert files.sets == ("TOKEN",) and files.policy == "auto"
    assert web.target.startswith("https://example.invalid/${LLM_API_KEY:-none}") and web.reads == (
        "LLM_API_KEY",
        "OTHER_KEY",
    )
    listing = "\n".join(s.describe() for s in manager.statuses())
    assert "files (stdio, policy ask): untrusted" in listing and SECRET not in listing
    assert manager.registry.get("files__anything") is None and not manager._connections


def test_expanded_values_are_masked_in_errors() -> None:
    server, _ = parse_server(
        "web", {"url": "http://127.0.0.1:9/${KEY}", "headers": {"A": "Bearer ${KEY}"}}, environ={"KEY": "s3cr/et"}
    )
    assert server.url == "http://127.0.0.1:9/s3cr/et"
    message = "cannot reach http://127.0.0.1:9/s3cr/et (s3cr%2Fet, Bearer s3cr/et)"
    assert server.mask(message) == "cannot reach http://127.0.0.1:9/${KEY} (${KEY}, Bearer ${KEY})"
    with pytest.raises(ValueError) as caught:
        parse_server("bad", {"url": "ftp://${KEY}"}, environ={"KEY": "s3cr/et"})
    assert "s3cr/et" not in str(caught.value)


def test_read_project_file_hashes_the_bytes_it_read(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_bytes(b'{"mcpServers": {"a": {"command": "x"}}}')
    project = read_project_file(file, environ={})
    assert project.sha256 == digest(file.read_bytes()) and not project.user_file
    assert MCPManager(ToolRegistry(), config=MCPConfig()).pending_trust is None  # code's own config
