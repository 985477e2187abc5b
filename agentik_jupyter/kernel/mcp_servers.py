"""MCP in the kernel: start the trusted servers, and ask about a project file once, with a card.

A project `mcp.json` waits for the user: the first turn (or `%agent tools`)
shows the trust card in the asking cell and goes on without those servers.
`AGENTIK_APPROVE=auto` answers tool approvals only, never this question.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentik_jupyter.kernel.agent import KernelAgent
    from agentik_jupyter.mcp import MCPManager
    from agentik_jupyter.mcp.project import ProjectFile
    from agentik_jupyter.widgets.trust_card import TrustCard


def manager_for(agent: KernelAgent) -> MCPManager:
    """The kernel's MCPManager, created on first use for the notebook's folder."""
    if agent.mcp is None:
        # load time: the MCP machinery loads when a notebook first uses it
        from agentik_jupyter.mcp import MCPManager

        notebook = agent.location.notebook_path
        agent.mcp = MCPManager(agent.registry, notebook_dir=notebook.parent if notebook else Path.cwd())
    return agent.mcp


def show_trust_card(agent: KernelAgent, project: ProjectFile) -> TrustCard:
    """Display the card for this version of the file in the current cell's output."""
    # load time: ipywidgets loads when a widget is first shown
    from IPython.display import display

    from agentik_jupyter.widgets.trust_card import TrustCard

    manager = manager_for(agent)
    path, sha256 = project.path, project.sha256

    async def decide(trusted: bool) -> str:
        if not trusted:
            await manager.untrust(path, sha256)
            return f"Not trusted: {path} stays inactive (%agent mcp trust changes that)."
        await manager.trust(path, sha256)
        if manager.pending_trust is not None:
            return f"{path} changed since this card was shown; run %agent tools to see it again."
        statuses = await manager.start()
        return "Trusted. " + "; ".join(s.describe().splitlines()[0] for s in statuses)

    card = TrustCard(str(path), list(project.servers), decide)
    agent.trust_cards_shown.add(sha256)
    display(card.widget)
    return card


async def ensure_mcp(agent: KernelAgent) -> None:
    """Start the trusted servers (first turn, `%agent tools`); show the card for an untrusted file once."""
    manager = manager_for(agent)
    await manager.refresh()
    pending = manager.pending_trust
    if pending is not None and pending.sha256 not in agent.trust_cards_shown:
        if manager.trust_store.decision(pending.path, pending.sha256) != "declined":
            show_trust_card(agent, pending)
    if manager.configured:
        await manager.start()
        for notice in manager.pop_notices():
            print(f"agentik: {notice}", file=sys.stderr)
