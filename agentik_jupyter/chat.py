"""The chat route: request -> system prompt + tool schemas -> adapter -> response.

One function serves both ways the kernel reaches a model: in-process (the
default) and the Jupyter server route `POST /agentik/api/chat`, so both validate
the same body and report failures the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import PurePath
from typing import Any, AsyncIterator, Mapping

from pydantic import ValidationError

from .providers.base import ChatParams, ProviderAdapter, ProviderDelta, collect
from .providers.config import ProviderConfig, load_config, make_adapter
from .providers.errors import AgentikError, ConfigurationError, ProviderError, scrub
from .types import AgentContext, ChatMessage, ChatRequest, ChatResponseBody, ToolCall, ToolSchema

BASE_SYSTEM_PROMPT = """\
You are agentik, an assistant that lives inside the user's Jupyter kernel.
You help a data scientist understand and work with the data in their notebook.
Use the tools to look at real variables and DataFrames instead of guessing; summarise
what you find. Code you want to run goes through the run_code tool, which asks the user
first; if the user declines, do not insist. Keep answers short and use Markdown."""

MAX_CONTEXT_VARIABLES = 40


class ChatRouteError(Exception):
    """A failure with the HTTP status and JSON body the server route answers with."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("message") or body.get("error"))
        self.status = status
        self.body = body


def build_system_prompt(context: AgentContext | None, environ: Mapping[str, str] | None = None) -> str:
    """The built-in prompt, the user's standing instructions, and where we are in the notebook."""
    env = os.environ if environ is None else environ
    parts = [BASE_SYSTEM_PROMPT]
    extra = (env.get("AGENTIK_SYSTEM_PROMPT") or "").strip()
    if extra:
        parts.append("The user's standing instructions:\n" + extra)
    if context is not None and context.instructions:
        parts.append("The project's instructions (its AGENTS.md, trusted by the user):\n" + context.instructions)
    if context is not None:
        name = PurePath(context.notebook_path).name if context.notebook_path else "unknown (plain IPython)"
        where = [f"Notebook: {name}"]  # the name, not the user's folders
        if context.cell_id:
            where.append(f"Asking cell: {context.cell_id}")
        if context.execution_count is not None:
            where.append(f"Execution count: {context.execution_count}")
        shown = context.variables[:MAX_CONTEXT_VARIABLES]
        if shown:
            lines = [f"- {v.name}: {v.type}" + (f" {v.shape}" if v.shape else "") for v in shown]
            more = len(context.variables) - len(shown)
            if more > 0:
                lines.append(f"- … and {more} more (use list_variables)")
            where.append("Variables in the kernel:\n" + "\n".join(lines))
        else:
            where.append("Variables in the kernel: none yet")
        parts.append("\n".join(where))
    return "\n\n".join(parts)


def parse_request(body: bytes | str | dict[str, Any]) -> ChatRequest:
    """Validate a request body; invalid input is a 400 that says what is wrong."""
    try:
        if isinstance(body, (bytes, str)):
            data = json.loads(body or b"null")
        else:
            data = body
        return ChatRequest.model_validate(data)
    except json.JSONDecodeError as exc:
        raise ChatRouteError(400, {"error": "Invalid request body", "message": f"not JSON: {exc}"}) from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ChatRouteError(400, {"error": "Invalid request body", "message": problems}) from None


class AdapterCache:
    """One adapter (and HTTP connection pool) per configuration and event loop."""

    def __init__(self) -> None:
        self._adapters: dict[tuple[Any, ...], ProviderAdapter] = {}

    def get(self, config: ProviderConfig) -> ProviderAdapter:
        key = (
            id(asyncio.get_running_loop()),
            config.provider,
            config.base_url,
            config.api_key.get_secret_value(),
            config.include_usage,
        )
        adapter = self._adapters.get(key)
        if adapter is None:
            adapter = self._adapters[key] = make_adapter(config)
        return adapter

    async def aclose(self) -> None:
        adapters, self._adapters = list(self._adapters.values()), {}
        for adapter in adapters:
            await adapter.aclose()


_adapters = AdapterCache()


def _params(
    messages: list[ChatMessage],
    context: AgentContext | None,
    tool_schemas: list[ToolSchema],
    config: ProviderConfig,
    environ: Mapping[str, str] | None,
) -> ChatParams:
    return ChatParams(
        model=config.model,
        messages=[m for m in messages if m.error is None],
        system_prompt=build_system_prompt(context, environ),
        tool_schemas=tool_schemas,
    )


async def stream_chat(
    messages: list[ChatMessage],
    context: AgentContext | None,
    tool_schemas: list[ToolSchema],
    *,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
    adapters: AdapterCache | None = None,
) -> AsyncIterator[ProviderDelta]:
    """Stream one model call; configuration is read here, where the provider is called."""
    config = load_config(environ, model_override=model)
    adapter = (adapters or _adapters).get(config)
    async for delta in adapter.stream(_params(messages, context, tool_schemas, config, environ)):
        yield delta


async def handle(
    body: bytes | str | dict[str, Any],
    tool_schemas: list[ToolSchema] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    adapters: AdapterCache | None = None,
) -> dict[str, Any]:
    """The route: `{messages, context?}` -> `{content, toolCalls?}`, or a ChatRouteError."""
    request = parse_request(body)
    if tool_schemas is None:
        tool_schemas = request.tools
    if tool_schemas is None:
        from .registry import default_registry

        tool_schemas = default_registry.to_tool_schemas()
    try:
        response = await collect(
            stream_chat(
                request.messages, request.context, tool_schemas,
                model=request.model, environ=environ, adapters=adapters,
            )
        )
    except ConfigurationError as exc:
        raise ChatRouteError(502, {"error": "Missing configuration", "message": exc.message}) from None
    except ProviderError as exc:
        raise ChatRouteError(
            502, {"error": "LLM provider error", "message": exc.message, "code": exc.code, "status": exc.status}
        ) from None
    except AgentikError as exc:
        raise ChatRouteError(502, {"error": "LLM provider error", "message": exc.message}) from None
    calls = [ToolCall(id=c.id, name=c.name, args=c.args) for c in response.tool_calls]
    out = ChatResponseBody(content=response.content or "", toolCalls=calls or None)
    return out.model_dump(exclude_none=True)


def error_body(exc: BaseException) -> dict[str, Any]:
    """A JSON error body for an unexpected failure, scrubbed of the key."""
    return {"error": "Internal error", "message": scrub(f"{type(exc).__name__}: {exc}")}
