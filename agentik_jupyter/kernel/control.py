"""The sessions sidebar's way into the kernel: a comm, never code.

"Continue here" used to run `%agent resume <id>` with an id read from the sessions file; a
shipped file whose id held a newline and Python ran that Python. Now the sidebar opens a comm
to `agentik.control` with `{"action": ..., ...}` in its open message; the kernel checks the
request, acts, answers `{"ok": true, ...}` or `{"ok": false, "error": ...}` on the same comm
and closes it. Actions:

- `resume` `{"id"}`: continue that session, as `%agent resume ID` does (the id must be a
  session id, ids.py, and exist in the notebook's sessions file);
- `active`: `{"id"}` of the saved session the next turn continues (null when none yet);
- `fix` `{"cell_id"}`: "Fix with agent" under a failed cell. Starts what `%agent fix CELL_ID`
  starts, without a cell in the user's notebook to run it in: the turn's view is displayed with
  this comm's open message as its parent, and the extension shows the messages of that parent
  under the failed cell (not saved with the notebook; the session keeps the turn);
- `rewind_state`, `rewind_preview`, `rewind` `{"session", "turn"}`, `rewind_states` `{"turns"}`:
  a finished turn's Rewind as the extension draws it (kernel/rewind_requests.py);
- `live_cells`: `{"cells"}`, what each agent cell's turn (and the chat panel's cell) shows now, for a
  page that opens the notebook while the turn runs or after it ended (kernel/live_cells.py);
- `panel_live` `{"model_id"}`: `{"live"}`, whether the chat panel's widget a saved output names
  still lives in this kernel (else the extension draws the session's transcript in its place).

A kernel without the extension loaded has no such target: ipykernel closes the comm unanswered,
which the sidebar reads as "load the extension". The target is registered at `%load_ext`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agentik_jupyter.core import mainloop
from agentik_jupyter.ids import SESSION_ID_PATTERN, InvalidSessionIdError, is_session_id, shown
from agentik_jupyter.kernel.comm_targets import register_target, unregister_target
from agentik_jupyter.kernel.live_cells import shown_cells
from agentik_jupyter.notebook.requests import asked_from, frontend, page_of

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

log = logging.getLogger(__name__)

TARGET = "agentik.control"
CELL_ID = re.compile(SESSION_ID_PATTERN)
"""What a cell id from the frontend may be (JupyterLab's are uuids): anything else is refused."""
FIX_STARTED_S = 10.0
"""How long the answer waits for the fix to start (it reads the notebook when the kernel did not
see the failure); a turn in the `--wait` form (AGENTIK_WAIT=1) goes on after the answer."""

Action = Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]]


async def _resume(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    # load time: the control comm is registered at %load_ext; the agent loads when the sidebar asks
    from agentik_jupyter.kernel.agent import get_agent
    from agentik_jupyter.persistence import ConversationNotFoundError

    wanted = data.get("id")
    if not is_session_id(wanted):
        raise InvalidSessionIdError(wanted)
    try:
        info = await get_agent(shell).resume_session(wanted)
    except ConversationNotFoundError:
        return {"ok": False, "error": f"No session {shown(wanted)} in this notebook's sessions file."}
    return {"ok": True, "id": info.id, "title": info.title, "message_count": info.message_count}


async def _active(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    # load time: the control comm is registered at %load_ext; the agent loads when the sidebar asks
    from agentik_jupyter.kernel.agent import peek_agent

    agent = peek_agent(shell)
    return {"ok": True, "id": agent.active_session_id() if agent is not None else None}


async def _fix(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    # load time: the control comm is registered at %load_ext; the agent loads when the sidebar asks
    from agentik_jupyter.kernel.agent import get_agent
    from agentik_jupyter.kernel.commands.fix import fix_command

    cell_id = data.get("cell_id")
    if not isinstance(cell_id, str) or CELL_ID.fullmatch(cell_id) is None:
        return {"ok": False, "error": "That is not a cell id."}
    started = asyncio.ensure_future(fix_command(get_agent(shell), [cell_id]))
    await asyncio.wait([started], timeout=FIX_STARTED_S)
    error = started.exception() if started.done() else None
    if error is not None:
        raise error
    refusal = started.result() if started.done() else None
    if isinstance(refusal, str):
        return {"ok": False, "error": refusal}
    return {"ok": True}


async def _rewind(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    # load time: the control comm is registered at %load_ext; the rewind's code loads when asked
    from agentik_jupyter.kernel.rewind_requests import ACTIONS as REWIND_ACTIONS

    return await REWIND_ACTIONS[data["action"]](shell, data)


async def _panel_live(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    """A widget's model id is its comm's id: the panel lives while that comm is open here."""
    model_id = data.get("model_id")
    if not isinstance(model_id, str) or not re.fullmatch(r"[0-9a-f]{1,64}", model_id):
        return {"ok": False, "error": "That is not a widget's model id."}
    # load time: comm is there whenever widgets are; the request comes from a page drawing a panel
    from comm import get_comm_manager

    return {"ok": True, "live": model_id in get_comm_manager().comms}  # (get_comm warns when missing)


async def _live_cells(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "cells": shown_cells(shell)}


ACTIONS: dict[str, Action] = {
    "resume": _resume,
    "active": _active,
    "fix": _fix,
    "rewind_state": _rewind,
    "rewind_states": _rewind,
    "rewind_preview": _rewind,
    "rewind": _rewind,
    "panel_live": _panel_live,
    "live_cells": _live_cells,
}


async def answer(shell: InteractiveShell, data: Any) -> dict[str, Any]:
    """The reply to one request; every failure is an `{"ok": false, "error"}` the sidebar shows."""
    action = ACTIONS.get(data.get("action", "")) if isinstance(data, dict) else None
    if action is None:
        return {"ok": False, "error": f"unknown request; the actions are {', '.join(ACTIONS)}"}
    try:
        return await action(shell, data)
    except Exception as exc:
        # load time: the control comm is registered at %load_ext; the agent loads when the sidebar asks
        from agentik_jupyter.security.scrub import scrub

        return {"ok": False, "error": scrub(str(exc) or type(exc).__name__)}


def register(shell: InteractiveShell) -> bool:
    """Open the target in this kernel (False outside a kernel with comms)."""
    return register_target(shell, TARGET, _opened)


def unregister(shell: InteractiveShell) -> None:
    unregister_target(shell, TARGET)


def _opened(shell: InteractiveShell, comm: Any, msg: dict[str, Any]) -> None:
    """Comm callbacks may run on a subshell thread: the work (and the reply) happen on the
    kernel's main loop, where turns and their sessions live."""
    data = msg.get("content", {}).get("data")
    page = page_of(msg)  # the page that asked: a fix turn's requests to the notebook name it
    frontend.page_seen()  # only our extension opens this target: a page is there to ask

    async def reply() -> None:
        try:
            with asked_from(page):
                comm.send(await answer(shell, data))
        finally:
            comm.close()

    future = mainloop.run_on_main(reply())
    future.add_done_callback(_log_failure)


def _log_failure(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("agentik.control: could not answer", exc_info=future.exception())
