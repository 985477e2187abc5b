"""The extension's Rewind output asks the kernel over the control comm: state, preview, rewind.

A finished turn's Rewind drawn by our lab extension (widgets/rewind_output.py) holds the session's
id and the turn's question's message id. Its renderer asks, over `agentik.control` (kernel/
control.py), with `{"action", "session", "turn"}`:

- `rewind_state`: `{"state", "note"}`: "ready" (it can be rewound), "rewound", "released" (its
  checkpoint was), or "elsewhere" (not in the kernel's current session; after a restart, before
  any turn, nothing is: the renderer then shows nothing);
- `rewind_states` `{"turns": [{"session", "turn"}, ...]}`: `{"states": [...]}`, the same for many
  turns in one request and one read (the renderers of a notebook when it opens, and after each cell
  run, so they follow `%agent rewind` and checkpoints released by later turns);
- `rewind_preview`: what rewinding back to before that turn would do, `{"lines", "state"}` (the
  first line is the heading), or the state and its note when it can no longer be rewound;
- `rewind`: do the rewind last previewed for that turn; `{"lines"}` says what it did.

The work is the widget control's (widgets/turn_rewind.py): the same reads, the same plan and
rewind (notebook/revert.py), the same words. Asking never creates the agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentik_jupyter.core.rewind import RewindPlan
from agentik_jupyter.ids import is_session_id
from agentik_jupyter.kernel.agent import peek_agent
from agentik_jupyter.notebook.revert import plan as plan_rewind
from agentik_jupyter.notebook.revert import rewind as apply_rewind
from agentik_jupyter.persistence import TurnRow
from agentik_jupyter.widgets.turn_rewind import (
    REWOUND_NOTE,
    controls_of,
    failure_text,
    note_for,
    released_why,
    turn_rows,
)

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

MAX_TURNS = 1000
"""The most turns one `rewind_states` asks about."""
_previewed: dict[str, RewindPlan] = {}
"""The plan each turn's last preview showed (by its question's message id): "Rewind now" does it."""


def _session(shell: InteractiveShell, data: dict[str, Any]) -> tuple[Any, str] | dict[str, Any]:
    """The kernel's current session if it is the one the output names, and the turn; else an answer."""
    conversation, turn = data.get("session"), data.get("turn")
    if not is_session_id(conversation) or not is_session_id(turn):
        return {"ok": False, "error": "That is not a turn of a session."}
    agent = peek_agent(shell)
    session = agent.session if agent is not None else None
    if session is None or session.temporary or session.conversation_id != conversation:
        return {"ok": True, "state": "elsewhere", "note": note_for(None, None)}
    return session, turn


async def _state(session: Any, turn: str, rows: dict[str, TurnRow] | None = None) -> dict[str, Any]:
    row = (rows if rows is not None else await turn_rows(session)).get(turn)
    released = released_why(session, row)
    note = note_for(row, released)
    state = "ready" if note is None else "elsewhere" if row is None else "rewound" if row.rewound else "released"
    return {"ok": True, "state": state, "note": note, "number": row.number if row is not None else None}


async def rewind_state(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    found = _session(shell, data)
    if isinstance(found, dict):
        return found
    return await _state(*found)


async def rewind_states(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    asked = data.get("turns")
    if not isinstance(asked, list) or len(asked) > MAX_TURNS or not all(isinstance(t, dict) for t in asked):
        return {"ok": False, "error": f"turns: a list of at most {MAX_TURNS} turns"}
    rows: dict[Any, dict[str, TurnRow]] = {}
    states = []
    for one in asked:
        found = _session(shell, one)
        if isinstance(found, dict):
            states.append(found)
            continue
        session, turn = found
        if id(session) not in rows:
            rows[id(session)] = await turn_rows(session)
        states.append(await _state(session, turn, rows[id(session)]))
    return {"ok": True, "states": states}


async def rewind_preview(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    found = _session(shell, data)
    if isinstance(found, dict):
        return found
    session, turn = found
    state = await _state(session, turn)
    if state["state"] != "ready":
        return state
    try:
        plan = await plan_rewind(session, state["number"])
    except Exception as exc:
        return {"ok": False, "error": failure_text(exc)}
    _previewed[turn] = plan
    return {**state, "lines": plan.lines(done=False)}


async def rewind(shell: InteractiveShell, data: dict[str, Any]) -> dict[str, Any]:
    found = _session(shell, data)
    if isinstance(found, dict):
        return found
    session, turn = found
    plan = _previewed.pop(turn, None)
    if plan is None:
        return {"ok": False, "error": "Nothing rewound: ask for the preview again."}
    try:
        done = await apply_rewind(session, plan)
    except Exception as exc:
        return {"ok": False, "error": failure_text(exc)}
    await controls_of(session).refresh()  # (the widget controls of the turns rewound say so too)
    return {"ok": True, "state": "rewound", "note": REWOUND_NOTE, "lines": done.lines(done=True)}


ACTIONS = {
    "rewind_state": rewind_state,
    "rewind_states": rewind_states,
    "rewind_preview": rewind_preview,
    "rewind": rewind,
}
