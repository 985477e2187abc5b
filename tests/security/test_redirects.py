"""Requests carrying the key never follow a redirect: the target receives nothing, the user reads why."""

from __future__ import annotations

import pytest

from agentik_jupyter.errors import RedirectError
from agentik_jupyter.providers.base import ChatParams, collect
from agentik_jupyter.providers.config import load_config, make_adapter
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import PROVIDERS
from agentik_jupyter.types import ChatMessage

KEY = "sk-agentik-LEAKCHECK-redirect-1234567890"


@pytest.mark.parametrize("status_path", ["/v1/chat/completions", "/v1/messages?key=abc"])
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("stream", [True, False])
async def test_a_307_to_another_origin_is_an_error_and_the_target_gets_nothing(
    provider: str, stream: bool, status_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_API_KEY", KEY)
    with FakeLLMServer() as origin, FakeLLMServer() as elsewhere:
        origin.push(Reply.fault("redirect", location=f"http://127.0.0.1:{elsewhere.port}{status_path}"))
        adapter = make_adapter(load_config(origin.env(provider, api_key=KEY)))
        params = ChatParams(
            model="fake-model", messages=[ChatMessage(role="user", content="hi")], system_prompt="s", tool_schemas=[]
        )
        try:
            with pytest.raises(RedirectError) as caught:
                if stream:
                    await collect(adapter.stream(params))
                else:
                    await adapter.chat(params)
        finally:
            await adapter.aclose()
        assert elsewhere.requests == [], "the redirect target received the request, key and conversation"
        assert len(origin.requests) == 1, "a redirect is not retried"
        message = str(caught.value)
        assert caught.value.status == 307 and "307" in message
        assert f"http://127.0.0.1:{elsewhere.port}" in message
        assert "/v1/" not in message and "key=abc" not in message and KEY not in message
