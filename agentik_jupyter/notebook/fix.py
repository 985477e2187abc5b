"""A failed cell as a fix prompt: what failed, where, with which variables (the turn: kernel/commands/fix.py).

The kernel saw the failure as it happened, so it records the cell's id (from
JupyterLab's execute request), its source, the exception and a bounded traceback in a
`post_run_cell` hook, installed at `%load_ext` (cheap: nothing is imported until a cell
fails). The fix turn tells the model the cell, the traceback and the variables the cell
names, asks it to look for the cause (often an earlier cell), to propose the change with
`edit_cell` (the user accepts or rejects it on the cell) and to report what it verified: after
"Accept and run" the fixed cell's outputs and those of the later cells that depend on it (notebook/rerun.py).
The user's bubble shows one short line (`fix_question`); the model gets that line with the
details attached (attachments.py), so no traceback path or instruction list is shown as theirs.
"""

from __future__ import annotations

import ast
import re
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

TRACEBACK_CHARS = 3_000
QUESTION_ERROR_CHARS = 200
HEADER = "Attached by %agent fix (the failed cell, as the kernel saw it):"
SOURCE_CHARS = 6_000
MAX_NAMED_VARIABLES = 15
_IPYTHON_RUNNER = "IPython/core/interactiveshell.py"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class Failure:
    """The last cell that raised: enough to ask for a fix without reading the whole notebook."""

    execution_count: int | None
    cell_id: str | None
    source: str
    error: str
    traceback: str


def _cell_id(shell: InteractiveShell) -> str | None:
    # load time: the failure log is installed at %load_ext; this loads when a cell fails
    from agentik_jupyter.notebook.cells import asking_cell_id

    return asking_cell_id(shell)


def _traceback_text(error: BaseException) -> str:
    """The exception's traceback without IPython's own frames, the end kept when it is long."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.endswith(_IPYTHON_RUNNER)]
    lines = [
        "Traceback (most recent call last):\n",
        *traceback.format_list(frames),
        *traceback.format_exception_only(type(error), error),
    ]
    text = "".join(lines)
    return text if len(text) <= TRACEBACK_CHARS else "…" + text[-TRACEBACK_CHARS:]


class FailureLog:
    """The shell's last failed cell, recorded by a post_run_cell hook."""

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.last: Failure | None = None

    def record(self, result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if error is None:
            return
        source = str(getattr(getattr(result, "info", None), "raw_cell", "") or "")
        if source.lstrip().startswith(("%%agent", "%agent")):
            return
        self.last = Failure(
            execution_count=getattr(result, "execution_count", None),
            cell_id=_cell_id(self.shell),
            source=source,
            error=f"{type(error).__name__}: {error}",
            traceback=_traceback_text(error),
        )


_logs: dict[int, FailureLog] = {}


def install(shell: InteractiveShell) -> FailureLog:
    """Hook the shell's post_run_cell once; called by `%load_ext`."""
    log = _logs.get(id(shell))
    if log is None:
        log = _logs[id(shell)] = FailureLog(shell)
        shell.events.register("post_run_cell", log.record)
    return log


def uninstall(shell: InteractiveShell) -> None:
    log = _logs.pop(id(shell), None)
    if log is not None:
        shell.events.unregister("post_run_cell", log.record)


def failure_from_cell(cell: Any) -> Failure | None:
    """A failure as a notebook shows it (an older error, or a cell run before `%load_ext`)."""
    errors = [o for o in cell.outputs if o.get("output_type") == "error"]
    if not errors:
        return None
    out = errors[-1]
    text = _ANSI.sub("", "\n".join(out.get("traceback") or []))
    if len(text) > TRACEBACK_CHARS:
        text = "…" + text[-TRACEBACK_CHARS:]
    return Failure(cell.execution_count, cell.id, cell.source, f"{out.get('ename')}: {out.get('evalue')}", text)


def named_variables(source: str, user_ns: dict[str, Any]) -> list[str]:
    """One line per user variable the cell's code names (type and shape, from metadata only)."""
    # load time: the failure log is installed at %load_ext; this loads when a fix is asked for
    from agentik_jupyter.tools.namespace import shape_of, type_name

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})
    lines = []
    for name in names:
        if name in user_ns and not name.startswith("_") and not callable(user_ns[name]):
            value = user_ns[name]
            shape = shape_of(value)
            lines.append(f"- {name}: {type_name(value)}" + (f" {shape}" if shape else ""))
    return lines[:MAX_NAMED_VARIABLES]


def fix_question(failure: Failure) -> str:
    """What the user's bubble shows: which cell, and the error's first line."""
    where = f"failed cell [{failure.execution_count}]" if failure.execution_count is not None else "last failed cell"
    error = (failure.error.splitlines() or [""])[0]
    if len(error) > QUESTION_ERROR_CHARS:
        error = error[:QUESTION_ERROR_CHARS] + "…"
    return f"Fix the {where}: {error}"


def fix_prompt(failure: Failure, user_ns: dict[str, Any]) -> str:
    """What the model is told about the failure (attached to `fix_question`)."""
    where = f"cell {failure.cell_id}" if failure.cell_id else "the cell"
    count = f" (In [{failure.execution_count}])" if failure.execution_count is not None else ""
    source = failure.source if len(failure.source) <= SOURCE_CHARS else failure.source[:SOURCE_CHARS] + "\n# … cut"
    parts = [
        f"Fix the error in {where}{count}: {failure.error}",
        f"The cell's code:\n```python\n{source.rstrip()}\n```",
        f"The traceback:\n```\n{failure.traceback.rstrip()}\n```",
    ]
    variables = named_variables(failure.source, user_ns)
    if variables:
        parts.append("Variables the cell names, as they are now:\n" + "\n".join(variables))
    steps = [
        "Find the cause: it may be in an earlier cell (read_notebook shows the cells in order).",
        "Propose the fix with edit_cell on the cell that should change; the user accepts or rejects it on the cell.",
        "Once accepted and run (the later cells that use what it defines are re-run too, with the user's approval), "
        "check the results and say what you verified; if the user rejects it, say what else could be done.",
    ]
    if failure.cell_id is None:
        steps[1] = "This frontend does not say which cell failed: propose the corrected code with insert_cell."
    parts.append("\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)))
    return "\n\n".join(parts)
