"""How the loop in the kernel reaches the chat route.

`InProcessTransport` calls chat.stream_chat in the kernel (the default);
`ServerTransport` posts to the Jupyter Server route so the key can stay on the
server. Both yield the same provider deltas to the orchestrator.
"""

from __future__ import annotations

import json
import os
from typing import Any, AsyncIterator, Mapping

from .chat import stream_chat
from .providers.base import ProviderChatResponse, ProviderDelta, ProviderToolCall, StreamDone, TextDelta
from .providers.errors import ConfigurationError, ProviderConnectionError, ProviderError
from .types import AgentContext, ChatMessage, ToolSchema


class InProcessTransport:
    """The kernel talks to the provider itself; `model` overrides LLM_MODEL per turn."""

    def __init__(self, model: str | None = None, environ: Mapping[str, str] | None = None) -> None:
        self.model = model
        self.environ = environ

    def stream(
        self, messages: list[ChatMessage], context: AgentContext | None, tool_schemas: list[ToolSchema]
    ) -> AsyncIterator[ProviderDelta]:
        return stream_chat(messages, context, tool_schemas, model=self.model, environ=self.environ)


class ServerTransport:
    """POST /agentik/api/chat on the Jupyter server that started this kernel.

    The answer arrives whole (the route is not streamed), then is replayed as one
    text delta so the loop treats both transports alike.
    """

    def __init__(self, base_url: str, token: str | None, model: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.model = model

    async def stream(
        self, messages: list[ChatMessage], context: AgentContext | None, tool_schemas: list[ToolSchema]
    ) -> AsyncIterator[ProviderDelta]:
        import httpx2

        body: dict[str, Any] = {
            "messages": [m.model_dump(mode="json") for m in messages if m.error is None],
            "context": context.model_dump(mode="json") if context else None,
            "tools": [t.model_dump(mode="json") for t in tool_schemas],
        }
        if self.model:
            body["model"] = self.model
        headers = {"Authorization": f"token {self.token}"} if self.token else {}
        try:
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(120.0, connect=5.0)) as client:
                resp = await client.post(f"{self.base_url}/agentik/api/chat", json=body, headers=headers)
        except httpx2.HTTPError as exc:
            raise ProviderConnectionError(f"Could not reach the Jupyter server route: {exc}") from None
        data = _json(resp)
        if resp.status_code in (401, 403):
            raise ProviderError(
                f"The Jupyter server refused the agent's request ({resp.status_code}): the server token "
                "this kernel found is wrong or missing. Unset AGENTIK_TRANSPORT to call the provider directly.",
                status=resp.status_code,
            )
        if resp.status_code != 200:
            message = data.get("message") or data.get("error") or resp.text[:200]
            if data.get("error") == "Missing configuration":
                raise ConfigurationError(str(message))
            raise ProviderError(f"{data.get('error', 'Error')}: {message}", status=resp.status_code)
        content = data.get("content") or ""
        calls = [
            ProviderToolCall(id=c["id"], name=c["name"], args=c.get("args") or {})
            for c in data.get("toolCalls") or []
        ]
        if content:
            yield TextDelta(text=content)
        yield StreamDone(response=ProviderChatResponse(content=content or None, tool_calls=calls))


def _json(resp: Any) -> dict[str, Any]:
    try:
        data = json.loads(resp.text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def default_transport(model: str | None = None) -> InProcessTransport | ServerTransport:
    """In-process unless AGENTIK_TRANSPORT=server and the server's URL is known."""
    if os.environ.get("AGENTIK_TRANSPORT", "").lower() == "server":
        from .kernel.server_info import find_server

        server = find_server()
        if server is not None:
            return ServerTransport(server.url, server.token, model)
    return InProcessTransport(model)
