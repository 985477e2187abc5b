"""The text the model reads about a lazy or distributed frame, within BUDGET_CHARS.

Column names are never cut: when the columns section runs out of room, statistics are
dropped first (names then listed bare), then names, always saying how many were left out.
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

from agentik_jupyter.engines.base import ColumnStats, Head, Summary
from agentik_jupyter.engines.limits import (
    BUDGET_CHARS,
    COLUMNS_CHARS,
    HEAD_CELL_CHARS,
    HEAD_CHARS,
    NAMES_CHARS,
    STATS_CHARS,
)


def cut(text: str, limit: int) -> str:
    """A value (never a column name) shortened to `limit` characters."""
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "…"


def number(x: Any) -> str:
    """A compact, readable number or value."""
    try:
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "null"
        if isinstance(x, bool):
            return str(x)
        if isinstance(x, int):
            return f"{x:,}"
        if isinstance(x, (float, decimal.Decimal)):
            value = float(x)
            if value.is_integer() and abs(value) < 1e15:
                return f"{int(value):,}"
            return f"{value:,.7g}" if 1e-3 <= abs(value) < 1e12 else f"{value:.4g}"
        if isinstance(x, (datetime.date, datetime.datetime)):
            return x.isoformat()
        if hasattr(x, "item") and callable(x.item):
            return number(x.item())
        return cut(repr(x) if isinstance(x, str) else str(x), 40)
    except (TypeError, ValueError, OverflowError):
        return cut(str(x), 40)


def approx(n: int) -> str:
    """120000000 -> '120M': for rounded, estimated counts."""
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def _stats_text(stats: ColumnStats | None, rows: int) -> str:
    if stats is None:
        return ""
    parts: list[str] = []
    if stats.nulls is not None:
        parts.append(
            "no nulls" if stats.nulls == 0 else f"{stats.nulls:,} nulls ({100 * stats.nulls / max(rows, 1):.1f}%)"
        )
    if stats.min is not None or stats.max is not None:
        parts.append(f"min {number(stats.min)}, max {number(stats.max)}")
    if stats.mean is not None:
        parts.append(f"mean {number(stats.mean)}")
    if stats.distinct is not None:
        parts.append(f"≈{stats.distinct:,} distinct")
    return cut("; ".join(parts), STATS_CHARS)


def _rows_line(s: Summary) -> str:
    if s.rows is None:
        return "rows: unknown" + (f" ({s.rows_note})" if s.rows_note else "")
    if s.rows_exact:
        return f"rows: {s.rows:,}" + (f" ({s.rows_note})" if s.rows_note else "")
    return f"rows: ≈{approx(s.rows)} (estimated{'; ' + s.rows_note if s.rows_note else ''})"


def column_lines(s: Summary) -> list[str]:
    """Profiled columns with their statistics, then the rest by name, then a count of what is left out."""
    dtypes = dict(s.schema)
    rows = s.stats.rows if s.stats else 0
    lines: list[str] = []
    used = 0
    shown: set[str] = set()
    for name in s.profiled:
        stats = _stats_text(s.stats.columns.get(name) if s.stats else None, rows)
        line = f"  {name}: {dtypes.get(name, '?')}" + (f"; {stats}" if stats else "")
        if used + len(line) + 1 > COLUMNS_CHARS:
            break
        lines.append(line)
        used += len(line) + 1
        shown.add(name)
    rest = [n for n, _ in s.schema if n not in shown]
    listed: list[str] = []
    used = 0
    for name in rest:
        piece = f"{name} ({dtypes[name]})"
        if used + len(piece) + 2 > NAMES_CHARS:
            break
        listed.append(piece)
        used += len(piece) + 2
    if listed:
        lines.append(f"  other columns (no statistics): {', '.join(listed)}")
    left = len(rest) - len(listed)
    if left:
        lines.append(f"  … and {left:,} more columns not listed (pass columns=[...] to profile named ones)")
    return lines


def head_text(head: Head) -> str:
    """The first rows as an aligned table, dropping columns from the right until it fits HEAD_CHARS."""
    cells = [[cut(number(v) if not isinstance(v, str) else v, HEAD_CELL_CHARS) for v in row] for row in head.rows]
    for keep in range(len(head.names), 0, -1):
        names = head.names[:keep]
        widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
        table = ["  " + " | ".join(n.ljust(w) for n, w in zip(names, widths))]
        table += ["  " + " | ".join(r[i].ljust(w) for i, w in enumerate(widths)) for r in cells]
        dropped = len(head.names) - keep
        if dropped:
            table.append(f"  ({dropped} more columns not shown here)")
        text = "\n".join(table)
        if len(text) <= HEAD_CHARS:
            return text
    return f"  (the first rows are too wide to show; {len(head.names)} columns)"


def render(s: Summary) -> str:
    """The whole summary; the first rows are dropped before anything else if the budget is exceeded."""
    top = [f"{s.label} {s.name!r}: {len(s.schema):,} columns" + (f", {s.layout}" if s.layout else ""), _rows_line(s)]
    if s.stats is not None:
        if s.stats.sample_how:
            scope = sample_scope(s.stats.rows, s.stats.sample_how, s.rows, not s.rows_exact)
        else:
            scope = f"the whole data ({s.stats.rows:,} rows)"
        top.append(f"statistics computed by the engine on {scope}" + (f"; {s.stats_note}" if s.stats_note else ""))
    elif s.stats_note:
        top.append(f"statistics: {s.stats_note}")
    top.extend(s.notes)
    profiled = f"{len(s.profiled)} of {len(s.schema):,} profiled" if s.stats else "schema"
    body = [f"columns ({profiled}):", *column_lines(s)]
    head: list[str] = []
    if s.head is not None and s.head.rows:
        head = [f"first {len(s.head.rows)} rows (engine-side limit):", head_text(s.head)]
    elif s.head is not None:
        head = ["first rows: none (the frame is empty)"]
    text = "\n".join([*top, *body, *head])
    if len(text) > BUDGET_CHARS:
        text = "\n".join([*top, *body, "(first rows left out to stay within the size budget)"])
    return text


def sample_scope(sample_rows: int, how: str, total: int | None, estimated: bool) -> str:
    """'a sample of 100,000 rows (the first rows, ~0.05% of ~200M rows)' and the like."""
    if total:
        share = 100 * sample_rows / total
        pct = f"{share:.2g}%" if share < 10 else f"{share:.0f}%"
        of = f"~{pct} of {'~' if estimated else ''}{approx(total)} rows"
        return f"a sample of {sample_rows:,} rows ({how}, {of})"
    return f"a sample of {sample_rows:,} rows ({how}; total unknown)"
