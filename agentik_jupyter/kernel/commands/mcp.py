"""`%agent mcp [trust|untrust [PATH]]`: the MCP config in effect, and the user's trust in a project file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentik_jupyter.kernel.mcp_servers import manager_for, show_trust_card
from agentik_jupyter.mcp import MCPConfigError

if TYPE_CHECKING:
    from agentik_jupyter.kernel.agent import KernelAgent

MCP_USAGE = """\
Usage: %agent mcp [trust|untrust [PATH]]
  mcp               the MCP config in effect, whether it is trusted, and each server
  mcp trust [PATH]  trust the project mcp.json as it is now and start its servers
  mcp untrust [PATH]
                    stop trusting it: its servers stop and their tools go"""


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


async def mcp_command(agent: KernelAgent, args: list[str]) -> None:
    """`%agent mcp`, `%agent mcp trust [PATH]`, `%agent mcp untrust [PATH]`."""
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
