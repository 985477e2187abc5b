"""`%%agent` and `%agent`: the notebook surface.

`%%agent` starts the turn as a task on the kernel's loop and returns at once, so
Stop and Approve stay live while the answer streams (kernel/turns.py). `%%agent --wait`
(or AGENTIK_WAIT=1) is rewritten by an input transformer into a top-level `await`,
so runners such as nbclient see the finished turn in the cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from agentik_jupyter.errors import OptionsError
from agentik_jupyter.kernel.turn_options import parse_options

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

CELL_HELPER = "__agentik_cell__"
LINE_HELPER = "__agentik_line__"


@magics_class
class AgentMagics(Magics):
    shell: InteractiveShell  # (IPython's `None | InteractiveShell`: a registered magic always has one)

    @cell_magic
    def agent(self, line: str, cell: str) -> None:
        """Ask the agent: the cell body is the message. See `%agent help`."""
        try:
            opts = parse_options(line)
        except OptionsError as exc:
            print(f"agentik: {exc}")
            return
        # load time: %load_ext stays cheap; the agent loads on the first turn
        from agentik_jupyter.kernel.turns import start_cell_turn

        start_cell_turn(self.shell, opts, cell)

    @line_magic("agent")  # type: ignore[arg-type]  # IPython types the named form as a union
    def agent_line(self, line: str) -> None:
        """`%agent status|sessions|resume [ID]|new|rename TITLE|delete ID|tools|config|panel|stop`."""
        # load time: %load_ext stays cheap; the agent loads on first use
        from agentik_jupyter.core.mainloop import run_on_main
        from agentik_jupyter.kernel.commands import run_command

        task = run_on_main(run_command(self.shell, line))
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
