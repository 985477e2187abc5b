"""The tools that let the model look at the kernel: variables, frames, the cells run, and run_code.

`make_context_tools(shell)` builds them for one IPython shell;
`register_context_tools(registry, shell)` puts them in the kernel's registry.
Each returns a ToolOutput: bounded text for the model, and a MIME bundle for the
tool card. A failure raises a clear exception, which the orchestrator turns into
a ToolResult error the model can correct.

The data tools are plain functions, so they run on the kernel's main thread between the
user's executions (never beside a cell that mutates the same DataFrame). Where they run
the user's code (inspection, Out[n] reprs) they do it under a time budget; they read only
what inspection_policy.py allows.
"""

from __future__ import annotations

import html
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentik_jupyter.engines.limits import describe_budget_s
from agentik_jupyter.errors import CodeExecutionError, ReadTimeout
from agentik_jupyter.tools.checkpoint import checkpoints_for
from agentik_jupyter.tools.dataframes import describe_frame, frame_kind
from agentik_jupyter.tools.execution import run_in_shell
from agentik_jupyter.tools.images import FoundImage, with_images
from agentik_jupyter.tools.inspection import inspect_value
from agentik_jupyter.tools.inspection_policy import resolve_path
from agentik_jupyter.tools.namespace import clip, shape_of, short_repr, summarize_variables, type_name, user_variables
from agentik_jupyter.tools.registry import ToolRegistry, add_builtin, definition_from_function
from agentik_jupyter.tools.time_budget import HISTORY_ITEM_BUDGET_S, INSPECT_TIME_BUDGET_S, call_with_budget
from agentik_jupyter.tools.vision import as_figure, describe_figure, figure_png
from agentik_jupyter.types import ToolDefinition, ToolOutput, VariableSummary

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = [
    "CodeExecutionError",
    "make_context_tools",
    "register_context_tools",
    "summarize_variables",
    "variables_of",
]

ENGINE_BACKSTOP_S = 3.0  # past the engines' own budget: their cancel grace, then the timer
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


def _error_log(shell: InteractiveShell) -> _ErrorLog:
    """One error log per shell, hooked to post_run_cell once however often the tools are built."""
    log = _error_logs.get(shell)
    if log is None:
        log = _error_logs[shell] = _ErrorLog()
        shell.events.register("post_run_cell", log.record)
    return log


def variables_of(shell: InteractiveShell, limit: int = 50) -> list[VariableSummary]:
    """summarize_variables for a shell, hiding what IPython put in its namespace.

    Built before every request from type metadata only: no user code runs for it.
    """
    return summarize_variables(shell.user_ns, limit=limit, hidden=shell.user_ns_hidden)


def list_variables_text(shell: InteractiveShell) -> ToolOutput:
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


def cell_history_text(shell: InteractiveShell, last_n: int, images: bool = False) -> ToolOutput:
    last_n = max(1, min(int(last_n), MAX_HISTORY_CELLS))
    history = shell.history_manager
    if history is None:
        raise RuntimeError("this shell keeps no cell history")
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
            block.append(f"Out[{count}]: {_bounded_repr(outputs[count], f'Out[{count}]')}")
        if count in errors:
            block.append(f"Error in [{count}]: {errors[count]}")
        blocks.append("\n".join(block))
    text = clip("\n\n".join(blocks), HISTORY_BUDGET_CHARS)
    if not images:
        return ToolOutput(text=text, display={"text/plain": text})
    found = [f for f in (_figure_of(outputs[n], n) for n in reversed(picked) if n in outputs) if f is not None]
    if not found:
        return ToolOutput(
            text=text + "\n\nNo Out[n] value above is a matplotlib figure. A figure shown with "
            "plt.show() is only in the notebook's outputs: read_notebook(cell_id=..., images=True).",
            display={"text/plain": text},
        )
    return with_images(text, found, more_hint="ask for fewer cells (last_n)")


def _figure_of(value: Any, count: int) -> FoundImage | None:
    """The figure an Out[n] value shows (a Figure, Axes or list of artists) as a PNG with its description."""
    figure = as_figure(value)
    if figure is None:
        return None
    what = f"Out[{count}]"
    try:
        png = call_with_budget(lambda: figure_png(figure), INSPECT_TIME_BUDGET_S, what)
        note = describe_figure(figure, f"the figure of {what}")
    except Exception as exc:  # a figure that cannot be drawn is reported, not raised
        return FoundImage(what, "image/png", "", f"could not be drawn: {type(exc).__name__}")
    return FoundImage(what, "image/png", png, note)


def _bounded_repr(value: Any, what: str) -> str:
    """A short repr of an Out[n] value, or a note when its repr did not answer in time."""
    try:
        return call_with_budget(lambda: short_repr(value, 500), HISTORY_ITEM_BUDGET_S, what)
    except ReadTimeout:
        return f"<{type_name(value)}: repr timed out after {HISTORY_ITEM_BUDGET_S:g} s>"


def inspect_path(shell: InteractiveShell, name: str) -> ToolOutput:
    """inspect_variable's work: resolve `name` under the policy and look at it, within the budget."""
    return call_with_budget(
        lambda: inspect_value(name, resolve_path(shell.user_ns, name, shell.user_ns_hidden)),
        INSPECT_TIME_BUDGET_S,
        name.strip(),
    )


def describe_path(shell: InteractiveShell, name: str, columns: list[str] | None) -> ToolOutput:
    """describe_dataframe's work: resolve `name` under the policy and profile it, within the budget.

    A lazy or distributed frame keeps to the engines' own budget (AGENTIK_DESCRIBE_BUDGET_S) and
    cancels its work there; the outer budget only backs it up, so it must not cut in first.
    """
    what = name.strip()
    value = call_with_budget(
        lambda: resolve_path(shell.user_ns, name, shell.user_ns_hidden), INSPECT_TIME_BUDGET_S, what
    )
    kind = frame_kind(value)
    if kind is None:
        raise TypeError(f"{name!r} is a {type_name(value)}, not a DataFrame; use inspect_variable instead")
    budget = INSPECT_TIME_BUDGET_S
    if kind == "engine":
        budget = max(budget, describe_budget_s() + ENGINE_BACKSTOP_S)
    return call_with_budget(lambda: describe_frame(name, value, columns), budget, what)


def make_context_tools(shell: InteractiveShell) -> list[ToolDefinition]:
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
        return inspect_path(shell, name)

    def describe_dataframe(name: str, columns: list[str] | None = None) -> ToolOutput:
        """Profile a pandas or polars DataFrame/Series.

        Shape, columns with dtypes, null counts, statistics and the first rows.
        Bounded in size for any frame; statistics of long frames come from a row sample.
        Lazy frames are summarised by their own engine within a time budget.

        Args:
            name: the DataFrame's variable name (or attribute path)
            columns: column names to profile (default: the first 40)
        """
        return describe_path(shell, name, columns)

    def get_cell_history(last_n: int = 5, images: bool = False) -> ToolOutput:
        """Show the most recent notebook cells the user ran: inputs, outputs (Out) and errors.

        Args:
            last_n: how many cells, most recent last (1-30)
            images: also look at the matplotlib figures the Out[n] values show
        """
        return cell_history_text(shell, last_n, images)

    async def run_code(code: str) -> ToolOutput:
        """Run Python code in the user's kernel; it shares (and may change) their variables.

        Returns stdout/stderr, the value of the last expression and any figures; an
        exception comes back as an error with a short traceback. The user approves each run.

        Args:
            code: Python source; a final expression's value is returned
        """
        cannot_undo = checkpoints_for(shell).before_run(code)  # so %agent rewind can take this back
        output = await run_in_shell(shell, code)
        return with_rewind_note(output, cannot_undo)

    plain: list[Callable[..., Any]] = [list_variables, inspect_variable, describe_dataframe, get_cell_history]
    tools = [definition_from_function(fn, policy="auto", source="builtin") for fn in plain]  # reads
    tools[0].quick = True  # list_variables reads names and types, like the prompt's variable list
    tools.append(definition_from_function(run_code, policy="ask", source="builtin"))
    return tools


def with_rewind_note(output: ToolOutput, cannot_undo: list[str]) -> ToolOutput:
    """The tool card (and the model) say what a rewind could not take back: the card said it before Run,
    unless "Always in this session" or AGENTIK_APPROVE=auto let the code run without one."""
    if not cannot_undo:
        return output
    note = "Rewind can't undo: " + "; ".join(cannot_undo)
    display = dict(output.display or {})
    display["text/plain"] = note + "\n\n" + str(display.get("text/plain", ""))
    display["text/html"] = f'<div class="agentik-rewind-note">{html.escape(note)}</div>' + str(
        display.get("text/html", "")
    )
    return output.model_copy(update={"text": note + "\n\n" + output.text, "display": display})


def register_context_tools(registry: ToolRegistry, shell: InteractiveShell) -> list[ToolDefinition]:
    """Add (or re-add, e.g. on %reload_ext) the context tools to `registry`.

    A policy the user changed survives the re-add; a user's own tool of the same
    name wins over the built-in one. Returns the tools actually registered.
    """
    added = (add_builtin(registry, definition) for definition in make_context_tools(shell))
    return [definition for definition in added if definition is not None]
