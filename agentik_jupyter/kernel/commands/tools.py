"""`%agent tools|policy`: the tools the model can call, and their approval policies."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from agentik_jupyter.kernel.tools_table import show_tools
from agentik_jupyter.tools.modes import label
from agentik_jupyter.types import ApprovalPolicy

if TYPE_CHECKING:
    from agentik_jupyter.kernel.agent import KernelAgent


async def tools_command(agent: KernelAgent, args: list[str]) -> None:
    await agent.ensure_mcp()
    mode = (agent.session or agent.session_for()).effective_mode  # (no session file opened for a listing)
    if mode != "agent":
        print(f"In {label(mode)} mode the model is offered these tools (%agent mode agent offers every one):")
    # a table that wraps between words, with the aligned text beside it
    show_tools(agent.registry, agent.gate, mode)
    if agent.mcp is not None:
        for status in agent.mcp.statuses():
            print(f"MCP {status.describe()}")


async def policy_command(agent: KernelAgent, args: list[str]) -> None:
    if not args:
        allowed = sorted(agent.gate.always)
        print("Allowed always in this session: " + (", ".join(allowed) if allowed else "none"))
        return
    if args == ["--reset"]:
        agent.gate.forget()
        print("Every tool whose policy is ask asks again.")
        return
    if len(args) != 2 or args[1] not in {"auto", "ask", "deny"}:
        print("Usage: %agent policy [TOOL auto|ask|deny | --reset]")
        return
    try:
        agent.registry.set_policy(args[0], cast(ApprovalPolicy, args[1]))  # (checked above)
    except KeyError as exc:
        print(f"agentik: {exc.args[0]}")
        return
    if args[1] == "ask":
        agent.gate.forget(args[0])
    print(f"{args[0]}: {args[1]}")
