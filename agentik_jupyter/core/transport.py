"""How the loop in the kernel reaches the chat route.

`InProcessTransport` calls chat.stream_chat in the kernel; `ServerTransport` posts to the
Jupyter Server route and reads its SSE answer, so the key stays on the server and the answer
still streams. Both yield the same provider deltas to the orchestrator. A kernel started by a
server that holds the key (our server extension takes it out of what kernels inherit) uses
`KeyAwareTransport`: the server's route while the kernel has no key, in-process once it has one.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

from agentik_jupyter.core.chat_route import MISSING_CONFIGURATION, stream_chat
from agentik_jupyter.core.server_info import find_server
from agentik_jupyter.errors import ConfigurationError, ProviderConnectionError, ProviderError
from agentik_jupyter.providers.base import (
    ProviderChatResponse,
    ProviderDelta,
    ProviderToolCall,
    ReasoningDelta,
    StreamDone,
    TextDelta,
    ToolCallStart,
    UsageDelta,
)
from agentik_jupyter.types import AgentContext, ChatMessage, ToolSchema, Usage


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
    """POST /agentik/api/chat on the Jupyter server that started this kernel, as SSE.

    The key stays in the server's environment; the answer still streams token by token.
    Stop cancels the task reading the stream: leaving ``client.stream`` closes the
    connection, and the server cancels its provider request at once.
    """

    def __init__(self, base_url: str, token: str | None, model: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.model = model
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _pooled(self) -> Any:
        """One client per event loop, kept across model calls: a new client loads the CA
        certificates and opens a new connection (tens of milliseconds a call)."""
        import httpx2

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop or self._client.is_closed:
            timeout = httpx2.Timeout(SERVER_READ_TIMEOUT_S, connect=SERVER_CONNECT_TIMEOUT_S)
            self._client, self._loop = httpx2.AsyncClient(timeout=timeout), loop
        return self._client

    async def stream(
        self, messages: list[ChatMessage], context: AgentContext | None, tool_schemas: list[ToolSchema]
    ) -> AsyncIterator[ProviderDelta]:
        import httpx2

        body: dict[str, Any] = {
            "messages": [
                m.model_dump(mode="json", exclude={"notice"}) for m in messages if m.error is None and m.notice is None
            ],
            "context": context.model_dump(mode="json") if context else None,
            "tools": [t.model_dump(mode="json") for t in tool_schemas],
        }
        if self.model:
            body["model"] = self.model
        headers = {"Accept": "text/event-stream"}
        if self.token:
            headers["Authorization"] = f"token {self.token}"
        finished = False
        try:
            async with self._pooled().stream(
                "POST", f"{self.base_url}/agentik/api/chat", json=body, headers=headers
            ) as resp:
                if resp.status_code != 200:
                    await resp.aread()
                    _raise_for(resp.status_code, _json(resp))
                async for kind, data in _events(resp.aiter_lines()):
                    if finished:
                        continue  # read to the body's end, so the connection goes back to the pool
                    delta = _delta(kind, data)
                    if delta is not None:
                        yield delta
                    finished = kind == "end"
        except httpx2.HTTPError as exc:
            raise ProviderConnectionError(f"Could not reach the Jupyter server route: {exc}") from None
        if not finished:
            raise ProviderConnectionError("The Jupyter server's answer stream ended before the turn finished.")


class ServerNotFoundTransport:
    """AGENTIK_TRANSPORT=server in a kernel no Jupyter server started: every turn says so."""

    def __init__(self, model: str | None = None, message: str | None = None) -> None:
        self.model = model
        self.message = message or NO_SERVER_MESSAGE

    async def stream(
        self, messages: list[ChatMessage], context: AgentContext | None, tool_schemas: list[ToolSchema]
    ) -> AsyncIterator[ProviderDelta]:
        raise ConfigurationError(self.message)
        yield  # pragma: no cover  (makes this an async generator like the others)


NO_SERVER_MESSAGE = (
    "AGENTIK_TRANSPORT=server, but no Jupyter server started this kernel (no JPY_PARENT_PID, or no "
    "jpserver-<pid>.json in the Jupyter runtime dir), so there is no server to send the turn to. "
    "Open the notebook from JupyterLab / Jupyter Server, or unset AGENTIK_TRANSPORT to call the "
    "provider from the kernel."
)
SERVER_READ_TIMEOUT_S = 120.0
SERVER_CONNECT_TIMEOUT_S = 5.0


def _raise_for(status: int, data: dict[str, Any]) -> None:
    if status in (401, 403):
        raise ProviderError(
            f"The Jupyter server refused the agent's request ({status}): the server token "
            "this kernel found is wrong or missing, or your user may not use the agent "
            "(resource 'agentik'). Unset AGENTIK_TRANSPORT to call the provider directly.",
            status=status,
        )
    _raise_error(data, status)


def _raise_error(data: dict[str, Any], status: int | None) -> None:
    message = data.get("message") or data.get("error") or "no details"
    if data.get("error") == MISSING_CONFIGURATION:
        raise ConfigurationError(str(message))
    raise ProviderError(f"{data.get('error', 'Error')}: {message}", status=data.get("status") or status)


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """SSE frames -> (event type, JSON data); comments and ids are skipped."""
    data: list[str]
    kind, data = "message", []
    async for line in lines:
        if not line:
            if data:
                try:
                    payload = json.loads("\n".join(data))
                except ValueError:
                    payload = None
                if isinstance(payload, dict):
                    yield kind, payload
            kind, data = "message", []
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))


def _delta(kind: str, data: dict[str, Any]) -> ProviderDelta | None:
    """One route event as the delta the in-process adapter would have yielded."""
    if kind == "delta":
        return TextDelta(text=str(data.get("text") or ""))
    if kind == "reasoning":
        return ReasoningDelta(text=str(data.get("text") or ""))
    if kind == "usage":
        return UsageDelta(usage=Usage.model_validate({k: v for k, v in data.items() if k != "type"}))
    if kind == "tool_call":
        return ToolCallStart(index=int(data.get("index") or 0), id=str(data["id"]), name=str(data["name"]))
    if kind == "error":
        _raise_error(data, None)
    if kind == "end":
        calls = [
            ProviderToolCall(id=c["id"], name=c["name"], args=c.get("args") or {}) for c in data.get("toolCalls") or []
        ]
        usage = data.get("usage")
        return StreamDone(
            response=ProviderChatResponse(
                content=data.get("content") or None,
                reasoning=data.get("reasoning"),
                tool_calls=calls,
                finish_reason=data.get("finish_reason"),
                usage=Usage.model_validate(usage) if usage else None,
            )
        )
    return None


def _json(resp: Any) -> dict[str, Any]:
    try:
        data = json.loads(resp.text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


PROVIDER_IN_SERVER = "AGENTIK_PROVIDER_IN_SERVER"
"""The non-secret marker a Jupyter server with our extension puts where it took the key from:
the kernels it starts inherit it (server/provider_env.py)."""
KEY_VARIABLE = "LLM_API_KEY"

KEY_IN_SERVER = "in the Jupyter server; this kernel has none"
KEY_IN_KERNEL = "in this kernel"
KEY_NOWHERE = "not set"

KEY_SOURCE = "AGENTIK_KEY_SOURCE"
"""Beside the marker: where the server took its key from (a SOURCE_* value, never the key)."""
SOURCE_ENVIRONMENT = "environment"
SOURCE_FILE = "file"
SOURCE_CONFIG = "config"
SOURCE_UNREADABLE = "unreadable"
"""The server was pointed to a key it could not read (a missing LLM_API_KEY_FILE)."""
SAFER_WAYS = "LLM_API_KEY_FILE (a file the server reads once) or c.AgentikJupyter.api_key in the server's config"
KEY_ORIGINS = {
    SOURCE_ENVIRONMENT: (
        "LLM_API_KEY in the server's environment. Processes of the same user could read it there: whatever "
        "started the server (a shell, a container's first process, a service) keeps its copy, and outside "
        "Linux the server's own environment shows it. Safer: " + SAFER_WAYS + " (docs/security.md)"
    ),
    SOURCE_FILE: "a file the server read once (LLM_API_KEY_FILE); no process's environment holds it",
    SOURCE_CONFIG: "the server's config (AgentikJupyter.api_key); no process's environment holds it",
    SOURCE_UNREADABLE: "the server could not read its key (its log and each turn's error say why); turns fail",
}
KEY_ORIGIN_KERNEL = (
    "LLM_API_KEY in this kernel's environment: code in this kernel (approved run_code, tools, libraries) "
    "can read it, and so can processes of the same user when the kernel was started with it. Started "
    "from Jupyter Server with " + SAFER_WAYS + ", the key stays out of the kernel"
)

NO_SERVER_FOR_KEY_MESSAGE = (
    "The Jupyter server holds the LLM key (AGENTIK_PROVIDER_IN_SERVER=1), but this kernel cannot "
    "find that server (no JPY_PARENT_PID, or no jpserver-<pid>.json in the Jupyter runtime dir): a "
    "kernel started by something else inherited the marker. Set the key in this kernel without "
    "saving it in the notebook (import os, getpass; os.environ['LLM_API_KEY'] = getpass.getpass()), "
    "or open the notebook from JupyterLab / Jupyter Server."
)


def key_location(environ: Mapping[str, str] | None = None) -> str:
    """Where this kernel's turns find the key: KEY_IN_KERNEL, KEY_IN_SERVER or KEY_NOWHERE."""
    env = os.environ if environ is None else environ
    if (env.get(KEY_VARIABLE) or "").strip():
        return KEY_IN_KERNEL
    if env.get(PROVIDER_IN_SERVER) == "1":
        return KEY_IN_SERVER
    return KEY_NOWHERE


def key_origin(environ: Mapping[str, str] | None = None) -> str:
    """Where the key this kernel's turns use came from, and who else can read it there ("" when
    unknown: no key, or a server too old to say)."""
    env = os.environ if environ is None else environ
    where = key_location(env)
    if where == KEY_IN_KERNEL:
        return KEY_ORIGIN_KERNEL
    if where == KEY_IN_SERVER:
        return KEY_ORIGINS.get(env.get(KEY_SOURCE, ""), "")
    return ""


def provider_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this kernel's turns have a provider to call, wherever it is: a key in this kernel,
    or a Jupyter server that holds it (its marker, or `AGENTIK_TRANSPORT=server`). What decides
    "no provider configured" (the quickstart's demo) asks this, never `LLM_API_KEY` alone: a
    server that holds the key has taken it out of the kernel's environment."""
    env = os.environ if environ is None else environ
    choice = (env.get("AGENTIK_TRANSPORT") or "").strip().lower()
    if choice == "server":
        return True
    where = key_location(env)
    if choice == "kernel":
        return where == KEY_IN_KERNEL
    return where != KEY_NOWHERE


class KeyAwareTransport:
    """A kernel started by a server that holds the key: each model call goes to that server's
    route while this kernel has no key, and stays in the kernel once the user sets one here
    (`%env`, `getpass`). Decided per call, so setting the key mid-session counts at once."""

    def __init__(self, model: str | None = None) -> None:
        self.model = model
        self._server: ServerTransport | None = None

    def current(self) -> InProcessTransport | ServerTransport | ServerNotFoundTransport:
        if key_location() != KEY_IN_SERVER:
            return InProcessTransport(self.model)
        if self._server is None:
            server = find_server()
            if server is None:
                return ServerNotFoundTransport(self.model, NO_SERVER_FOR_KEY_MESSAGE)
            self._server = ServerTransport(server.url, server.token)
        self._server.model = self.model
        return self._server

    def stream(
        self, messages: list[ChatMessage], context: AgentContext | None, tool_schemas: list[ToolSchema]
    ) -> AsyncIterator[ProviderDelta]:
        return self.current().stream(messages, context, tool_schemas)


AnyTransport = InProcessTransport | ServerTransport | ServerNotFoundTransport | KeyAwareTransport


def default_transport(model: str | None = None) -> AnyTransport:
    """`AGENTIK_TRANSPORT=server`: the server that started this kernel, or a transport whose every
    turn says clearly that there is none (never a silent fallback that would need the key in the
    kernel). `AGENTIK_TRANSPORT=kernel`: in-process. Unset: the server's route when the server
    holds the key (the marker) and this kernel has none, else in-process."""
    choice = os.environ.get("AGENTIK_TRANSPORT", "").strip().lower()
    if choice == "server":
        server = find_server()
        if server is None:
            return ServerNotFoundTransport(model)
        return ServerTransport(server.url, server.token, model)
    if choice != "kernel" and os.environ.get(PROVIDER_IN_SERVER) == "1":
        return KeyAwareTransport(model)
    return InProcessTransport(model)
