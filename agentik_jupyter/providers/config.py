"""Provider configuration from the environment, and the adapter it selects.

The key is held as a `SecretStr` so that no repr, log line or traceback shows it,
and the error messages here tell the user how to set a variable without ever
suggesting they paste a key into a notebook cell that gets saved.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

import httpx2
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agentik_jupyter.errors import ConfigurationError
from agentik_jupyter.providers import _constants as C
from agentik_jupyter.providers._http import RetryPolicy, Timeouts
from agentik_jupyter.providers.anthropic import AnthropicAdapter
from agentik_jupyter.providers.base import ProviderAdapter
from agentik_jupyter.providers.openai_compatible import OpenAICompatibleAdapter
from agentik_jupyter.security.urls import redact_url

ProviderName = Literal["openai-compatible", "anthropic"]

PROVIDER_ALIASES: dict[str, ProviderName] = {
    "openai-compatible": "openai-compatible",
    "openai_compatible": "openai-compatible",
    "openai": "openai-compatible",
    "anthropic": "anthropic",
}

DEFAULT_BASE_URLS: dict[ProviderName, str] = {
    "openai-compatible": C.DEFAULT_OPENAI_BASE_URL,
    "anthropic": C.DEFAULT_ANTHROPIC_BASE_URL,
}

_FALSE = {"0", "false", "no", "off"}


class ProviderConfig(BaseModel):
    """Which provider, model, key and endpoint to use; `repr()` never shows the key or the
    endpoint (a base URL can carry a proxy password or a query key: show `shown_url`)."""

    model_config = ConfigDict(frozen=True)

    provider: ProviderName
    model: str
    api_key: SecretStr
    base_url: str = Field(repr=False)
    include_usage: bool = True
    cache_control: bool = True
    """Anthropic: mark the tools, the system prompt and the newest message for the prompt cache (`LLM_CACHE_CONTROL`)."""
    prompt_cache_key: bool = True
    """OpenAI-compatible: send a stable `prompt_cache_key` per session (`LLM_PROMPT_CACHE_KEY`)."""
    read_timeout: float = C.READ_TIMEOUT_S
    """Longest wait for the next byte (`LLM_TIMEOUT`, seconds)."""

    @property
    def shown_url(self) -> str:
        """The endpoint as shown or logged: without userinfo and query values."""
        return redact_url(self.base_url)


def _missing(name: str, example: str) -> ConfigurationError:
    return ConfigurationError(
        f"{name} is not set. Set it before starting Jupyter (export {name}={example}) "
        f"or in the notebook with %env {name}={example}."
    )


def load_config(environ: Mapping[str, str] | None = None, model_override: str | None = None) -> ProviderConfig:
    """Read LLM_PROVIDER, LLM_MODEL, LLM_API_KEY, LLM_BASE_URL, LLM_STREAM_USAGE, LLM_CACHE_CONTROL
    and LLM_PROMPT_CACHE_KEY.

    Raises ConfigurationError naming the variable that is missing or wrong.
    """
    env = os.environ if environ is None else environ
    raw_provider = (env.get("LLM_PROVIDER") or "").strip()
    if not raw_provider:
        raise _missing("LLM_PROVIDER", "openai-compatible")
    provider = PROVIDER_ALIASES.get(raw_provider.lower())
    if provider is None:
        raise ConfigurationError(
            f"LLM_PROVIDER={raw_provider!r} is not supported. Use 'openai-compatible' "
            "(OpenAI, Azure, Ollama, vLLM, LM Studio, OpenRouter, Groq...) or 'anthropic', "
            "e.g. %env LLM_PROVIDER=openai-compatible."
        )
    model = (model_override or env.get("LLM_MODEL") or "").strip()
    if not model:
        example = "claude-sonnet-4-5" if provider == "anthropic" else "gpt-4o-mini"
        raise _missing("LLM_MODEL", example)
    api_key = (env.get("LLM_API_KEY") or "").strip()
    if not api_key:
        raise ConfigurationError(
            "LLM_API_KEY is not set. Export it before starting Jupyter, or set it without saving it "
            "in the notebook: import os, getpass; os.environ['LLM_API_KEY'] = getpass.getpass(). "
            "A local server such as Ollama accepts any value."
        )
    if any(ch.isspace() or not ch.isprintable() for ch in api_key):
        raise ConfigurationError(
            "LLM_API_KEY contains whitespace or a control character (a line break pasted with it?). "
            "Set it again with the key alone; its value is not shown here."
        )
    base_url = (env.get("LLM_BASE_URL") or "").strip() or DEFAULT_BASE_URLS[provider]
    try:
        url = httpx2.URL(base_url)
    except Exception:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(
            f"LLM_BASE_URL={redact_url(base_url)!r} is not an http(s) URL. Example: %env LLM_BASE_URL=http://localhost:11434/v1"
        )
    include_usage = _switch(env, "LLM_STREAM_USAGE")
    read_timeout = _timeout(env.get("LLM_TIMEOUT"))
    return ProviderConfig(
        provider=provider,
        model=model,
        api_key=SecretStr(api_key),
        base_url=base_url.rstrip("/"),
        include_usage=include_usage,
        cache_control=_switch(env, "LLM_CACHE_CONTROL"),
        prompt_cache_key=_switch(env, "LLM_PROMPT_CACHE_KEY"),
        read_timeout=read_timeout,
    )


def _switch(env: Mapping[str, str], name: str) -> bool:
    """On unless set to 0/false/no/off: for servers that reject a field they don't know."""
    return (env.get(name) or "1").strip().lower() not in _FALSE


def _timeout(raw: str | None) -> float:
    if raw is None or not raw.strip():
        return C.READ_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value <= C.MAX_READ_TIMEOUT_S:
        raise ConfigurationError(
            f"LLM_TIMEOUT={raw!r} is not a number of seconds between 0 and {C.MAX_READ_TIMEOUT_S:g}. "
            "Example: %env LLM_TIMEOUT=300"
        )
    return value


def make_adapter(
    config: ProviderConfig,
    *,
    timeouts: Timeouts | None = None,
    retry: RetryPolicy | None = None,
    client: httpx2.AsyncClient | None = None,
) -> ProviderAdapter:
    """The adapter for `config.provider`, pointed at `config.base_url`."""
    timeouts = timeouts or Timeouts(read=config.read_timeout)
    if config.provider == "anthropic":
        return AnthropicAdapter(
            api_key=config.api_key,
            base_url=config.base_url,
            cache_control=config.cache_control,
            timeouts=timeouts,
            retry=retry,
            client=client,
        )
    return OpenAICompatibleAdapter(
        api_key=config.api_key,
        base_url=config.base_url,
        include_usage=config.include_usage,
        prompt_cache_key=config.prompt_cache_key,
        timeouts=timeouts,
        retry=retry,
        client=client,
    )
