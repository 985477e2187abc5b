"""A bounded look at one object: type, size, and the first items or a numeric summary.

Frames are delegated to dataframes.py. Arrays larger than SAMPLE_ELEMENTS are
summarised from a random sample of elements so inspecting a huge array is quick.
This runs the user's code (properties, `__len__`, `__repr__`): the tools call it under
a time budget (time_budget.py), on the kernel's main thread. Every value is scrubbed once: before
it is cut short (namespace.clip, short_repr), so no cut leaves part of a secret unmasked, or, if
not cut, where every tool's result is (the orchestrator). A repr is scrubbed after repr(), not
before: the scrubber knows a secret with a quote or a backslash as repr() and JSON escape it.
"""

from __future__ import annotations

import collections
import sys
import warnings
from collections.abc import Mapping
from typing import Any

from agentik_jupyter.tools.dataframes import describe_frame, frame_kind
from agentik_jupyter.tools.namespace import clip, imported, shape_of, short_repr, type_name
from agentik_jupyter.types import ToolOutput

INSPECT_BUDGET_CHARS = 4_000
MAX_ITEMS = 20
STRING_HEAD_CHARS = 2_000
SAMPLE_ELEMENTS = 1_000_000


def inspect_value(name: str, value: Any) -> ToolOutput:
    """Text for the model (bounded to INSPECT_BUDGET_CHARS); frames also get an HTML preview."""
    if frame_kind(value) is not None:
        return describe_frame(name, value)
    shape = shape_of(value) or _declared_shape(value)
    lines = [f"{name}: {type_name(value)}" + (f", shape {shape}" if shape and shape.startswith("(") else "")]
    np = imported("numpy")
    if np is not None and isinstance(value, np.ndarray):
        lines.extend(_ndarray(np, value))
    elif isinstance(value, Mapping):
        lines.extend(_mapping(value))
    elif isinstance(value, (list, tuple, collections.deque)):
        lines.extend(_sequence(value))
    elif isinstance(value, (set, frozenset)):
        lines.append(f"length {len(value):,}, size {_size(value)} (shallow)")
        lines.extend(f"  {short_repr(v, 150)}" for v in list(_first(value, MAX_ITEMS)))
        lines.extend(_more(len(value)))
    elif isinstance(value, str):
        lines.append(f"length {len(value):,}")
        lines.append(clip(repr(value[:STRING_HEAD_CHARS]), STRING_HEAD_CHARS))
    elif isinstance(value, (bytes, bytearray)):
        lines.append(f"length {len(value):,}")
        lines.append(clip(repr(value[:STRING_HEAD_CHARS]), STRING_HEAD_CHARS))
    else:
        lines.extend(_generic(value))
    text = clip("\n".join(lines), INSPECT_BUDGET_CHARS)
    return ToolOutput(text=text, display={"text/plain": text})


def _declared_shape(value: Any) -> str | None:
    """A `shape` tuple of ints that an object of another library declares (a tensor, an xarray)."""
    try:
        shape = getattr(value, "shape", None)
    except Exception:
        return None
    if isinstance(shape, tuple) and shape and all(isinstance(n, int) for n in shape):
        return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"
    return None


def _first(items: Any, n: int) -> Any:
    for i, item in enumerate(items):
        if i >= n:
            return
        yield item


def _more(total: int) -> list[str]:
    return [f"  … and {total - MAX_ITEMS:,} more"] if total > MAX_ITEMS else []


def _size(value: Any) -> str:
    n = float(sys.getsizeof(value))
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _mapping(value: Mapping[Any, Any]) -> list[str]:
    lines = [f"length {len(value):,}; first items:"]
    for key, item in _first(value.items(), MAX_ITEMS):
        shape = shape_of(item)
        tag = f"{type_name(item)}{' ' + shape if shape else ''}"
        lines.append(f"  {short_repr(key, 60)}: ({tag}) {short_repr(item, 150)}")
    return lines + _more(len(value))


def _sequence(value: Any) -> list[str]:
    kinds = collections.Counter(type_name(v) for v in _first(value, 1_000))
    lines = [
        f"length {len(value):,}, size {_size(value)} (shallow); item types: "
        + ", ".join(f"{k}({n})" for k, n in kinds.most_common(5))
        + (" (of the first 1,000)" if len(value) > 1_000 else ""),
    ]
    if len(value) <= 10:
        return [*lines, "values: " + short_repr(value, 1_500)]
    lines.append("first items:")
    lines.extend(f"  [{i}] {short_repr(v, 150)}" for i, v in enumerate(_first(value, MAX_ITEMS)))
    return lines + _more(len(value))


def _ndarray(np: Any, arr: Any) -> list[str]:
    lines = [f"dtype {arr.dtype}, ndim {arr.ndim}, {arr.size:,} elements, {arr.nbytes:,} bytes"]
    if arr.size and (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool) and not np.iscomplexobj(arr):
        lines.append(_array_stats(np, arr))
    text = np.array2string(arr, threshold=60, edgeitems=3, max_line_width=100)
    lines.append("values:\n" + clip(text, 1_500))
    return lines


def _array_stats(np: Any, arr: Any) -> str:
    sampled = arr.size > SAMPLE_ELEMENTS
    if sampled:
        positions = np.random.default_rng(0).integers(0, arr.size, SAMPLE_ELEMENTS)
        data = arr.flat[positions]
    else:
        data = arr.reshape(-1)
    data = data.astype(np.float64, copy=False)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        nans = int(np.isnan(data).sum())
        stats = [
            f"{k} {float(f(data)):.6g}"
            for k, f in (("min", np.nanmin), ("max", np.nanmax), ("mean", np.nanmean), ("std", np.nanstd))
        ]
    where = f" (estimated from {SAMPLE_ELEMENTS:,} sampled elements)" if sampled else ""
    nan_text = f", NaN {nans:,}" if nans else ""
    return "summary" + where + ": " + ", ".join(stats) + nan_text


def _generic(value: Any) -> list[str]:
    lines = [f"size {_size(value)} (shallow)"]
    try:
        attributes = [k for k in vars(value) if not k.startswith("_")]
    except TypeError:
        attributes = []
    if attributes:
        shown = ", ".join(attributes[:40]) + (f", … (+{len(attributes) - 40})" if len(attributes) > 40 else "")
        lines.append(f"attributes: {shown}")
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<repr failed: {type(exc).__name__}: {exc}>"
    lines.append("repr: " + clip(text, 1_500))
    return lines
