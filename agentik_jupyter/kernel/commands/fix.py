"""`%agent fix [CELL_ID]` and the sidebar's Fix with agent: a turn in this cell that fixes a failure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentik_jupyter.kernel.turn_options import parse_options
from agentik_jupyter.kernel.turns import run_cell_turn, start_cell_turn
from agentik_jupyter.notebook.attachments import hold
from agentik_jupyter.notebook.fix import HEADER, failure_from_cell, fix_prompt, fix_question, install
from agentik_jupyter.notebook.tools import load_notebook
from agentik_jupyter.security.scrub import scrub

if TYPE_CHECKING:
    from agentik_jupyter.kernel.agent import KernelAgent


async def fix_command(agent: KernelAgent, args: list[str]) -> None:
    """`%agent fix [CELL_ID]`: a turn in this cell that fixes the last failure (or that cell's)."""
    shell = agent.shell
    failure = install(shell).last
    if args and (failure is None or failure.cell_id != args[0]):
        doc = await load_notebook(lambda: agent.location.notebook_path)
        found = doc.find(args[0])
        failure = failure_from_cell(found[1]) if found is not None else None
        if failure is None:
            print(f"agentik: cell {args[0]} shows no error to fix.")
            return
    if failure is None:
        print(
            "agentik: no cell has failed since the extension was loaded: "
            "run the failing cell again, or name it with %agent fix CELL_ID."
        )
        return
    question = scrub(fix_question(failure))  # the key the session's expander finds the details by
    hold(shell, question, f"{HEADER}\n\n{fix_prompt(failure, shell.user_ns)}")
    if parse_options("").wait:
        await run_cell_turn(shell, "", question)
    else:
        start_cell_turn(shell, parse_options(""), question)
