"""The chat route: request -> system prompt + tool schemas -> adapter -> response.

One function serves both ways the kernel reaches a model: in-process (the
default) and the Jupyter server route `POST /agentik/api/chat`, so both validate
the same body and report failures the same way.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import Any

from pydantic import ValidationError

from agentik_jupyter.core.prompt import build_system_prompt
from agentik_jupyter.errors import ChatRouteError, ConfigurationError, ProviderError
from agentik_jupyter.providers._http import close_on_its_loop
from agentik_jupyter.providers.base import ChatParams, ProviderAdapter, ProviderDelta, collect
from agentik_jupyter.providers.config import ProviderConfig, load_config, make_adapter
from agentik_jupyter.security.scrub import scrub, scrub_value
from agentik_jupyter.tools.registry import default_registry
from agentik_jupyter.types import AgentContext, ChatMessage, ChatRequest, ChatResponseBody, ToolCall, ToolSchema

MAX_JSON_DEPTH = 64
"""Nesting the route accepts; real bodies stay under ~10, and deeper ones made json/pydantic recurse to a 500."""
MISSING_CONFIGURATION = "Missing configuration"
"""The error of a 502 that a setting (not the provider) caused; the kernel raises it as ConfigurationError."""
ALLOWED_MODELS_ENV = "AGENTIK_ALLOWED_MODELS"


def _invalid(message: str) -> ChatRouteError:
    return ChatRouteError(400, {"error": "Invalid request body", "message": message})


def _too_deep() -> ChatRouteError:
    return _invalid(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def json_depth_ok(data: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if no list/dict in ``data`` is nested more than ``limit`` deep (iterative: never recurses)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return True


def load_body(body: bytes | str) -> Any:
    """The JSON of a request body, or a 400 for text that is not JSON or nests too deep."""
    try:
        data = json.loads(body or b"null")
    except RecursionError:
        raise _too_deep() from None
    except ValueError as exc:
        raise _invalid(f"not JSON: {exc}") from None
    if not json_depth_ok(data):
        raise _too_deep()
    return data


def allowed_models(environ: Mapping[str, str] | None = None) -> list[str]:
    """AGENTIK_ALLOWED_MODELS as a list; empty means any model may be named."""
    raw = (os.environ if environ is None else environ).get(ALLOWED_MODELS_ENV, "")
    return [name.strip() for name in raw.split(",") if name.strip()]


def parse_request(body: bytes | str | dict[str, Any], environ: Mapping[str, str] | None = None) -> ChatRequest:
    """Validate a request body; invalid input is a 400 that says what is wrong.

    A ``model`` outside AGENTIK_ALLOWED_MODELS (when set) is a 400 too: the route spends the
    server's key, so its operator decides which models a client may ask for. Bytes and text are
    parsed (and depth-checked) here; a dict is taken as `load_body` already parsed it.
    """
    data = load_body(body) if isinstance(body, (bytes, str)) else body
    try:
        request = ChatRequest.model_validate(data)
    except RecursionError:
        raise _too_deep() from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5])
        raise _invalid(problems) from None
    allowed = allowed_models(environ)
    if request.model is not None and allowed and request.model not in allowed:
        raise _invalid(
            f"model {request.model!r} is not allowed on this server; allowed: {', '.join(allowed)} "
            f"(set by {ALLOWED_MODELS_ENV}), or name none for the server's default"
        )
    return request


MAX_CACHED_ADAPTERS = 4
"""Adapters (each with its connection pool) kept at once; the least recently used is closed."""


def config_digest(config: ProviderConfig) -> str:
    """A hash of everything that selects an adapter, so no cache holds the key itself."""
    material = json.dumps(
        [
            config.provider,
            config.base_url,
            config.api_key.get_secret_value(),
            config.include_usage,
            config.cache_control,
            config.prompt_cache_key,
            config.read_timeout,
        ]
    )
    return hashlib.sha256(material.encode()).hexdigest()


class AdapterCache:
    """One adapter (and HTTP connection pool) per configuration and event loop, bounded."""

    def __init__(self, max_size: int = MAX_CACHED_ADAPTERS) -> None:
        self.max_size = max_size
        self._adapters: OrderedDict[tuple[int, str], tuple[asyncio.AbstractEventLoop, ProviderAdapter]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._adapters)

    def get(self, config: ProviderConfig) -> ProviderAdapter:
        loop = asyncio.get_running_loop()
        for stale in [k for k, (other, _) in self._adapters.items() if other.is_closed()]:
            del self._adapters[stale]  # its loop is gone, and its sockets with it
        key = (id(loop), config_digest(config))
        entry = self._adapters.get(key)
        if entry is not None and entry[0] is loop:
            self._adapters.move_to_end(key)
            return entry[1]
        if entry is not None:
            self._drop(key)
        adapter = make_adapter(config)
        self._adapters[key] = (loop, adapter)
        while len(self._adapters) > self.max_size:
            self._drop(next(iter(self._adapters)))
        return adapter

    def _drop(self, key: tuple[int, str]) -> None:
        loop, adapter = self._adapters.pop(key)
        close_on_its_loop(adapter.aclose, loop)

    async def aclose(self) -> None:
        entries, self._adapters = list(self._adapters.values()), OrderedDict()
        current = asyncio.get_running_loop()
        for loop, adapter in entries:
            if loop is current:
                await adapter.aclose()
            else:
                close_on_its_loop(adapter.aclose, loop)


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
        messages=[m for m in messages if m.error is None and m.notice is None],
        system_prompt=build_system_prompt(context, environ),
        tool_schemas=tool_schemas,
        cache_key=context.session_key if context is not None else None,
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
    adapter = (_adapters if adapters is None else adapters).get(config)
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
    request = parse_request(body, environ)
    if tool_schemas is None:
        tool_schemas = request.tools
    if tool_schemas is None:
        tool_schemas = default_registry.to_tool_schemas()
    try:
        response = await collect(
            stream_chat(
                request.messages,
                request.context,
                tool_schemas,
                model=request.model,
                environ=environ,
                adapters=adapters,
            )
        )
    except ConfigurationError as exc:
        raise ChatRouteError(502, {"error": MISSING_CONFIGURATION, "message": exc.message}) from None
    except ProviderError as exc:
        raise ChatRouteError(
            502, {"error": "LLM provider error", "message": exc.message, "code": exc.code, "status": exc.status}
        ) from None
    calls = [ToolCall(id=c.id, name=c.name, args=c.args) for c in response.tool_calls]
    out = ChatResponseBody(content=response.content or "", toolCalls=calls or None)
    return scrub_value(out.model_dump(exclude_none=True))


def error_body(exc: BaseException) -> dict[str, Any]:
    """A JSON error body for an unexpected failure, scrubbed of the key."""
    return {"error": "Internal error", "message": scrub(f"{type(exc).__name__}: {exc}")}
