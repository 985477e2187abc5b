"""LLM_* configuration: clear errors naming the variable, defaults, and a key that never shows."""

from __future__ import annotations

import pytest

from agentik_jupyter.errors import ConfigurationError
from agentik_jupyter.providers.anthropic import AnthropicAdapter
from agentik_jupyter.providers.config import load_config, make_adapter
from agentik_jupyter.providers.openai_compatible import OpenAICompatibleAdapter

SECRET = "sk-live-SECRET-c0nf1g-test"
FULL = {"LLM_PROVIDER": "openai-compatible", "LLM_MODEL": "gpt-4o-mini", "LLM_API_KEY": SECRET}


def without(name: str) -> dict[str, str]:
    return {k: v for k, v in FULL.items() if k != name}


@pytest.mark.parametrize(
    ("env", "names"),
    [
        (without("LLM_PROVIDER"), ["LLM_PROVIDER", "%env LLM_PROVIDER=openai-compatible"]),
        (without("LLM_MODEL"), ["LLM_MODEL", "%env LLM_MODEL="]),
        ({**FULL, "LLM_MODEL": "  "}, ["LLM_MODEL"]),
        (without("LLM_API_KEY"), ["LLM_API_KEY", "getpass"]),
        ({**FULL, "LLM_PROVIDER": "gemini"}, ["LLM_PROVIDER='gemini'", "openai-compatible", "anthropic"]),
        ({**FULL, "LLM_BASE_URL": "localhost:11434"}, ["LLM_BASE_URL", "http"]),
    ],
)
def test_configuration_errors_name_the_variable(env: dict[str, str], names: list[str]) -> None:
    with pytest.raises(ConfigurationError) as info:
        load_config(env)
    for name in names:
        assert name in str(info.value)


def test_missing_key_message_never_suggests_saving_it_in_the_notebook() -> None:
    with pytest.raises(ConfigurationError) as info:
        load_config(without("LLM_API_KEY"))
    assert "%env LLM_API_KEY" not in str(info.value)


@pytest.mark.parametrize(
    ("provider", "canonical", "base_url"),
    [
        ("openai-compatible", "openai-compatible", "https://api.openai.com/v1"),
        ("OpenAI", "openai-compatible", "https://api.openai.com/v1"),
        ("anthropic", "anthropic", "https://api.anthropic.com"),
    ],
)
def test_defaults(provider: str, canonical: str, base_url: str) -> None:
    config = load_config({**FULL, "LLM_PROVIDER": provider})
    assert config.provider == canonical and config.base_url == base_url
    assert config.include_usage is True


def test_overrides() -> None:
    env = {**FULL, "LLM_BASE_URL": "http://localhost:11434/v1/", "LLM_STREAM_USAGE": "0"}
    config = load_config(env, model_override="llama3.2")
    assert config.model == "llama3.2"
    assert config.base_url == "http://localhost:11434/v1"
    assert config.include_usage is False


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FULL.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    assert load_config().model == "gpt-4o-mini"


def test_key_is_never_shown() -> None:
    config = load_config(FULL)
    assert config.api_key.get_secret_value() == SECRET
    for text in (repr(config), str(config), config.model_dump_json()):
        assert SECRET not in text
    for adapter in (make_adapter(config), make_adapter(config.model_copy(update={"provider": "anthropic"}))):
        assert SECRET not in repr(adapter) and SECRET not in str(vars(adapter))


def test_make_adapter_picks_the_wire_format() -> None:
    assert isinstance(make_adapter(load_config(FULL)), OpenAICompatibleAdapter)
    assert isinstance(make_adapter(load_config({**FULL, "LLM_PROVIDER": "anthropic"})), AnthropicAdapter)
