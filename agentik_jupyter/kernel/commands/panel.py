"""`%agent panel`: the chat panel of the current session, in this cell's output."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentik_jupyter.kernel.live_cells import follow_cell
from agentik_jupyter.notebook.cells import asking_cell_id

if TYPE_CHECKING:
    from agentik_jupyter.kernel.agent import KernelAgent


async def panel_command(agent: KernelAgent, args: list[str]) -> None:
    # load time: ipywidgets loads when a widget is first shown
    from IPython.display import display

    from agentik_jupyter.widgets import ChatPanel

    session = agent.session_for()
    await agent.prepare(session)
    panel = ChatPanel(session)
    session.approval_presenter = panel.present_approval
    agent.panel = panel  # an outside agent's cards go here, whichever turn ran last
    follow_cell(agent.shell, asking_cell_id(agent.shell))  # a page opened later shows the panel here too
    display(panel)
