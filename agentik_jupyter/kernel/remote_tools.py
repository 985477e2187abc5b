"""Tool calls of an outside agent (the server's MCP endpoint) run here, as our own agent's calls run.

The server (server/mcp_tools.py) opens a comm to `agentik.tools` on the notebook's live kernel with
`{"tool": NAME, "args": {...}, "client": NAME}`. The call joins the notebook session's queue as a
turn does (one at a time per kernel, behind running turns; Stop ends it) and runs through the
orchestrator's `run_call` (core/outside_calls.py): the registry's argument checks, the tool's policy
and the approval gate (tools/approval.py: the card in the panel, `AGENTIK_APPROVE`, "always"), the
same bounds and scrubbing; the client's session in the sessions file keeps the call. `rewind`
`{"calls": N}` takes back the client's latest N calls. It answers one `result` `{"text", "error", "images"}` and closes the comm; a request it
cannot take is one `refused` `{"status", "error", "message"}`. The server closing the comm first
(the MCP client cancelled) stops the call.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentik_jupyter.core import mainloop
from agentik_jupyter.kernel.comm_targets import CommReply, RequestTarget

TARGET = "agentik.tools"
OUTSIDE_TOOLS = (
    "list_variables",
    "inspect_variable",
    "describe_dataframe",
    "run_code",
    "read_notebook",
    "edit_cell",
    "insert_cell",
)
"""What an outside agent may call here; the rest of our registry is our own agent's."""
REWIND = "rewind"
MAX_CLIENT_CHARS = 60


async def _call(shell: Any, reply: CommReply, data: dict[str, Any]) -> None:
    # load time: the comm is registered at %load_ext; the agent loads when a call comes
    from agentik_jupyter.kernel.agent import get_agent
    from agentik_jupyter.notebook.cells import CellAnchor, anchored
    from agentik_jupyter.types import ToolCall, new_id

    tool, args, client = data.get("tool"), data.get("args"), _client(data.get("client"))
    if tool not in (*OUTSIDE_TOOLS, REWIND) or not isinstance(args, dict):
        reply.refuse(400, "Invalid request", f"the tools are {', '.join(OUTSIDE_TOOLS)} and {REWIND}")
        return
    agent = get_agent(shell)
    calls = agent.outside_calls()
    if tool == REWIND:
        count = args.get("calls", 1)
        task, result = calls.rewind(client, count if isinstance(count, int) else 1)
    else:
        with anchored(CellAnchor()):  # a proposed cell goes below the page's active cell (the task copies this)
            task, result = calls.start(client, ToolCall(id=new_id("call_"), name=str(tool), args=args))
    # the client cancelled: the call stops (or leaves the queue), on the loop (a close may come on another thread)
    reply.on_close(mainloop.main_thread_callback(lambda: calls.session.cancel(task)))
    ahead = calls.session.ahead_of(task)
    if ahead:
        reply.send("queued", ahead=ahead)
    try:
        outcome = await result
    except asyncio.CancelledError:
        reply.send("result", error="The call was stopped before it finished (Stop, or Jupyter's Interrupt).")
        reply.close()
        return
    images = [image.model_dump(mode="json") for image in outcome.images or []]
    reply.send("result", text=_text(outcome.result), error=outcome.error, images=images)
    reply.close()


def _client(name: Any) -> str:
    """The client's name as its `initialize` gave it, made a short title."""
    text = " ".join(str(name or "").split())[:MAX_CLIENT_CHARS]
    return text or "MCP client"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


requests = RequestTarget(TARGET, _call)
register = requests.register
unregister = requests.unregister
