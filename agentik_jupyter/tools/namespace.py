"""Which names in the kernel are the user's data, and cheap one-line facts about them.

The turn's context is built from here before every request, so nothing here runs the
user's code: facts come from `type(value)` alone, except the shape of known array and
frame types (numpy, pandas, polars, read through the library's own `shape`) and the
length of builtin containers. A user class whose `shape`, `__len__` or `__repr__` is slow
(a lazy query, a remote dataset) costs nothing until a tool inspects it.
"""

from __future__ import annotations

import collections
import difflib
import os
import reprlib
import sys
import types
from collections.abc import Iterator, Mapping, Sized
from typing import Any

from agentik_jupyter import engines
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.types import VariableSummary

# Names IPython puts in the namespace even when user_ns_hidden is not at hand.
IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})

# Known array and frame classes (module, class name) whose own `shape` is cheap and side-effect free.
_SHAPED_CLASSES = (
    ("numpy", "ndarray"),
    ("pandas", "DataFrame"),
    ("pandas", "Series"),
    ("pandas", "Index"),
    ("polars", "DataFrame"),
    ("polars", "Series"),
)

# Builtin containers whose len() is a C field read (subclasses count only if they keep that len).
_SIZED_BUILTINS: tuple[type[Sized], ...] = (str, bytes, bytearray, list, tuple, dict, set, frozenset, collections.deque)

_ROUTINE_TYPES: tuple[type, ...] = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)


def is_user_variable(name: str, value: Any, hidden: Mapping[str, Any] | None = None) -> bool:
    """True for the data a user made: not modules, functions, classes, IPython internals or _names.

    Decided from the name and `type(value)` only: no attribute of the value is read.
    """
    if name.startswith("_"):
        return False
    if hidden is not None and name in hidden and hidden[name] is value:
        return False
    if hidden is None and name in IPYTHON_NAMES:
        return False
    cls = type(value)
    if issubclass(cls, (types.ModuleType, type, *_ROUTINE_TYPES)):
        return False
    return cls.__name__ not in {"ExitAutocall", "IPyAutocall"}


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


def _known_shaped_class(cls: type) -> type | None:
    """The numpy/pandas/polars class `cls` derives from, if `cls` keeps that class's `shape`."""
    for module_name, class_name in _SHAPED_CLASSES:
        module = sys.modules.get(module_name)
        known = getattr(module, class_name, None) if module is not None else None
        if isinstance(known, type) and issubclass(cls, known):
            return known if getattr(cls, "shape", None) is getattr(known, "shape", None) else None
    return None


def shape_of(value: Any) -> str | None:
    """`(rows, cols)` of a known array or frame, `len=N` of a builtin container, else None.

    Never runs the user's code: a user-defined `shape` property or `__len__` is not read.
    Lazy and distributed frames answer from their engine's metadata (engines.one_line).
    """
    lazy = engines.one_line(value)
    if lazy is not None:
        return lazy
    cls = type(value)
    if _known_shaped_class(cls) is not None:
        try:
            shape = value.shape
        except Exception:
            return None
        if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
            return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"
        return None
    for base in _SIZED_BUILTINS:
        if issubclass(cls, base):
            return f"len={len(value)}" if cls.__len__ is base.__len__ else None
    return None


def summarize_variables(
    user_ns: Mapping[str, Any], limit: int = 50, hidden: Mapping[str, Any] | None = None
) -> list[VariableSummary]:
    """The most recently defined `limit` user variables with type and shape, for AgentContext."""
    found = list(user_variables(user_ns, hidden))
    return [VariableSummary(name=n, type=type_name(v), shape=shape_of(v)) for n, v in found[-limit:]]


def missing_name_message(user_ns: Mapping[str, Any], name: str, hidden: Mapping[str, Any] | None) -> str:
    """`no variable named 'x'` with the closest user variables, for the model to correct itself."""
    return f"no variable named {name!r}{_suggestion(user_ns, name, hidden)}"


def _suggestion(user_ns: Mapping[str, Any], name: str, hidden: Mapping[str, Any] | None) -> str:
    names = [n for n, _ in user_variables(user_ns, hidden)]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if close:
        return "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    if names:
        shown = ", ".join(names[:15]) + (", …" if len(names) > 15 else "")
        return f"; user variables: {shown}"
    return "; the namespace has no user variables yet"


def is_environment(value: Any) -> bool:
    """os.environ, os.environb, or another os._Environ mapping of the process environment."""
    return value is os.environ or value is getattr(os, "environb", None) or issubclass(type(value), os._Environ)


ENVIRONMENT_TAG = "<os.environ: not shown>"
"""What inspection shows in place of the process environment inside a container."""


class _BoundedRepr(reprlib.Repr):
    """reprlib with array-likes shown as `<type shape>` tags and the environment as a tag,
    even inside containers; a long string or repr is scrubbed before it is cut to its ends."""

    def repr1(self, x: Any, level: int) -> str:
        if is_environment(x):
            return ENVIRONMENT_TAG
        if _module_root(x) in {"pandas", "polars", "numpy"} and hasattr(x, "shape") and not _is_scalar(x):
            return f"<{type_name(x)} {shape_of(x) or ''}>".replace(" >", ">")
        return super().repr1(x, level)

    def repr_str(self, x: str, level: int) -> str:
        if len(x) > self.maxstring:
            x = scrubbed_ends(x, 4 * self.maxstring)
        return super().repr_str(x, level)

    def repr_instance(self, x: Any, level: int) -> str:
        try:
            s = repr(x)
        except Exception:
            return f"<{type(x).__name__} instance at {id(x):#x}>"
        if len(s) > self.maxother:
            s = scrubbed_ends(s, 4 * self.maxother)
        if len(s) > self.maxother:
            head = max(0, (self.maxother - 3) // 2)
            tail = max(0, self.maxother - 3 - head)
            s = s[:head] + "..." + s[len(s) - tail :]
        return s


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


CLIP_MARGIN_CHARS = 2_000
"""Scrubbed past what `clip` keeps: masks shorten text, and more of it then moves into view."""


def scrubbed_ends(text: str, window: int) -> str:
    """`text` scrubbed, or (when longer than two windows) its first and last `window` characters
    scrubbed and joined: what a head-and-tail cut then shows was scrubbed whole, not in pieces."""
    if len(text) <= 2 * window:
        return scrub(text)
    return scrub(text[:window]) + scrub(text[-window:])


def clip(text: str, limit: int) -> str:
    """Keep head and tail of `text` within `limit` characters, saying how much was cut.

    Secrets are masked before the cut (a cut secret would no longer match the scrubber); of a
    long text only the ends that can be kept are scrubbed, so the cost follows `limit`."""
    if len(text) <= limit:
        return text
    window = limit + CLIP_MARGIN_CHARS
    total = len(text) if len(text) > 2 * window else None  # else scrubbed whole: count what is left
    text = scrubbed_ends(text, window)
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 10)
    head, tail = text[: keep * 2 // 3], text[-(keep // 3) :]
    return f"{head}… [{(total or len(text)) - len(head) - len(tail)} chars cut] …{tail}"


def imported(module: str) -> Any | None:
    """The module if the user already imported it; we never import pandas or polars ourselves."""
    return sys.modules.get(module)
