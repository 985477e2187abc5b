"""MCP in the kernel: start the trusted servers, ask about a project file, `%agent mcp …`.

A project `mcp.json` waits for the user: the first turn (or `%agent tools`)
shows the trust card in the asking cell and goes on without those servers.
`AGENTIK_APPROVE=auto` answers tool approvals only, never this question.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

MCP_USAGE = """\
Usage: %agent mcp [trust|untrust [PATH]]
  mcp               the MCP config in effect, whether it is trusted, and each server
  mcp trust [PATH]  trust the project mcp.json as it is now and start its servers
  mcp untrust [PATH]
                    stop trusting it: its servers stop and their tools go"""


def manager_for(agent: Any) -> Any:
    """The kernel's MCPManager, created on first use for the notebook's folder."""
    if agent.mcp is None:
        from agentik_jupyter.mcp import MCPManager

        notebook = agent.location.notebook_path
        agent.mcp = MCPManager(agent.registry, notebook_dir=notebook.parent if notebook else Path.cwd())
    return agent.mcp


def _shown(agent: Any) -> set[str]:
    shown = getattr(agent, "_trust_cards_shown", None)
    if shown is None:
        shown = set()
        agent._trust_cards_shown = shown
    return shown


def show_trust_card(agent: Any, project: Any) -> Any:
    """Display the card for this version of the file in the current cell's output."""
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
    _shown(agent).add(sha256)
    display(card.widget)
    return card


async def ensure_mcp(agent: Any) -> None:
    """Start the trusted servers (first turn, `%agent tools`); show the card for an untrusted file once."""
    manager = manager_for(agent)
    await manager.refresh()
    pending = manager.pending_trust
    if pending is not None and pending.sha256 not in _shown(agent):
        if manager.trust_store.decision(pending.path, pending.sha256) != "declined":
            show_trust_card(agent, pending)
    if manager.configured:
        await manager.start()
        for notice in manager.pop_notices():
            print(f"agentik: {notice}", file=sys.stderr)


def _state(manager: Any) -> None:
    project = manager.project
    if project is None and manager.config_error is None:
        print("MCP: no mcp.json for this notebook (beside it, AGENTIK_MCP_CONFIG, or the Jupyter config dir).")
    elif project is not None:
        if project.user_file:
            how = "yours (AGENTIK_MCP_CONFIG or the Jupyter config dir): trusted"
        elif manager.pending_trust is None:
            how = "a project file: trusted (this version)"
        else:
            decided = manager.trust_store.decision(project.path, project.sha256)
            how = "a project file: NOT trusted" + (" (you said don't trust)" if decided == "declined" else "")
        print(f"MCP config: {project.path}\n  {how}; sha256 {project.sha256[:12]}…")
        print(f"  trust store: {manager.trust_store.path}")
        if manager.pending_trust is not None:  # what trusting it would run, for frontends without widgets
            for server in project.servers:
                print(f"  would start {server.describe()}")
    if manager.config_error:
        print(f"MCP config error: {manager.config_error}")
    for status in manager.statuses():
        print(f"MCP {status.describe()}")


async def mcp_command(agent: Any, args: list[str]) -> None:
    """`%agent mcp`, `%agent mcp trust [PATH]`, `%agent mcp untrust [PATH]`."""
    from agentik_jupyter.mcp import MCPConfigError

    manager = manager_for(agent)
    await manager.refresh()
    if not args:
        _state(manager)
        pending = manager.pending_trust
        if pending is not None:
            show_trust_card(agent, pending)
        return
    verb, rest = args[0].lower(), args[1:]
    if verb not in {"trust", "untrust"} or len(rest) > 1:
        print(MCP_USAGE)
        return
    path = Path(rest[0]).expanduser().resolve() if rest else None
    try:
        if verb == "trust":
            project = await manager.trust(path)
            print(f"Trusted {project.path} (sha256 {project.sha256[:12]}…).")
            if manager.configured and manager.pending_trust is None:
                for status in await manager.start():
                    print(f"MCP {status.describe()}")
        else:
            project = await manager.untrust(path)
            print(f"Not trusted: {project.path}; its servers are stopped and their tools removed.")
    except MCPConfigError as exc:
        print(f"agentik: {exc}")
        return
    for notice in manager.pop_notices():
        print(f"agentik: {notice}", file=sys.stderr)
