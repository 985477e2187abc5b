"""`%agent export`: the code the agent ran in a session, as a new notebook that runs without it.

An analysis done through the agent lives in the audit log; exporting it keeps the
work reproducible. Each `run_code` that the user approved and that finished
without an error, each edit the user accepted (`edit_cell`: the cell's new source)
and each cell the agent put in the notebook (`insert_cell`) becomes a code cell, in
order, under a Markdown cell quoting the question that led to it. Denied and failed
runs are counted, not exported; rejected edits are left out; so are rewound turns (the
user took their work back: replaying it would redo what they undid), counted in the
header. The notebook the user works in is never written: the export is a new file beside it.

A proposed cell is code nobody approved, so it is exported commented out (every line
`# `-prefixed under a header saying so) unless this kernel ran it: the rule is that its
lines, in order, form a block of one input in the kernel's input history (IPython's raw
`In`; the proposal comment line, trailing spaces and blank lines at the ends aside;
`%agent` magics, whose questions may quote code, do not count). A proposal run and then
edited, or run before a kernel restart, is therefore exported commented out: it is the
cautious side, one uncomment away from running.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentik_jupyter.notebook.attachments import shown_text
from agentik_jupyter.notebook.cells import PROPOSAL_LINE
from agentik_jupyter.notebook.edits import ACCEPTED
from agentik_jupyter.persistence import REWOUND_CODE, AuditEntry
from agentik_jupyter.types import (
    AssistantMessage,
    ErrorRecord,
    ToolCall,
    ToolCallRecord,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from agentik_jupyter.core.session import Session
    from agentik_jupyter.persistence import AsyncSessionDB, DBLocation

EXPORTED_TOOL = "run_code"
INSERTED = ("Inserted a new code cell", "Proposed a new code cell")  # insert_cell's answers (notebook/cells.py)
PAGE = 500
QUESTION_CHARS = 500


@dataclass
class Export:
    """The cells of an export and what was left out of it."""

    cells: list[dict[str, Any]] = field(default_factory=list)
    code_cells: int = 0
    skipped: int = 0
    unrun: int = 0  # proposed cells this kernel never ran: exported commented out
    rewound: int = 0  # rewound turns that had code, left out


def _markdown(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(source: str) -> dict[str, Any]:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}


def _quote(question: str) -> str:
    text = question.strip()
    if len(text) > QUESTION_CHARS:
        text = text[:QUESTION_CHARS] + " …"
    return "\n".join("> " + line for line in text.splitlines() or [""])


def _code_lines(code: str) -> list[str]:
    """The lines compared to decide whether code ran: without the proposal comment line,
    trailing spaces, or blank lines at the ends."""
    lines = [line.rstrip() for line in code.splitlines() if line.strip() != PROPOSAL_LINE]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


class InputBlocks:
    """The kernel's inputs split into compared lines once per export (not once per proposed cell),
    indexed by line so a proposal is only compared where its first line is. Split on first use:
    an export without proposals never pays for it."""

    def __init__(self, inputs: Sequence[str]) -> None:
        self._inputs = inputs

    @cached_property
    def blocks(self) -> list[list[str]]:
        return [
            _code_lines(text)
            for text in self._inputs
            if isinstance(text, str) and not text.lstrip().startswith(("%agent", "%%agent"))
        ]

    @cached_property
    def _starts(self) -> dict[str, list[tuple[int, int]]]:
        starts: dict[str, list[tuple[int, int]]] = {}
        for b, lines in enumerate(self.blocks):
            for i, line in enumerate(lines):
                starts.setdefault(line, []).append((b, i))
        return starts

    def ran(self, source: str) -> bool:
        """Whether `source` ran: its lines form a block, in order, of one input that is not an `%agent` magic."""
        wanted = _code_lines(source)
        if not wanted:
            return False
        return any(self.blocks[b][i : i + len(wanted)] == wanted for b, i in self._starts.get(wanted[0], ()))


def ran_in(source: str, inputs: Sequence[str]) -> bool:
    """Whether `source` ran in one of `inputs` (see `InputBlocks.ran`)."""
    return InputBlocks(inputs).ran(source)


def commented_out(source: str) -> str:
    """An unrun proposal as the export writes it: a header, then every line behind `# `."""
    lines = [f"# {line}" if line.strip() else "#" for line in source.rstrip().splitlines()]
    return "\n".join(["# proposed by the agent (insert_cell), never run in this kernel: uncomment to use it", *lines])


def _exported_cell(result: ToolResult, call: ToolCall | None, ran: Callable[[str], bool]) -> tuple[str, bool] | None:
    """The code cell a tool result leaves in the analysis and whether it is an unrun proposal,
    or None (a read, a rejected edit)."""
    args = call.args if call is not None else {}
    text = str(result.result or "")
    if result.name == "edit_cell" and text.startswith(ACCEPTED):
        source = args.get("new_source")
        if not isinstance(source, str):
            return None
        return f"# cell {args.get('cell_id')}, as edited by the agent (accepted)\n{source}", False
    if result.name == "insert_cell" and text.startswith(INSERTED):
        source = args.get("source")
        if not isinstance(source, str) or not source.strip():
            return None
        if ran(source):
            return f"# proposed by the agent (insert_cell), run in this kernel\n{source}", False
        return commented_out(source), True
    return None


def build_export(entries: list[AuditEntry], title: str, inputs: Sequence[str] = ()) -> Export:
    """Cells for every successful `run_code`, accepted edit and inserted cell of the audit log,
    in order, each turn under its question. `inputs` is what the kernel ran (its raw `In`):
    inserted cells not among them are written commented out."""
    calls: dict[str, ToolCall] = {}
    questions: dict[str, str] = {}
    runs: list[tuple[str, str]] = []
    export = Export()
    blocks = InputBlocks(inputs)
    rewound = {e.turn_id for e in entries if isinstance(e.record, ErrorRecord) and e.record.code == REWOUND_CODE}
    left_out: set[str] = set()
    for entry in entries:
        record = entry.record
        if entry.turn_id in rewound and isinstance(record, ToolResultRecord):
            left_out.add(entry.turn_id)
            continue
        if isinstance(record, UserMessage):
            questions[entry.turn_id] = shown_text(record.content)  # a fix's traceback, @mentions: not the heading
        elif isinstance(record, AssistantMessage):
            calls.update({c.id: c for c in record.tool_calls or []})
        elif isinstance(record, ToolCallRecord):
            calls[record.call.id] = record.call
        elif isinstance(record, ToolResultRecord) and record.result.name == EXPORTED_TOOL:
            call = calls.get(record.result.tool_call_id)
            code = (call.args.get("code") if call is not None else None) or ""
            if record.result.error is None and isinstance(code, str) and code.strip():
                runs.append((entry.turn_id, code.rstrip()))
            else:
                export.skipped += 1
        elif isinstance(record, ToolResultRecord) and record.result.error is None:
            cell = _exported_cell(record.result, calls.get(record.result.tool_call_id), blocks.ran)
            if cell is not None and cell[0].strip():
                runs.append((entry.turn_id, cell[0].rstrip()))
                export.unrun += int(cell[1])
    export.rewound = len(left_out)
    header = (
        f"# {title}\n\nThe code the agent ran in this session, the edits you accepted and "
        "the cells it proposed, in order (exported by `%agent export`). A proposed cell "
        "this kernel never ran is commented out: read it before you uncomment it."
    )
    if export.rewound:
        header += (
            f"\n\nLeft out: {export.rewound} rewound turn(s), whose work you took back "
            "(their code is in the sessions file's audit log)."
        )
    export.cells.append(_markdown(header))
    shown_turn: str | None = None
    for turn_id, code in runs:
        if turn_id != shown_turn and turn_id in questions:
            export.cells.append(_markdown(_quote(questions[turn_id])))
            shown_turn = turn_id
        export.cells.append(_code(code))
        export.code_cells += 1
    return export


def export_path(notebook: Path | None, requested: str | None, cwd: Path) -> Path:
    """Where to write: the path asked for, or `<stem>.agentik-export.ipynb` beside the notebook,
    numbered so that no existing file (the notebook least of all) is overwritten."""
    if requested:
        path = Path(requested).expanduser()
        path = path if path.is_absolute() else cwd / path
        if path.suffix != ".ipynb":
            path = path.with_suffix(".ipynb")
        if path.exists():
            raise FileExistsError(f"{path} exists; choose another name (the export never overwrites a file)")
        return path
    stem = notebook.stem if notebook is not None else "session"
    folder = notebook.parent if notebook is not None else cwd
    path = folder / f"{stem}.agentik-export.ipynb"
    n = 2
    while path.exists():
        path = folder / f"{stem}.agentik-export-{n}.ipynb"
        n += 1
    return path


def write_notebook(path: Path, cells: list[dict[str, Any]]) -> None:
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 4,
    }
    with open(path, "x", encoding="utf-8") as f:
        json.dump(nb, f, indent=1, ensure_ascii=False)
        f.write("\n")


async def all_entries(db: Any, conversation_id: str) -> list[AuditEntry]:
    """The whole audit log of one conversation, oldest first, read page by page."""
    pages: list[list[AuditEntry]] = []
    before: int | None = None
    while True:
        page = await db.audit_log(conversation_id, PAGE, before)
        pages.append(page.entries)
        if page.next_before_seq is None or not page.entries:
            break
        before = page.next_before_seq
    return [e for page in reversed(pages) for e in page]


def kernel_inputs(shell: InteractiveShell) -> list[str]:
    """The cells this kernel ran, as typed (IPython's raw input history, `In`)."""
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    return [text for text in history or [] if isinstance(text, str)]


class ExportingAgent(Protocol):
    """What `%agent export` reads of the kernel's agent (kernel/agent.py's KernelAgent)."""

    @property
    def shell(self) -> InteractiveShell: ...

    @property
    def location(self) -> DBLocation: ...

    @property
    def session(self) -> Session | None: ...

    async def open_db(self) -> AsyncSessionDB: ...


async def export_command(agent: ExportingAgent, args: list[str]) -> None:
    """`%agent export [PATH]`: the current (or latest) session's code as a new notebook."""
    db = await agent.open_db()
    session = agent.session
    conversation_id = session.conversation_id if session is not None and not session.temporary else None
    if not conversation_id:
        latest = await db.latest_conversation()
        conversation_id = latest.id if latest is not None else None
    if not conversation_id:
        print("agentik: no saved session to export yet.")
        return
    info = await db.get_conversation(conversation_id)
    title = info.title or f"Agent session {conversation_id}"
    export = build_export(await all_entries(db, conversation_id), title, kernel_inputs(agent.shell))
    if export.code_cells == 0:
        print(
            f"agentik: session {conversation_id} has no code, accepted edit or proposed cell to export"
            + (f" ({export.skipped} denied or failed run(s))." if export.skipped else ".")
            + (f" {export.rewound} rewound turn(s) left out." if export.rewound else "")
        )
        return
    try:
        path = export_path(agent.location.notebook_path, args[0] if args else None, Path.cwd())
        await asyncio.to_thread(write_notebook, path, export.cells)
    except (OSError, FileExistsError) as exc:
        print(f"agentik: export failed: {exc}")
        return
    note = f"; left out {export.skipped} denied or failed run(s)" if export.skipped else ""
    if export.rewound:
        note += f"; left out {export.rewound} rewound turn(s)"
    if export.unrun:
        note += f"; {export.unrun} proposed cell(s) never run here are commented out"
    print(f"agentik: exported {export.code_cells} code cell(s) of session {conversation_id} to {path}{note}.")
