"""`%agent fix [CELL_ID]` and the sidebar's Fix with agent: a turn in this cell that fixes a failure."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from agentik_jupyter.kernel.turn_options import parse_options
from agentik_jupyter.kernel.turns import run_cell_turn, start_cell_turn
from agentik_jupyter.notebook.attachments import hold
from agentik_jupyter.notebook.fix import HEADER, failure_from_cell, fix_prompt, fix_question, install
from agentik_jupyter.notebook.tools import load_notebook
from agentik_jupyter.security.scrub import scrub

if TYPE_CHECKING:
    from agentik_jupyter.kernel.agent import KernelAgent


_FIXING: dict[str, asyncio.Future[Any]] = {}
"""The fix turn under way for each cell (queued or running): one at a time per cell."""


def _under_way(cell_id: str | None) -> bool:
    turn = _FIXING.get(cell_id) if cell_id else None
    return turn is not None and not turn.done()


def _track(cell_id: str | None, turn: asyncio.Future[Any]) -> None:
    if cell_id:
        _FIXING[cell_id] = turn
        turn.add_done_callback(lambda done: _FIXING.pop(cell_id, None) if _FIXING.get(cell_id) is done else None)


async def fix_command(agent: KernelAgent, args: list[str]) -> str | None:
    """`%agent fix [CELL_ID]`: a turn in this cell that fixes the last failure (or that cell's).

    A second fix of a cell whose fix is still queued or running is refused (returned and printed):
    it would propose its change to a cell the first fix is about to change.
    """
    shell = agent.shell
    failure = install(shell).last
    if args and (failure is None or failure.cell_id != args[0]):
        doc = await load_notebook(lambda: agent.location.notebook_path)
        found = doc.find(args[0])
        failure = failure_from_cell(found[1]) if found is not None else None
        if failure is None:
            print(f"agentik: cell {args[0]} shows no error to fix.")
            return None
    if failure is None:
        print(
            "agentik: no cell has failed since the extension was loaded: "
            "run the failing cell again, or name it with %agent fix CELL_ID."
        )
        return None
    if _under_way(failure.cell_id):
        refusal = (
            f"A fix of cell {failure.cell_id} is already under way: decide on its diff "
            "(or stop its turn) before asking again."
        )
        print(f"agentik: {refusal}")
        return refusal
    question = scrub(fix_question(failure))  # the key the session's expander finds the details by
    hold(shell, question, f"{HEADER}\n\n{fix_prompt(failure, shell.user_ns)}")
    if parse_options("").wait:
        waiting = asyncio.ensure_future(run_cell_turn(shell, "", question))
        _track(failure.cell_id, waiting)
        await waiting
    else:
        _track(failure.cell_id, start_cell_turn(shell, parse_options(""), question)[1])
    return None
