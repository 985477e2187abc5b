"""Which names in the kernel are the user's data, and cheap one-line facts about them.

Everything here must stay cheap on a 10-million-row frame: shapes come from
`.shape` or `len()` of known containers, never from a repr.
"""

from __future__ import annotations

import difflib
import inspect
import reprlib
import sys
import types
from typing import Any, Iterator, Mapping

from .. import engines
from ..types import VariableSummary

# Names IPython puts in the namespace even when user_ns_hidden is not at hand.
IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})

# Modules whose containers have a cheap, side-effect-free len(); a Dask frame's len() computes.
_CHEAP_LEN_MODULES = frozenset({"builtins", "collections", "numpy", "pandas", "polars", "array"})

_MISSING = object()


def is_user_variable(name: str, value: Any, hidden: Mapping[str, Any] | None = None) -> bool:
    """True for the data a user made: not modules, functions, classes, IPython internals or _names."""
    if name.startswith("_"):
        return False
    if hidden is not None and name in hidden and hidden[name] is value:
        return False
    if hidden is None and name in IPYTHON_NAMES:
        return False
    if isinstance(value, (types.ModuleType, type)) or inspect.isroutine(value):
        return False
    return type(value).__name__ not in {"ExitAutocall", "IPyAutocall"}


def user_variables(user_ns: Mapping[str, Any], hidden: Mapping[str, Any] | None = None) -> Iterator[tuple[str, Any]]:
    """The user's variables in definition order."""
    for name, value in list(user_ns.items()):
        if is_user_variable(name, value, hidden):
            yield name, value


def type_name(value: Any) -> str:
    """`int`, `list`, `numpy.ndarray`, `pandas.DataFrame`: short and unambiguous."""
    cls = type(value)
    module = cls.__module__ or ""
    if module == "builtins":
        return cls.__qualname__
    return f"{module.split('.')[0]}.{cls.__qualname__}"


def _module_root(value: Any) -> str:
    return (type(value).__module__ or "").split(".")[0]


def shape_of(value: Any) -> str | None:
    """`(rows, cols)` from `.shape`, `len=N` for known containers, else None (never a repr)."""
    if isinstance(value, (str, bytes, bytearray)):
        return f"len={len(value)}"
    if isinstance(value, (int, float, complex, bool)) or value is None:
        return None
    lazy = engines.one_line(value)
    if lazy is not None:
        return lazy
    root = _module_root(value)
    if root in _CHEAP_LEN_MODULES or isinstance(value, (list, tuple, dict, set, frozenset)):
        shape = _safe_getattr(value, "shape")
        if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
            return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"
        if hasattr(type(value), "__len__"):
            try:
                return f"len={len(value)}"
            except Exception:
                return None
        return None
    shape = _safe_getattr(value, "shape")
    if isinstance(shape, tuple) and shape and all(isinstance(n, int) for n in shape):
        return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"
    return None


def _safe_getattr(value: Any, attr: str) -> Any:
    try:
        return getattr(value, attr, None)
    except Exception:
        return None


def summarize_variables(
    user_ns: Mapping[str, Any], limit: int = 50, hidden: Mapping[str, Any] | None = None
) -> list[VariableSummary]:
    """The most recently defined `limit` user variables with type and shape, for AgentContext."""
    found = list(user_variables(user_ns, hidden))
    return [VariableSummary(name=n, type=type_name(v), shape=shape_of(v)) for n, v in found[-limit:]]


def lookup(user_ns: Mapping[str, Any], name: str, hidden: Mapping[str, Any] | None = None) -> Any:
    """The value of `name` or `name.attr.attr`; a NameError with a suggestion when missing."""
    name = name.strip()
    head, *attrs = name.split(".")
    value = user_ns.get(head, _MISSING) if head.isidentifier() else _MISSING
    if value is _MISSING:
        raise NameError(f"no variable named {head!r}{_suggestion(user_ns, head, hidden)}")
    for i, attr in enumerate(attrs):
        try:
            value = getattr(value, attr)
        except Exception as exc:
            path = ".".join([head, *attrs[:i]])
            raise AttributeError(f"{path!r} has no attribute {attr!r} ({type(exc).__name__})") from None
    return value


def _suggestion(user_ns: Mapping[str, Any], name: str, hidden: Mapping[str, Any] | None) -> str:
    names = [n for n, _ in user_variables(user_ns, hidden)]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if close:
        return "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    if names:
        shown = ", ".join(names[:15]) + (", …" if len(names) > 15 else "")
        return f"; user variables: {shown}"
    return "; the namespace has no user variables yet"


class _BoundedRepr(reprlib.Repr):
    """reprlib with array-likes shown as `<type shape>` tags, even inside containers."""

    def repr1(self, x: Any, level: int) -> str:
        if _module_root(x) in {"pandas", "polars", "numpy"} and hasattr(x, "shape") and not _is_scalar(x):
            return f"<{type_name(x)} {shape_of(x) or ''}>".replace(" >", ">")
        return super().repr1(x, level)


_REPR = _BoundedRepr()
_REPR.maxstring = 200
_REPR.maxother = 200
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdict = 10
_REPR.maxlevel = 3


def short_repr(value: Any, limit: int = 300) -> str:
    """A repr bounded in size; containers are cut item by item, not rendered whole first."""
    try:
        text = _REPR.repr(value)
    except Exception as exc:
        text = f"<{type_name(value)}: repr failed: {type(exc).__name__}>"
    return clip(text, limit)


def _is_scalar(value: Any) -> bool:
    return getattr(value, "shape", None) == ()


def clip(text: str, limit: int) -> str:
    """Keep head and tail of `text` within `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 10)
    head, tail = text[: keep * 2 // 3], text[-(keep // 3) :]
    return f"{head}… [{len(text) - len(head) - len(tail)} chars cut] …{tail}"


def imported(module: str) -> Any | None:
    """The module if the user already imported it; we never import pandas or polars ourselves."""
    return sys.modules.get(module)
