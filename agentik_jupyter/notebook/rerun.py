"""After a fix is accepted and run: the cells after it that depend on it, re-run to verify.

A fix in one cell is only verified once the cells that use what it computes run again.
Dependence is read from the code (ast, after IPython's own cell transforms so `%magics`
parse, with the code a magic runs): a later cell depends on the fixed cell when it loads a name the fixed cell (or a
cell already found dependent) assigns, imports or defines. `%agent` cells are never re-run.
Re-running goes through the `run_cells` tool's policy (ask by default, so the user approves)
and the notebook extension, which runs the cells in order and answers their outputs.
"""

from __future__ import annotations

import ast
from typing import Any

from agentik_jupyter.notebook.document import Cell, summarize_output

MAX_RERUN = 10
_AGENT = ("%agent", "%%agent")
_MAGIC_CALLS = ("run_line_magic", "run_cell_magic")


def _tree(source: str) -> ast.Module | None:
    """The cell as Python; the code a magic runs (`%time f(x)`, `%%capture` bodies) is parsed in too."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError, ImportError):
        return None
    for node in list(ast.walk(tree)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in _MAGIC_CALLS and node.args:
            last = node.args[-1]
            if isinstance(last, ast.Constant) and isinstance(last.value, str):
                try:
                    tree.body.extend(ast.parse(last.value).body)
                except SyntaxError:
                    pass  # a magic whose argument is not Python (a path, options)
    return tree


def assigned(tree: ast.AST) -> set[str]:
    """Names a cell binds at any level: assignments, imports, defs, for/with targets."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
    return names


def loaded(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def dependents(cells: list[Cell], index: int) -> tuple[list[Cell], set[str]]:
    """The code cells after `cells[index]` that use what it defines (transitively), and the names that link them."""
    fixed = _tree(cells[index].source)
    if fixed is None:
        return [], set()
    defined = assigned(fixed)
    found: list[Cell] = []
    linked: set[str] = set()
    for cell in cells[index + 1 :]:
        if cell.cell_type != "code" or cell.source.lstrip().startswith(_AGENT):
            continue
        tree = _tree(cell.source)
        if tree is None:
            continue
        uses = loaded(tree) & defined
        if uses:
            found.append(cell)
            linked |= uses & assigned(fixed)
            defined |= assigned(tree)
        if len(found) == MAX_RERUN:
            break
    return found, linked


def rerun_report(reply: dict[str, Any], asked: list[str]) -> str:
    """What the re-run showed, cell by cell, for the model to verify the fix with."""
    cells = found if isinstance(found := reply.get("cells"), list) else []
    lines: list[str] = []
    for entry in cells:
        if not isinstance(entry, dict):
            continue
        cell_id, status = entry.get("cell_id"), entry.get("status")
        outputs = [o for o in entry.get("outputs") or [] if isinstance(o, dict)]
        if status == "queued":
            lines.append(
                f"- cell {cell_id}: queued to run after the asking cell (read_notebook shows its outputs then)"
            )
            continue
        if status in ("missing", "not_code"):
            lines.append(
                f"- cell {cell_id}: not run ({'no such cell any more' if status == 'missing' else 'not a code cell'})"
            )
            continue
        failed = status == "failed" or any(o.get("output_type") == "error" for o in outputs)
        lines.append(f"- cell {cell_id}: {'it fails' if failed else 'ran without an error'}")
        lines.extend(f"    -> {summarize_output(o)}" for o in outputs)
    if len(asked) > len(cells):
        lines.append(
            f"- the other {len(asked) - len(cells)} cell(s) were not run: the run stopped at the first failure"
        )
    return "\n".join(lines) if lines else "- nothing was run"
