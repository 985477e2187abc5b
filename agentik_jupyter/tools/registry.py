"""Tool registries, the `@tool` decorator, and where a tool runs.

A tool is a plain or async Python function; its type hints become the
parameters the model sees, its docstring the description.

Where it runs (`run_tool`): an async tool is awaited on the kernel's loop; a plain
function is called directly on the loop's thread, the kernel's main thread, between the
user's executions, so it never races a cell over the same DataFrame (pandas and
matplotlib are not thread-safe) and a kernel interrupt reaches it. A long synchronous
tool can opt into a worker thread with `@tool(thread=True)`: the kernel and the Stop
button stay responsive while it runs, but it may run beside the user's next cell, and
Stop abandons it rather than stopping it (the thread runs to its end).

Whether it asks (`policy`): a user's tool may do anything (send mail, delete files), so one
that does not say otherwise asks the user before each run (`ask`), like `run_code`. A
read-only tool says `policy="auto"`; the built-in data tools say so themselves.
"""

from __future__ import annotations

import asyncio
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar, get_args, get_origin, overload

from pydantic import BaseModel, TypeAdapter

from agentik_jupyter.errors import DuplicateToolError
from agentik_jupyter.types import (
    DEFAULT_POLICY,
    ApprovalPolicy,
    ParameterType,
    ToolDefinition,
    ToolParameter,
    ToolSchema,
)

T = TypeVar("T")


class DefinitionRegistry(Generic[T]):
    """Named definitions; a second one under the same name is an error unless replaced."""

    def __init__(self) -> None:
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T, *, replace: bool = False) -> T:
        if name in self._items and not replace:
            raise DuplicateToolError(f"A tool named {name!r} is already registered; pass replace=True to replace it.")
        self._items[name] = item
        return item

    def unregister(self, name: str) -> None:
        self._items.pop(name, None)

    def get(self, name: str) -> T | None:
        return self._items.get(name)

    def has(self, name: str) -> bool:
        return name in self._items

    def get_all(self) -> list[T]:
        return list(self._items.values())

    def __len__(self) -> int:
        return len(self._items)


class ToolRegistry(DefinitionRegistry[ToolDefinition]):
    @overload
    def register(self, name: ToolDefinition, item: None = None, *, replace: bool = False) -> ToolDefinition: ...

    @overload
    def register(self, name: str, item: ToolDefinition, *, replace: bool = False) -> ToolDefinition: ...

    def register(
        self, name: str | ToolDefinition, item: ToolDefinition | None = None, *, replace: bool = False
    ) -> ToolDefinition:
        """`register(definition)` as in the spec (the same as `add`), or `register(name, definition)`."""
        if isinstance(name, ToolDefinition):
            if item is not None:
                raise TypeError("register(definition) takes no second definition")
            return self.add(name, replace=replace)
        if item is None:
            raise TypeError(f"register({name!r}) needs the ToolDefinition to register")
        return super().register(name, item, replace=replace)

    def add(self, definition: ToolDefinition, *, replace: bool = False) -> ToolDefinition:
        """Register `definition` (one built without a policy asks: `types.DEFAULT_POLICY`)."""
        existing = self.get(definition.name)
        redefinition = existing is not None and existing.origin is not None and existing.origin == definition.origin
        return super().register(definition.name, definition, replace=replace or redefinition)

    def to_tool_schemas(self) -> list[ToolSchema]:
        """Every tool in the internal, provider-agnostic form that adapters convert."""
        return [d.schema_() for d in self.get_all()]

    def set_policy(self, name: str, policy: ApprovalPolicy) -> None:
        definition = self.get(name)
        if definition is None:
            raise KeyError(f"No tool named {name!r}.")
        self._items[name] = definition.model_copy(update={"policy": policy})


_SCALARS: dict[type, ParameterType] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    set: "array",
    dict: "object",
}


def _strip_optional(hint: Any) -> Any:
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def parameter_from_hint(key: str, hint: Any, required: bool, description: str = "") -> ToolParameter:
    """Map one Python type hint to a ToolParameter (with a JSON schema for the wire)."""
    base = _strip_optional(hint)
    origin = get_origin(base)
    enum: list[Any] | None = None
    ptype: ParameterType
    if origin in (typing.Union, types.UnionType):
        first = next(a for a in get_args(base) if a is not type(None))
        ptype = parameter_from_hint(key, first, required).type
    elif origin is Literal:
        enum = list(get_args(base))
        first = type(enum[0]) if enum else str
        ptype = _SCALARS.get(first, "string")
    elif inspect.isclass(base) and issubclass(base, BaseModel):
        ptype = "object"
    elif base in _SCALARS:
        ptype = _SCALARS[base]
    elif origin in _SCALARS:
        ptype = _SCALARS[origin]
    elif base is Any or base is inspect.Parameter.empty:
        ptype = "string"
    else:
        raise TypeError(f"Unsupported type hint for tool parameter {key!r}: {hint!r}")
    schema: dict[str, Any] | None = None
    if base is not Any and base is not inspect.Parameter.empty:
        schema = TypeAdapter(base).json_schema()
        schema.pop("title", None)
        if description:
            schema["description"] = description
    return ToolParameter(key=key, type=ptype, required=required, description=description, enum=enum, json_schema=schema)


def _param_docs(doc: str) -> dict[str, str]:
    """Read `name: text` lines from an Args/Parameters section of a docstring."""
    found: dict[str, str] = {}
    in_args = False
    for raw in doc.splitlines():
        line = raw.strip()
        if line.lower().rstrip(":") in {"args", "arguments", "parameters"}:
            in_args = True
            continue
        if in_args:
            if not line:
                in_args = False
                continue
            name, sep, text = line.partition(":")
            name = name.split("(")[0].strip()
            if sep and name.isidentifier():
                found[name] = text.strip()
    return found


def _summary(doc: str) -> str:
    lines: list[str] = []
    for raw in doc.strip().splitlines():
        if raw.strip().lower().rstrip(":") in {"args", "arguments", "parameters", "returns"}:
            break
        lines.append(raw.strip())
    return " ".join(line for line in lines if line).strip()


def definition_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    policy: ApprovalPolicy | None = None,
    source: str = "user",
    thread: bool = False,
) -> ToolDefinition:
    """Build a ToolDefinition from a function's signature, hints and docstring.

    `thread=True` runs a synchronous function in a worker thread (see the module docstring).
    Without a `policy`, a user tool asks before each run; a built-in one runs (`auto`).
    """
    if policy is None:
        policy = DEFAULT_POLICY if source == "user" else "auto"
    if thread and inspect.iscoroutinefunction(fn):
        raise TypeError(f"Tool {fn.__name__!r} is async: it runs on the kernel's loop, thread=True does not apply.")
    doc = inspect.getdoc(fn) or ""
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:
        raise TypeError(f"Cannot resolve the type hints of tool {fn.__name__!r}: {exc}") from exc
    docs = _param_docs(doc)
    params: list[ToolParameter] = []
    models: dict[str, TypeAdapter[Any]] = {}
    for pname, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        hint = hints.get(pname, p.annotation)
        params.append(parameter_from_hint(pname, hint, p.default is p.empty, docs.get(pname, "")))
        base = _strip_optional(hint)
        if inspect.isclass(base) and issubclass(base, BaseModel):
            models[pname] = TypeAdapter(hint)
    execute = _with_models(fn, models) if models else fn
    return ToolDefinition(
        name=name or fn.__name__,
        description=description if description is not None else _summary(doc),
        parameters=params,
        execute=execute,
        policy=policy,
        source=source,
        origin=f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', fn.__name__)}",
        thread=thread,
    )


def _with_models(fn: Callable[..., Any], models: dict[str, TypeAdapter[Any]]) -> Callable[..., Any]:
    """Turn dict arguments into the pydantic models the function declares."""

    def convert(kwargs: dict[str, Any]) -> dict[str, Any]:
        return {k: models[k].validate_python(v) if k in models else v for k, v in kwargs.items()}

    if inspect.iscoroutinefunction(fn):

        async def run_async(**kwargs: Any) -> Any:
            return await fn(**convert(kwargs))

        return run_async

    def run(**kwargs: Any) -> Any:
        return fn(**convert(kwargs))

    return run


def holds_loop(definition: ToolDefinition | None) -> bool:
    """Whether running the tool may hold the kernel's loop for long (a plain synchronous tool
    not marked `quick`; an unknown one is assumed to): nothing else on the loop, such as a
    view's timer, runs until it returns."""
    if definition is None:
        return True
    return not (definition.quick or definition.thread or inspect.iscoroutinefunction(definition.execute))


async def run_tool(definition: ToolDefinition, args: dict[str, Any]) -> Any:
    """Call a tool where it belongs: async ones awaited on this loop, plain ones on this
    thread (the kernel's main thread), `thread=True` ones in a worker thread.

    Exceptions, KeyboardInterrupt included, propagate unchanged: an interrupt in a tool is
    the caller's to handle as a Stop, never a tool error.
    """
    fn = definition.execute
    if inspect.iscoroutinefunction(fn):
        value = await fn(**args)
    elif definition.thread:
        value = await asyncio.to_thread(fn, **args)
    else:
        value = fn(**args)
    if inspect.isawaitable(value):
        value = await value
    return value


default_registry = ToolRegistry()


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    policy: ApprovalPolicy = DEFAULT_POLICY,
    replace: bool = False,
    registry: ToolRegistry | None = None,
    thread: bool = False,
) -> Any:
    """Register a function as a tool the model can call.

    Redefining the same function (re-running its notebook cell) replaces the
    tool; a different function under a taken name needs `replace=True`.

    `policy`: `ask` (the default) shows an approval card before each run, `auto` runs
    without asking, `deny` never runs. A tool that only reads (looks something up,
    computes from its arguments) should say `policy="auto"`; one with side effects
    (sends, writes, deletes, spends) keeps `ask`.

    A plain function runs on the kernel's main thread between the user's cells: safe
    with pandas and matplotlib, interruptible with the kernel's Interrupt, but the
    kernel (widgets, Stop) waits while it runs. `thread=True` runs it in a worker
    thread instead: the kernel stays responsive, but the tool may run while the user's
    next cell changes the same data, and Stop cannot end it early (the thread finishes
    its work; only the turn moves on). Use it for long, self-contained work (a network
    call, a file scan) that does not touch the user's variables.
    """

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        definition = definition_from_function(f, name=name, description=description, policy=policy, thread=thread)
        (registry if registry is not None else default_registry).add(definition, replace=replace)
        f.__agentik_tool__ = definition  # type: ignore[attr-defined]
        return f

    if fn is not None:
        return decorate(fn)
    return decorate


def add_builtin(registry: ToolRegistry, definition: ToolDefinition) -> ToolDefinition | None:
    """Add (or re-add, e.g. on %reload_ext) a built-in tool; None when the user's own tool has its name.

    A policy the user changed survives the re-add; a user's tool of the same name wins over ours.
    """
    existing = registry.get(definition.name)
    if existing is not None and existing.source != "builtin":
        return None
    if existing is not None:
        definition.policy = existing.policy
    return registry.add(definition, replace=True)
