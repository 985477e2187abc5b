"""Turns asked for over HTTP: the Jupyter server's send and interrupt routes reach the kernel here.

The server (server/turns.py) opens a comm to `agentik.turns` on the notebook's live kernel with
`{"action": "send", "session": ID, "content": TEXT}` or `{"action": "interrupt", "session": ID}` in
its open message. A send queues a turn in the notebook's session as the chat panel does (it waits
behind a running turn, and shows in the panel and its status line), continuing session ID, and
answers on the comm, one message per event, in the chat route's event vocabulary:

- `queued` `{"ahead"}` when turns run before it, then `start` `{"session"}` when its time comes;
- `delta` / `reasoning` `{"text"}` as the answer streams (already scrubbed by the orchestrator),
  `tool_call` `{"id", "name", "args"}` and `tool_result` `{"id", "name", "ok"}`;
- last, `end` `{"reason", "content", "usage"}` (reason `complete`, `interrupted`, `max_iterations`)
  or `error` `{"error", "message", "code"}`; then the kernel closes the comm.

A request the kernel refuses is one `refused` `{"status", "error", "message"}`. An interrupt answers
one `interrupted` `{"stopped"}`: the session's running turn is stopped (as Stop does); turns queued
behind it still run, as after Stop in the panel. A `moved` `{"from", "to"}` (absolute notebook
paths) tells the kernel its notebook was renamed or moved: if it runs `from`, it takes `to` as its
notebook from then on (`JPY_SESSION_NAME`, `__session__`) and, when its sessions file is open,
moves the file there itself, after the writes already asked for; it answers one `moved`
`{"followed", "held"}` (`held`: it moved the file, so the server must not). The target is registered at `%load_ext`; a kernel
without it closes the comm unanswered, which the server reads as "the extension is not loaded".
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from agentik_jupyter.ids import is_session_id, shown
from agentik_jupyter.kernel.comm_targets import CommReply, RequestTarget

TARGET = "agentik.turns"
MAX_CONTENT_CHARS = 100_000
"""The longest question the route passes on (a pasted notebook is shorter)."""

_routed: dict[asyncio.Task[Any], str] = {}
"""Turns this module queued, by the session id they continue (interrupt knows a running one by it
before its `prepare` has switched the session's conversation)."""


def _send(shell: Any, reply: CommReply, data: dict[str, Any]) -> None:
    # load time: the comm is registered at %load_ext; the agent loads when a route asks
    from agentik_jupyter.kernel.agent import get_agent
    from agentik_jupyter.security.scrub import scrub
    from agentik_jupyter.types import AppendText, StartResponse, ToolCallEvent, ToolResultEvent

    wanted, text = data.get("session"), data.get("content")
    if not is_session_id(wanted):
        reply.refuse(400, "Invalid session id", f"{shown(wanted)} is not a session id")
        return
    session_id = str(wanted)
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_CONTENT_CHARS:
        reply.refuse(400, "Invalid request body", f"content must be 1 to {MAX_CONTENT_CHARS:,} characters of text")
        return
    agent = get_agent(shell)
    session = agent.session_for()
    answer: list[str] = []
    unsubscribe: list[Any] = []

    def on_event(event: Any) -> None:
        if isinstance(event, StartResponse):
            answer.clear()  # the answer is the last model call's text
        elif isinstance(event, AppendText) and event.text:
            if not event.reasoning:
                answer.append(event.text)
            reply.send("reasoning" if event.reasoning else "delta", text=event.text)
        elif isinstance(event, ToolCallEvent):
            call = event.call
            reply.send("tool_call", id=call.id, name=call.name, args=call.args)
        elif isinstance(event, ToolResultEvent):
            result = event.result
            reply.send("tool_result", id=result.tool_call_id, name=result.name, ok=result.error is None)

    def on_start() -> None:
        unsubscribe.append(session.on_event(on_event))
        reply.send("start", session=session_id)

    task = session.start_turn(
        scrub(text.strip()),
        prepare=lambda: agent.prepare(session, session_id=session_id),
        on_start=on_start,
    )
    _routed[task] = session_id

    def done(task: asyncio.Task[Any]) -> None:
        _routed.pop(task, None)
        for stop in unsubscribe:
            stop()
        if task.cancelled():
            reply.send("end", reason="interrupted", content="".join(answer), usage=None)
        elif task.exception() is not None:
            exc = task.exception()
            reply.send("error", error="Internal error", message=scrub(f"{type(exc).__name__}: {exc}"), code="internal")
        else:
            outcome = task.result()
            if outcome.reason == "error":
                reply.send("error", error="Turn failed", message=outcome.error or "", code=outcome.error_code)
            else:
                usage = outcome.usage.model_dump(mode="json") if outcome.usage else None
                reply.send("end", reason=outcome.reason, content="".join(answer), usage=usage)
        reply.close()

    task.add_done_callback(done)
    ahead = session.ahead_of(task)
    if ahead:
        reply.send("queued", ahead=ahead)


def _interrupt(shell: Any, reply: CommReply, data: dict[str, Any]) -> None:
    # load time: the comm is registered at %load_ext; the agent loads when a route asks
    from agentik_jupyter.kernel.agent import peek_agent

    session_id = data.get("session")
    if not is_session_id(session_id):
        reply.refuse(400, "Invalid session id", f"{shown(session_id)} is not a session id")
        return
    agent = peek_agent(shell)
    session = agent.session if agent is not None else None
    stopped = 0
    if session is not None and session.busy:
        running = session._task
        if session.conversation_id == session_id or _routed.get(running) == session_id:  # type: ignore[arg-type]
            stopped = 1 if session.stop() else 0
    reply.send("interrupted", stopped=stopped)
    reply.close()


async def _moved(shell: Any, reply: CommReply, data: dict[str, Any]) -> None:
    # load time: the comm is registered at %load_ext; the agent loads when a route asks
    from agentik_jupyter.kernel.agent import peek_agent
    from agentik_jupyter.persistence import find_notebook_path

    old, new = data.get("from"), data.get("to")
    if not all(isinstance(p, str) and os.path.isabs(p) and p.endswith(".ipynb") for p in (old, new)):
        reply.refuse(400, "Invalid request", "from and to must be absolute notebook paths")
        return
    current, _ = find_notebook_path(shell.user_ns, os.environ)
    followed = held = False
    if current is not None and os.path.abspath(current) == os.path.abspath(str(old)):
        os.environ["JPY_SESSION_NAME"] = str(new)
        shell.user_ns["__session__"] = str(new)
        agent = peek_agent(shell)
        followed = True
        held = await agent.follow_notebook(Path(str(new))) if agent is not None else False
    reply.send("moved", followed=followed, held=held)
    reply.close()


async def _serve(shell: Any, reply: CommReply, data: dict[str, Any]) -> None:
    action = data.get("action")
    if action == "send":
        _send(shell, reply, data)
    elif action == "interrupt":
        _interrupt(shell, reply, data)
    elif action == "moved":
        await _moved(shell, reply, data)
    else:
        reply.refuse(400, "Invalid request", "the actions are send, interrupt and moved")


requests = RequestTarget(TARGET, _serve)
register = requests.register
unregister = requests.unregister
