"""A collaborative room's stored history holds the server's own first change: its state is stored once the room is ready.

jupyter-collaboration (jupyter_server_ydoc 3.0.x) writes the document's `path` into a room's
shared state when it creates the room, before the room stores what changes in its document: that
first change of the server's Y client is in memory but never in the YStore, and everything the
server's client writes later in that lifetime (each save's `dirty` and `hash`) is stored after a
gap. After the next server restart the room is loaded from the YStore; the browser's Yjs cannot
integrate the server client's changes after the gap, nor anything a page wrote on top of them (a
page's changes integrate in order, so all of that page's later typing waits too): the notebook
opens showing an older text than the file holds, and what the user types goes in at the wrong
place. The server's Y implementation (yrs) applies the same history whole, so the file stays right.

Storing the room's whole state once it is ready (what jupyter-collaboration already does for a
room it loads from the file) puts that first change in the history, so no gap is made. A history
that already has gaps (made before this ran) keeps them.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

COLLABORATION_SCHEMA = "https://schema.jupyter.org/jupyter_collaboration/session/v1"
YDOC_EXTENSION = "jupyter_server_ydoc"
ROOM_READY = ("initialize", "Room initialized")
"""The action and message jupyter-collaboration emits when a room has its document."""


class RoomHistoryKeeper:
    """Stores each collaborative room's state in its YStore once the room is ready."""

    def __init__(self, serverapp: Any) -> None:
        self.app = serverapp

    def install(self) -> None:
        self.app.event_logger.add_listener(schema_id=COLLABORATION_SCHEMA, listener=self.on_event)

    async def on_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        if (data.get("action"), data.get("msg")) != ROOM_READY:
            return
        room = self._room(data.get("room"))
        ystore = getattr(room, "ystore", None)
        if room is None or ystore is None:
            return
        try:
            await ystore.encode_state_as_update(room.ydoc)
        except Exception:  # a store that failed is jupyter-collaboration's to report; the room works on
            log.warning("agentik_jupyter: could not store the state of room %s", data.get("room"), exc_info=True)

    def _room(self, room_id: Any) -> Any:
        manager = getattr(self.app, "extension_manager", None)
        apps = getattr(manager, "extension_apps", {}).get(YDOC_EXTENSION, ())
        for app in apps:
            server = getattr(app, "ywebsocket_server", None)
            room = getattr(server, "rooms", {}).get(room_id) if server is not None else None
            if room is not None:
                return room
        return None
