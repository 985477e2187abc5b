"""What the frontend can show, learnt once per kernel by a handshake at `%load_ext`.

The kernel opens a comm to `agentik.frontend` ("hello"); our lab extension (labextension/src/
livetext.ts) registers that target on every notebook kernel connection and answers by opening
`agentik.frontend.reply` with what it has (`{"live_text": 1}`: the append-only answer widget,
widgets/live_text.py; `{"rewind": 1}`: it draws a finished turn's Rewind from a plain output,
widgets/rewind_output.py, so a saved notebook holds no widget under its agent cells; `{"panel": 1}`:
it draws the chat panel's saved place as the session's transcript once the panel's widget is gone,
widgets/panel.py PANEL_MIME). As in notebook/requests.py the answer travels on a comm the frontend
opens: every other client of the kernel (a console, VS Code, a second browser without the
extension) closes a comm whose target it does not know, and that close must not hide the
answer. No answer (VS Code, nbclassic, nbclient, a kernel without a frontend) keeps every view
on ipywidgets' own widgets, as before.

A turn whose stream starts before the answer arrived streams the old way; a kernel restart
runs `%load_ext` again, so asks again; a page reloaded in JupyterLab keeps the kernel's answer
(the new page has the same extension). Once an extension answered, a second frontend
without it on the same kernel sees an unknown widget where the live answer streams, until
the turn's transcript replaces it: the kernel cannot tell which client shows which output.
"""

from __future__ import annotations

import logging
from typing import Any

from agentik_jupyter.notebook.requests import frontend

HELLO_TARGET = "agentik.frontend"
REPLY_TARGET = "agentik.frontend.reply"
PROTOCOL = 1

log = logging.getLogger(__name__)

_features: dict[str, int] = {}
_registered = False


def live_text() -> bool:
    """Whether a frontend of this kernel answered that it shows the live text widget."""
    return bool(_features.get("live_text"))


def rewind_output() -> bool:
    """Whether a frontend of this kernel answered that it draws the Rewind output (REWIND_MIME)."""
    return bool(_features.get("rewind"))


def panel_output() -> bool:
    """Whether a frontend of this kernel answered that it draws the chat panel's saved place (PANEL_MIME)."""
    return bool(_features.get("panel"))


def hello() -> None:
    """Ask the frontends what they show (their answer comes later, on REPLY_TARGET)."""
    global _registered
    try:
        from comm import create_comm, get_comm_manager
    except ImportError:
        return
    try:
        if not _registered:
            get_comm_manager().register_target(REPLY_TARGET, _on_reply)
            _registered = True
        create_comm(target_name=HELLO_TARGET, data={"protocol": PROTOCOL}).close()
    except Exception:  # (no kernel, as in a plain IPython shell: nothing to ask)
        log.debug("agentik: no frontend handshake", exc_info=True)


def _on_reply(comm: Any, msg: dict[str, Any]) -> None:
    """An extension's answer: remember the features it has (only known keys, only ints)."""
    data = (msg.get("content") or {}).get("data") or {}
    if isinstance(data, dict):
        for feature in ("live_text", "rewind", "panel"):
            if data.get(feature) == 1:
                _features[feature] = 1
        frontend.page_seen()  # (only our extension answers the hello)
    comm.close()


def forget() -> None:
    """Back to "no answer" (tests; an unloaded extension)."""
    _features.clear()
