"""How a kernel finds the Jupyter server that started it (for AGENTIK_TRANSPORT=server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentik_jupyter.core.server_info import find_server
from agentik_jupyter.core.transport import InProcessTransport, ServerTransport, default_transport, provider_configured


def test_reads_the_runtime_file_of_the_parent_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "jpserver-4242.json").write_text(json.dumps({"url": "http://127.0.0.1:8888/", "token": "t0k"}))
    info = find_server({"JPY_PARENT_PID": "4242"})
    assert info is not None and info.url == "http://127.0.0.1:8888" and info.token == "t0k"
    assert find_server({"JPY_PARENT_PID": "1"}) is None
    assert find_server({}) is None


def test_default_transport_follows_agentik_transport(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "jpserver-77.json").write_text(json.dumps({"url": "http://127.0.0.1:9999/", "token": ""}))
    monkeypatch.setenv("JPY_PARENT_PID", "77")
    monkeypatch.delenv("AGENTIK_TRANSPORT", raising=False)
    assert isinstance(default_transport(), InProcessTransport)
    monkeypatch.setenv("AGENTIK_TRANSPORT", "server")
    transport = default_transport("m")
    assert isinstance(transport, ServerTransport) and transport.base_url == "http://127.0.0.1:9999"
    assert transport.token is None and transport.model == "m"


def test_a_provider_is_configured_where_its_key_is_in_the_kernel_or_the_server() -> None:
    assert provider_configured({"LLM_API_KEY": "sk-1"})
    assert provider_configured({"AGENTIK_PROVIDER_IN_SERVER": "1"})  # the server took the key
    assert provider_configured({"AGENTIK_TRANSPORT": "server"})
    assert not provider_configured({})
    assert not provider_configured({"LLM_API_KEY": "  ", "LLM_MODEL": "m"})
    assert not provider_configured({"AGENTIK_PROVIDER_IN_SERVER": "1", "AGENTIK_TRANSPORT": "kernel"})
