"""The tools that let the model look at the notebook: variables, frames, history, code.

`make_context_tools(shell)` builds them for one IPython shell;
`register_context_tools(registry, shell)` puts them in the kernel's registry.
Each returns a ToolOutput: bounded text for the model, and a MIME bundle for the
tool card. A failure raises a clear exception, which the orchestrator turns into
a ToolResult error the model can correct.
"""

from __future__ import annotations

import html
import weakref
from typing import Any

from ..registry import ToolRegistry, definition_from_function
from ..types import ToolDefinition, ToolOutput, VariableSummary
from .cells import propose_cell
from .dataframes import describe_frame, frame_kind
from .execution import CodeExecutionError, run_in_shell
from .inspection import inspect_value
from .namespace import clip, lookup, shape_of, short_repr, summarize_variables, type_name, user_variables

__all__ = [
    "CodeExecutionError",
    "make_context_tools",
    "register_context_tools",
    "summarize_variables",
    "variables_of",
]

LIST_BUDGET_CHARS = 6_000
HISTORY_BUDGET_CHARS = 8_000
MAX_HISTORY_CELLS = 30
_AGENT_PREFIXES = ("%%agent", "%agent")
_ERRORS_KEPT = 200


class _ErrorLog:
    """Errors of recent cells by execution count; IPython's history keeps inputs and outputs only."""

    def __init__(self) -> None:
        self.errors: dict[int, str] = {}

    def record(self, result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        count = getattr(result, "execution_count", None)
        if error is None or count is None:
            return
        self.errors[count] = clip(f"{type(error).__name__}: {error}", 500)
        for old in sorted(self.errors)[:-_ERRORS_KEPT]:
            del self.errors[old]


_error_logs: weakref.WeakKeyDictionary[Any, _ErrorLog] = weakref.WeakKeyDictionary()


def _error_log(shell: Any) -> _ErrorLog:
    """One error log per shell, hooked to post_run_cell once however often the tools are built."""
    log = _error_logs.get(shell)
    if log is None:
        log = _error_logs[shell] = _ErrorLog()
        shell.events.register("post_run_cell", log.record)
    return log


def variables_of(shell: Any, limit: int = 50) -> list[VariableSummary]:
    """summarize_variables for a shell, hiding what IPython put in its namespace."""
    return summarize_variables(shell.user_ns, limit=limit, hidden=shell.user_ns_hidden)


def list_variables_text(shell: Any) -> ToolOutput:
    rows = [(n, type_name(v), shape_of(v) or "") for n, v in user_variables(shell.user_ns, shell.user_ns_hidden)]
    if not rows:
        return ToolOutput(text="No user variables are defined yet.")
    lines = [f"{len(rows)} user variable(s):"]
    lines.extend(f"  {n}: {t}" + (f" {s}" if s else "") for n, t, s in rows)
    text = clip("\n".join(lines), LIST_BUDGET_CHARS)
    cells = "".join(
        f"<tr><td><code>{html.escape(n)}</code></td><td>{html.escape(t)}</td><td>{html.escape(s)}</td></tr>"
        for n, t, s in rows[:200]
    )
    table = f"<table><thead><tr><th>name</th><th>type</th><th>shape</th></tr></thead><tbody>{cells}</tbody></table>"
    return ToolOutput(text=text, display={"text/plain": text, "text/html": table})


def cell_history_text(shell: Any, last_n: int) -> ToolOutput:
    last_n = max(1, min(int(last_n), MAX_HISTORY_CELLS))
    history = shell.history_manager
    inputs: list[str] = list(history.input_hist_raw)
    outputs: dict[int, Any] = dict(history.output_hist)
    errors = _error_log(shell).errors
    picked: list[int] = []
    for count in range(len(inputs) - 1, 0, -1):
        if not inputs[count].lstrip().startswith(_AGENT_PREFIXES):
            picked.append(count)
        if len(picked) == last_n:
            break
    if not picked:
        return ToolOutput(text="No cells have been run yet (agent cells are not listed).")
    per_cell = max(300, HISTORY_BUDGET_CHARS // len(picked) - 200)
    blocks = []
    for count in reversed(picked):
        block = [f"In [{count}]:", clip(inputs[count].rstrip(), per_cell)]
        if count in outputs:
            block.append(f"Out[{count}]: {short_repr(outputs[count], 500)}")
        if count in errors:
            block.append(f"Error in [{count}]: {errors[count]}")
        blocks.append("\n".join(block))
    text = clip("\n\n".join(blocks), HISTORY_BUDGET_CHARS)
    return ToolOutput(text=text, display={"text/plain": text})


def make_context_tools(shell: Any) -> list[ToolDefinition]:
    """The notebook-context tools bound to `shell` (an IPython InteractiveShell)."""
    _error_log(shell)

    def list_variables() -> ToolOutput:
        """List the user's variables in the kernel with type and shape or length.

        Modules, functions, classes and IPython internals are left out.
        """
        return list_variables_text(shell)

    def inspect_variable(name: str) -> ToolOutput:
        """Look at one variable: type, size and a bounded view.

        Containers show their first items; arrays their dtype, shape and summary
        statistics; DataFrames get the describe_dataframe profile.

        Args:
            name: the variable's name, optionally with attributes (e.g. "model.coef_")
        """
        return inspect_value(name, lookup(shell.user_ns, name, shell.user_ns_hidden))

    def describe_dataframe(name: str, columns: list[str] | None = None) -> ToolOutput:
        """Profile a pandas or polars DataFrame/Series.

        Shape, columns with dtypes, null counts, statistics and the first rows.
        Bounded in size for any frame; statistics of long frames come from a row sample.
        Lazy frames are summarised by their own engine within a time budget.

        Args:
            name: the DataFrame's variable name (or attribute path)
            columns: column names to profile (default: the first 40)
        """
        value = lookup(shell.user_ns, name, shell.user_ns_hidden)
        if frame_kind(value) is None:
            raise TypeError(f"{name!r} is a {type_name(value)}, not a DataFrame; use inspect_variable instead")
        return describe_frame(name, value, columns)

    def get_cell_history(last_n: int = 5) -> ToolOutput:
        """Show the most recent notebook cells the user ran: inputs, outputs (Out) and errors.

        Args:
            last_n: how many cells, most recent last (1-30)
        """
        return cell_history_text(shell, last_n)

    async def run_code(code: str) -> ToolOutput:
        """Run Python code in the user's kernel; it shares (and may change) their variables.

        Returns stdout/stderr, the value of the last expression and any figures; an
        exception comes back as an error with a short traceback. The user approves each run.

        Args:
            code: Python source; a final expression's value is returned
        """
        return await run_in_shell(shell, code)

    async def insert_cell(source: str) -> ToolOutput:
        """Propose a new code cell below the current one for the user to review and run themselves.

        Args:
            source: the code of the new cell
        """
        return await propose_cell(shell, source)

    plain = [list_variables, inspect_variable, describe_dataframe, get_cell_history, insert_cell]
    tools = [definition_from_function(fn, source="builtin") for fn in plain]
    tools.insert(4, definition_from_function(run_code, policy="ask", source="builtin"))
    return tools


def register_context_tools(registry: ToolRegistry, shell: Any) -> list[ToolDefinition]:
    """Add (or re-add, e.g. on %reload_ext) the context tools to `registry`.

    A policy the user changed survives the re-add; a user's own tool of the same
    name wins over the built-in one. Returns the tools actually registered.
    """
    added: list[ToolDefinition] = []
    for definition in make_context_tools(shell):
        existing = registry.get(definition.name)
        if existing is not None and existing.source != "builtin":
            continue
        if existing is not None:
            definition.policy = existing.policy
        added.append(registry.add(definition, replace=True))
    return added
