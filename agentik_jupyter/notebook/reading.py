"""`read_notebook` as text for the model: the whole notebook within a budget, or one part in full.

The overview gives every cell's id, type, execution count, source (clipped
evenly when the notebook is long) and output summaries, so the model can find
where a variable was defined or which earlier cell caused an error, then ask for
that cell in full by id.
"""

from __future__ import annotations

from pathlib import Path

from agentik_jupyter.notebook.document import Cell, NotebookDoc

OVERVIEW_BUDGET_CHARS = 12_000
FULL_BUDGET_CHARS = 20_000
MIN_SOURCE_CHARS = 120
FULL_OUTPUT_CHARS = 2_000


def _name(doc: NotebookDoc) -> str:
    return Path(doc.path).name if doc.path else "(unsaved)"


def _origin_note(doc: NotebookDoc) -> str:
    if doc.origin == "live":
        return "live document in the editor (includes unsaved edits)"
    return "saved version on disk, may be stale: unsaved edits in the editor are not included"


def _cell_block(index: int, cell: Cell, source_chars: int, output_chars: int) -> str:
    count = "" if cell.execution_count is None else f", In [{cell.execution_count}]"
    head = f"[{index}] id={cell.id} {cell.cell_type}{count}"
    source = cell.source.rstrip()
    if len(source) > source_chars:
        source = (
            source[:source_chars] + f"\n… [{len(source) - source_chars} more chars: read_notebook(cell_id={cell.id!r})]"
        )
    lines = [head, source or "(empty)"]
    if cell.cell_type == "code":
        lines.extend(f"  -> {s}" for s in cell.output_summaries(output_chars))
    return "\n".join(lines)


def overview(doc: NotebookDoc, budget: int = OVERVIEW_BUDGET_CHARS, offset: int = 0) -> str:
    """Every cell, sources clipped to an even share of the budget; the tail dropped if still over.

    `offset` is the index of `doc.cells[0]` in the whole notebook (for a range).
    """
    header = f"Notebook {_name(doc)}: {len(doc.cells)} cells ({_origin_note(doc)})"
    if not doc.cells:
        return header + "\nThe notebook has no cells."
    share = max(MIN_SOURCE_CHARS, (budget - len(header)) // len(doc.cells) - 150)
    blocks: list[str] = []
    used = len(header)
    for i, cell in enumerate(doc.cells):
        block = _cell_block(offset + i, cell, share, 200)
        if used + len(block) > budget and blocks:
            rest = len(doc.cells) - i
            blocks.append(f"… {rest} more cells not shown: read_notebook(start={offset + i}) reads from there")
            break
        blocks.append(block)
        used += len(block) + 2
    return header + "\n\n" + "\n\n".join(blocks)


def one_cell(doc: NotebookDoc, cell_id: str) -> str:
    found = doc.find(cell_id)
    if found is None:
        ids = ", ".join(c.id for c in doc.cells[:20])
        raise LookupError(f"no cell with id {cell_id!r} in the notebook ({_origin_note(doc)}); ids: {ids}")
    index, cell = found
    return f"Notebook {_name(doc)} ({_origin_note(doc)})\n\n" + _cell_block(
        index, cell, FULL_BUDGET_CHARS, FULL_OUTPUT_CHARS
    )


def cell_range(doc: NotebookDoc, start: int, end: int | None) -> str:
    """Cells start..end (inclusive, 0-based as in the overview), as fully as the budget allows."""
    last = len(doc.cells) - 1
    stop = last if end is None else min(end, last)
    if start < 0 or start > stop:
        raise IndexError(f"no cells in range {start}..{end}: the notebook has {len(doc.cells)} cells (0-{last})")
    part = NotebookDoc(path=doc.path, origin=doc.origin, cells=doc.cells[start : stop + 1])
    return overview(part, FULL_BUDGET_CHARS, offset=start)
