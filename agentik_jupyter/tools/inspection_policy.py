"""What the inspection tools may read: the user's variables and public attributes from them.

`inspect_variable` and `describe_dataframe` run without approval, so whatever they can
reach, a model (or text a model read) can read. A path is a user variable followed by
public attribute names; every step is checked, by name before it is read and by value
after, so the process environment, the shell and modules stay out of reach however they
are reached (`holder.env` where `holder.env is os.environ`, a bound method of the shell,
the namespace dict itself).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from typing import Any

from agentik_jupyter.errors import InspectionRefused
from agentik_jupyter.tools.namespace import IPYTHON_NAMES, is_environment, missing_name_message

ALLOWED = (
    "inspection reads the user's own variables and public attributes reached from them "
    "(e.g. `df`, `df.columns`, `model.coef_`); modules, IPython's own objects, `_private` "
    "and dunder attributes and the process environment (os.environ) are not readable"
)

_MISSING = object()

# IPython and ipykernel classes whose instances are the kernel, not the user's data.
_INTERNAL_CLASSES = (
    ("IPython.core.interactiveshell", "InteractiveShell"),
    ("IPython.core.history", "HistoryAccessorBase"),
    ("IPython.core.autocall", "IPyAutocall"),
    ("IPython.core.displaypub", "DisplayPublisher"),
    ("IPython.core.displayhook", "DisplayHook"),
    ("IPython.core.formatters", "DisplayFormatter"),
    ("ipykernel.kernelbase", "Kernel"),
    ("ipykernel.iostream", "OutStream"),
    ("jupyter_client.session", "Session"),
    ("traitlets.config.application", "Application"),
)


def resolve_path(user_ns: Mapping[str, Any], path: str, hidden: Mapping[str, Any] | None = None) -> Any:
    """The value at `path` (`name` or `name.attr.attr`) if the policy allows every step.

    Raises InspectionRefused for what is not user data, NameError for a missing variable
    (with suggestions) and AttributeError for a missing attribute.
    """
    path = path.strip()
    head, *attrs = path.split(".")
    if not head.isidentifier() or not all(a.isidentifier() for a in attrs):
        raise InspectionRefused(f"{path!r} is not a variable name or attribute path; {ALLOWED}.")
    if head.startswith("_"):
        raise InspectionRefused(f"{head!r} is a private or IPython name; {ALLOWED}.")
    value = user_ns.get(head, _MISSING)
    if value is _MISSING:
        raise NameError(missing_name_message(user_ns, head, hidden))
    if _is_ipython_name(head, value, hidden):
        raise InspectionRefused(f"{head!r} is part of IPython, not the user's data; {ALLOWED}.")
    _check_value(head, value, user_ns, hidden)
    for i, attr in enumerate(attrs):
        so_far = ".".join([head, *attrs[: i + 1]])
        if attr.startswith("_"):
            kind = "dunder" if attr.startswith("__") and attr.endswith("__") else "private"
            raise InspectionRefused(f"{attr!r} in {path!r} is a {kind} attribute; {ALLOWED}.")
        try:
            value = getattr(value, attr)
        except Exception as exc:
            parent = ".".join([head, *attrs[:i]])
            raise AttributeError(f"{parent!r} has no attribute {attr!r} ({type(exc).__name__})") from None
        _check_value(so_far, value, user_ns, hidden)
    return value


def _is_ipython_name(name: str, value: Any, hidden: Mapping[str, Any] | None) -> bool:
    """A name IPython put in the namespace (a user's own `In = [...]` is data)."""
    if hidden is not None:
        return name in hidden and hidden[name] is value
    return name in IPYTHON_NAMES


def _check_value(where: str, value: Any, user_ns: Mapping[str, Any], hidden: Mapping[str, Any] | None) -> None:
    reason = refusal_reason(value, user_ns, hidden)
    if reason is not None:
        raise InspectionRefused(f"{where!r} {reason}; {ALLOWED}.")


def refusal_reason(
    value: Any, user_ns: Mapping[str, Any] | None = None, hidden: Mapping[str, Any] | None = None
) -> str | None:
    """Why `value` is not user data, or None. Reads only types and identities, never the value."""
    cls = type(value)
    if issubclass(cls, types.ModuleType):
        return "is a module"
    if is_environment(value):
        return "is the process environment (os.environ)"
    if value is sys.modules or (user_ns is not None and value is user_ns) or (hidden is not None and value is hidden):
        return "is the kernel's namespace"
    if value is sys or issubclass(cls, _internal_classes()):
        return "is part of IPython or the kernel"
    owner = _bound_to(value)
    if owner is not None:
        reason = refusal_reason(owner, user_ns, hidden)
        if reason is not None:
            return f"is bound to something that {reason}"
    return None


def _bound_to(value: Any) -> Any | None:
    """The object a bound method (Python or builtin) is bound to, read without running user code."""
    if issubclass(type(value), types.MethodType):
        return value.__self__
    if issubclass(type(value), types.BuiltinMethodType):
        owner = value.__self__
        return owner if owner is not None else None
    return None


def _internal_classes() -> tuple[type, ...]:
    """The internal classes of the modules already imported (nothing is imported here)."""
    found: list[type] = []
    for module_name, class_name in _INTERNAL_CLASSES:
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module is not None else None
        if isinstance(cls, type):
            found.append(cls)
    return tuple(found)
