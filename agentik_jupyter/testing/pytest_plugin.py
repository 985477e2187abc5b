"""pytest fixtures for testing agents offline against `FakeLLMServer`.

Enable with ``pytest_plugins = ["agentik_jupyter.testing.pytest_plugin"]`` in a conftest.py.
Run a test against both wire formats with
``@pytest.mark.parametrize("llm_provider", PROVIDERS)``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentik_jupyter.testing.fake_server import FakeLLMServer

PROVIDERS = ("openai-compatible", "anthropic")
FAKE_API_KEY = "sk-fake-test-key-0123456789"
"""Distinctive on purpose: tests can assert it never shows up in an error message."""


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A started FakeLLMServer on a free loopback port, stopped after the test."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def llm_provider() -> str:
    """Which wire format `llm_env` selects; override with parametrize("llm_provider", PROVIDERS)."""
    return "openai-compatible"


@pytest.fixture
def llm_env(fake_llm: FakeLLMServer, llm_provider: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Point LLM_PROVIDER / LLM_MODEL / LLM_API_KEY / LLM_BASE_URL at `fake_llm`; returns the values."""
    env = fake_llm.env(llm_provider, api_key=FAKE_API_KEY)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LLM_STREAM_USAGE", raising=False)
    return env
