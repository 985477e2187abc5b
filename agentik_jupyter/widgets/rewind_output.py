"""A finished turn's Rewind as a plain output, for a frontend whose lab extension draws it.

A widget's model lives in its kernel: once the kernel restarts (or the notebook is opened again
later), JupyterLab draws "Error displaying widget: model not found" under every cell that saved
one. So when our extension answered the handshake (notebook/page.py `rewind_output`), a turn's
Rewind is this bundle instead: `REWIND_MIME` holds the session's id and the turn's question's
message id, and an empty `text/plain` leaves other viewers (GitHub, nbviewer) nothing to show. The
extension's renderer (labextension/src/rewind.ts) asks the kernel over the control comm
(kernel/rewind_requests.py) whether the turn can be rewound, for its preview, and to rewind it; the
kernel does that with the same code as the widget control (widgets/turn_rewind.py). An empty
`REWIND_MIME` object is a place that holds nothing (yet): the renderer draws nothing for it.
"""

from __future__ import annotations

from typing import Any

REWIND_MIME = "application/vnd.agentik.rewind+json"


def rewind_bundle(session_id: str | None = None, message_id: str | None = None) -> dict[str, Any]:
    """The output for one turn's Rewind; without ids, an empty place."""
    data = {"session": session_id, "turn": message_id} if session_id and message_id else {}
    return {REWIND_MIME: data, "text/plain": ""}
