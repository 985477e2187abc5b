"""Describe a pandas or polars frame within a fixed budget, however big the frame is.

A wide frame blowing the context window is the complaint to avoid: at most
MAX_COLUMNS columns are profiled, statistics on more than SAMPLE_ROWS rows are
estimated from a random row sample, and each section has its own character
allowance, so a 10-million-row, 500-column frame costs what a small one does.
A column name is never cut (the model must be able to write it): a long name costs
its line's statistics, then whole columns, and the text says how many were left out.
pandas and polars are never imported here; a frame is recognised only through
modules the user already imported. Cell values are scrubbed before a table cuts them to a
column width (a cut secret no longer matches the scrubber).
"""

from __future__ import annotations

import difflib
import html
import math
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from agentik_jupyter import engines
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.tools.namespace import clip, imported
from agentik_jupyter.types import ToolOutput

BUDGET_CHARS = 8_000
MAX_COLUMNS = 40
SAMPLE_ROWS = 100_000
HEAD_ROWS = 5
HEAD_COLUMNS = 12
HEAD_VALUE_CHARS = 24
HTML_ROWS = 10
HTML_COLUMNS = 20
_COLUMNS_CHARS = 4_500
_HEAD_CHARS = 2_000
_LINE_CHARS = 160
_NAMES_CHARS = 1_000


def frame_kind(value: Any) -> str | None:
    """`pandas`, `polars`, or `engine` (Dask, Polars lazy, DuckDB, Spark) for a frame or series, else None."""
    if engines.engine_of(value) is not None:
        return "engine"
    pd = imported("pandas")
    if pd is not None and isinstance(value, (pd.DataFrame, pd.Series)):
        return "pandas"
    pl = imported("polars")
    if pl is not None and isinstance(value, (pl.DataFrame, pl.Series)):
        return "polars"
    return None


def describe_frame(name: str, value: Any, columns: list[str] | None = None) -> ToolOutput:
    """The bounded text profile of a frame for the model and an HTML preview for the card.

    `columns` picks which columns to profile (by name) when the first MAX_COLUMNS are not the
    interesting ones.
    """
    kind = frame_kind(value)
    if kind == "engine":
        text = engines.describe(value, name, columns=columns)
        return ToolOutput(text=text, display={"text/plain": text})
    if kind == "pandas":
        text, preview = _describe_pandas(name, value, columns)
    elif kind == "polars":
        text, preview = _describe_polars(name, value, columns)
    else:
        raise TypeError(
            f"{name!r} is a {type(value).__module__}.{type(value).__qualname__}, not a pandas or polars "
            "DataFrame/Series; use inspect_variable for other objects."
        )
    text = clip(text, BUDGET_CHARS)
    display: dict[str, Any] = {"text/plain": text}
    if preview is not None:
        display["text/html"] = preview
    return ToolOutput(text=text, display=display)


def _sample_positions(n_rows: int) -> list[int] | None:
    """Sorted random row positions when the frame is too long to profile whole."""
    if n_rows <= SAMPLE_ROWS:
        return None
    return sorted(random.Random(0).sample(range(n_rows), SAMPLE_ROWS))


def _num(x: Any) -> str:
    try:
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "nan"
        if isinstance(x, bool):
            return str(x)
        if isinstance(x, int):
            return f"{x:,}"
        if isinstance(x, float):
            return f"{x:.4g}"
        value = float(x)
        return f"{value:.4g}" if not value.is_integer() or abs(value) >= 1e15 else f"{int(value):,}"
    except (TypeError, ValueError, OverflowError):
        return clip(str(x), 40)


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def pick_columns(frame: str, names: list[str], requested: list[str] | None) -> list[int]:
    """Positions of the columns to profile: the requested ones, else the first MAX_COLUMNS."""
    if not requested:
        return list(range(min(len(names), MAX_COLUMNS)))
    wanted = set(requested)
    missing = wanted.difference(names)
    if missing:
        close = [m for n in sorted(missing) for m in difflib.get_close_matches(n, names, n=2)]
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise KeyError(f"{frame!r} has no column(s) {', '.join(repr(m) for m in sorted(missing))}{hint}")
    return [i for i, n in enumerate(names) if n in wanted][:MAX_COLUMNS]


def _column_lines(names: list[str], profile: Callable[[int], str], n_cols: int, others: list[str]) -> list[str]:
    """`columns (k of n profiled):`, one line per profiled column within the section's
    allowance, then the others' names.

    Names are whole: a line too long for _LINE_CHARS keeps the name and the dtype and drops
    statistics; a column whose line does not fit the section is listed as not profiled.
    """
    lines: list[str] = []
    used = 0
    trimmed = 0
    for i, name in enumerate(names):
        line, cut = _fit_line(name, profile(i))
        if used + len(line) > _COLUMNS_CHARS:
            break
        lines.append(line)
        used += len(line) + 1
        trimmed += cut
    profiled = len(lines)
    skipped = names[profiled:]
    rest = n_cols - profiled
    lines.insert(0, f"columns ({profiled} of {n_cols:,} profiled):" if n_cols else "columns: none")
    if trimmed:
        lines.append(f"  (statistics left out for {trimmed:,} column(s) with long names, to stay within the budget)")
    if rest > 0:
        listed, unlisted = _name_list([*skipped, *others], _NAMES_CHARS)
        unlisted += max(0, rest - len(skipped) - len(others))
        tail = f"; {unlisted:,} more not listed" if unlisted else ""
        lines.append(
            f"  … and {rest:,} more columns, not profiled (pass columns=[...] to profile them): {listed}{tail}"
        )
    return lines


def _fit_line(name: str, profile: str) -> tuple[str, int]:
    """`  name: dtype; nulls; stats` with whole parts dropped from the end (never the name or
    the dtype) until it fits _LINE_CHARS; returns the line and 1 if anything was dropped."""
    parts = profile.split("; ")
    line = f"  {name}: " + "; ".join(parts)
    kept = len(parts)
    while len(line) > _LINE_CHARS and kept > 1:
        kept -= 1
        line = f"  {name}: " + "; ".join(parts[:kept])
    return line, int(kept < len(parts))


def _name_list(names: list[str], limit: int) -> tuple[str, int]:
    """Comma-separated whole names, as many as fit in `limit` characters, and how many did not."""
    out: list[str] = []
    used = 0
    for name in names:
        if used + len(name) + 2 > limit:
            break
        out.append(name)
        used += len(name) + 2
    return ", ".join(out), len(names) - len(out)


def _safe(profile: Callable[[int], str]) -> Callable[[int], str]:
    def run(i: int) -> str:
        try:
            return profile(i)
        except Exception as exc:
            return f"(summary failed: {type(exc).__name__})"

    return run


def _nulls(count: int, total: int, sampled: bool) -> str:
    if total == 0 or count == 0:
        return "no nulls" + (" in sample" if sampled else "")
    pct = 100 * count / total
    return f"≈{pct:.1f}% null (sample)" if sampled else f"{count:,} nulls ({pct:.1f}%)"


def _head_lines(render: Callable[[int], str], n_rows: int, n_cols: int, allowance: int) -> list[str]:
    """`first N rows` with as many columns (up to HEAD_COLUMNS) as fit the allowance, never
    cutting a header; a note instead when even one column does not fit."""
    rows = min(HEAD_ROWS, n_rows)
    cols = min(HEAD_COLUMNS, n_cols)
    while cols >= 1:
        text = render(cols)
        if len(text) <= allowance:
            which = f" (first {cols} of {n_cols:,} profiled columns)" if cols < n_cols else ""
            return [f"first {rows} rows{which}:", text]
        cols = cols - 1 if cols <= 4 else cols // 2
    return [f"first {rows} rows: left out, the first column's name and values do not fit the budget"]


def _head_allowance(lines: list[str]) -> int:
    """What is left of BUDGET_CHARS for the first rows, at most _HEAD_CHARS."""
    used = sum(len(line) + 1 for line in lines) + 100
    return max(0, min(_HEAD_CHARS, BUDGET_CHARS - used))


def _plain_table(names: list[str], cells: list[list[str]]) -> str:
    """A fixed-width text table of whole column names and the rows' cells (from `_cell`)."""
    widths = [max([len(n), *(len(r[i]) for r in cells)]) for i, n in enumerate(names)]
    out = ["  ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip()]
    out.extend("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)
    return "\n".join(out)


def _cell(value: Any) -> str:
    """A value scrubbed, then cut to HEAD_VALUE_CHARS."""
    text = "null" if value is None else scrub(str(value)).replace("\n", "\\n")
    return text if len(text) <= HEAD_VALUE_CHARS else text[: HEAD_VALUE_CHARS - 1] + "…"


# ---- pandas ----


def _others(all_names: list[str], picked: list[int]) -> list[str]:
    chosen = set(picked)
    return [n for i, n in enumerate(all_names[: len(picked) + 400]) if i not in chosen][:300]


def _describe_pandas(name: str, value: Any, columns: list[str] | None) -> tuple[str, str]:
    pd = imported("pandas")
    assert pd is not None
    kind = "Series" if isinstance(value, pd.Series) else "DataFrame"
    df = value.to_frame() if kind == "Series" else value
    n_rows, n_cols = df.shape
    memory = _bytes(float(df.memory_usage(index=True, deep=False).sum()))
    lines = [f"pandas {kind} {name!r}: {n_rows:,} rows × {n_cols:,} columns, memory ≈ {memory} (shallow)"]
    lines.append(f"index: {clip(_pandas_index(df.index), 400)}")
    dtypes = Counter(str(dt) for dt in df.dtypes)
    lines.append("dtypes: " + clip(", ".join(f"{dt}({n})" for dt, n in dtypes.most_common()), 300))
    all_names = [str(c) for c in df.columns]
    picked = pick_columns(name, all_names, columns)
    shown = df.iloc[:, picked]
    positions = _sample_positions(n_rows)
    sample = shown if positions is None else shown.iloc[positions]
    if positions is not None:
        lines.append(f"Null counts and statistics below are estimated from a random sample of {SAMPLE_ROWS:,} rows.")
    names = [all_names[i] for i in picked]
    others = _others(all_names, picked)
    profile = _safe(lambda i: _pandas_column(pd, sample.iloc[:, i], positions is not None))
    lines.extend(_column_lines(names, profile, n_cols, others))
    top = _scrubbed_pandas(pd, shown.iloc[: max(HEAD_ROWS, HTML_ROWS), : max(HEAD_COLUMNS, HTML_COLUMNS)])
    if n_rows and picked:
        lines.extend(
            _head_lines(
                lambda c: top.iloc[:HEAD_ROWS, :c].to_string(max_colwidth=HEAD_VALUE_CHARS, show_dimensions=False),
                n_rows,
                len(picked),
                _head_allowance(lines),
            )
        )
    with pd.option_context("display.max_colwidth", 50):
        preview = top.iloc[:HTML_ROWS, :HTML_COLUMNS].to_html(escape=True, border=0)
    caption = html.escape(f"{name}: {n_rows:,} rows × {n_cols:,} columns")
    return "\n".join(lines), f"<p><b>{caption}</b></p>{preview}"


def _scrub_cell(value: Any) -> Any:
    return scrub(value) if isinstance(value, str) else value


def _scrubbed_pandas(pd: Any, top: Any) -> Any:
    """A copy of the first rows with every text value (and text index label) scrubbed, for the
    tables that cut values to a column width."""
    api = pd.api.types
    out = top.copy()
    for i in range(out.shape[1]):
        column = out.iloc[:, i]
        if column.dtype == object or api.is_string_dtype(column.dtype) or isinstance(column.dtype, pd.CategoricalDtype):
            out.isetitem(i, column.astype(object).map(_scrub_cell))
    if out.index.dtype == object and not isinstance(out.index, pd.MultiIndex):
        out.index = out.index.map(_scrub_cell)
    return out


def _pandas_index(index: Any) -> str:
    pd = imported("pandas")
    if pd is not None and isinstance(index, pd.RangeIndex):
        return f"RangeIndex {index.start}..{index.stop} step {index.step}"
    names = [n for n in index.names if n is not None]
    label = f" named {names}" if names else ""
    return f"{type(index).__name__} dtype {index.dtype}{label}"


def _pandas_column(pd: Any, s: Any, sampled: bool) -> str:
    api = pd.api.types
    dtype = s.dtype
    parts = [str(dtype), _nulls(int(s.isna().sum()), len(s), sampled)]
    valid = s.dropna()
    if len(valid) == 0:
        return "; ".join(parts)
    if api.is_bool_dtype(dtype):
        parts.append(f"true {100 * float(valid.astype(bool).mean()):.1f}%")
    elif api.is_numeric_dtype(dtype) and not api.is_complex_dtype(dtype):
        parts.append(
            f"min {_num(valid.min())}, max {_num(valid.max())}, mean {_num(valid.mean())}, std {_num(valid.std())}"
        )
    elif api.is_datetime64_any_dtype(dtype) or api.is_timedelta64_dtype(dtype):
        parts.append(f"min {valid.min()}, max {valid.max()}")
    else:
        counts = valid.value_counts()
        where = " in sample" if sampled else ""
        top = clip(repr(counts.index[0]), 40)
        parts.append(f"{len(counts):,} distinct{where}, top {top} ({int(counts.iloc[0]):,})")
    return "; ".join(parts)


# ---- polars ----


def _describe_polars(name: str, value: Any, columns: list[str] | None) -> tuple[str, str]:
    pl = imported("polars")
    assert pl is not None
    kind = "Series" if isinstance(value, pl.Series) else "DataFrame"
    df = value.to_frame() if kind == "Series" else value
    n_rows, n_cols = df.shape
    memory = _bytes(float(df.estimated_size()))
    lines = [f"polars {kind} {name!r}: {n_rows:,} rows × {n_cols:,} columns, memory ≈ {memory}"]
    dtypes = Counter(str(dt) for dt in df.dtypes)
    lines.append("dtypes: " + clip(", ".join(f"{dt}({n})" for dt, n in dtypes.most_common()), 300))
    all_names = df.columns
    picked = pick_columns(name, all_names, columns)
    shown = df.select([all_names[i] for i in picked])
    nulls = shown.null_count().row(0) if picked else ()
    positions = _sample_positions(n_rows)
    sampled = positions is not None
    sample = shown if positions is None else shown.select(pl.all().gather(positions))
    if sampled:
        lines.append(f"Null counts are exact; statistics are estimated from a random sample of {SAMPLE_ROWS:,} rows.")
    profile = _safe(lambda i: _polars_column(pl, sample.to_series(i), int(nulls[i]), n_rows, sampled))
    lines.extend(_column_lines(shown.columns, profile, n_cols, _others(all_names, picked)))
    if n_rows and picked:
        head = shown[:HEAD_ROWS, :HEAD_COLUMNS]
        cells = [[_cell(v) for v in row] for row in head.rows()]  # scrubbed once, whichever columns then fit
        lines.extend(
            _head_lines(
                lambda c: _plain_table(head.columns[:c], [r[:c] for r in cells]),
                n_rows,
                len(picked),
                _head_allowance(lines),
            )
        )
    caption = html.escape(f"{name}: {n_rows:,} rows × {n_cols:,} columns")
    preview = _scrubbed_polars(pl, shown[:HTML_ROWS, :HTML_COLUMNS])._repr_html_()
    return "\n".join(lines), f"<p><b>{caption}</b></p>{preview}"


def _scrubbed_polars(pl: Any, top: Any) -> Any:
    """The first rows with every text value scrubbed, for the preview that cuts long values."""
    columns = [
        pl.Series(s.name, [_scrub_cell(v) for v in s.to_list()], dtype=pl.Utf8) if s.dtype == pl.Utf8 else s
        for s in top.get_columns()
    ]
    return pl.DataFrame(columns)


def _polars_column(pl: Any, s: Any, null_count: int, n_rows: int, sampled: bool) -> str:
    dtype = s.dtype
    parts = [str(dtype), _nulls(null_count, n_rows, False)]
    valid = s.drop_nulls()
    if len(valid) == 0:
        return "; ".join(parts)
    if dtype == pl.Boolean:
        parts.append(f"true {100 * float(valid.cast(pl.Float64).mean()):.1f}%")
    elif dtype.is_numeric():
        parts.append(
            f"min {_num(valid.min())}, max {_num(valid.max())}, mean {_num(valid.mean())}, std {_num(valid.std())}"
        )
    elif dtype.is_temporal():
        parts.append(f"min {valid.min()}, max {valid.max()}")
    else:
        counts = valid.value_counts(sort=True)
        top, count = counts.row(0)
        where = " in sample" if sampled else ""
        parts.append(f"{counts.height:,} distinct{where}, top {clip(repr(top), 40)} ({int(count):,})")
    return "; ".join(parts)
