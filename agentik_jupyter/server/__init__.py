"""Jupyter Server extension: the chat route and the sessions API under /agentik/api/."""

from __future__ import annotations

from typing import Any

from agentik_jupyter.server.follow import NotebookFollower
from agentik_jupyter.server.handlers import setup_handlers
from agentik_jupyter.server.mcp_endpoint import MANAGER_SETTING
from agentik_jupyter.server.provider_env import hold_provider_key
from agentik_jupyter.server.room_history import RoomHistoryKeeper
from agentik_jupyter.server.turns import LINKS_SETTING


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "agentik_jupyter.server"}]


SQLITE_COMPANIONS = ("*.agentik.db-wal", "*.agentik.db-shm", "*.agentik.db-journal")
"""SQLite's working files beside each sessions file: not the user's, so not in the file browser."""


def hide_sqlite_companions(contents_manager: Any) -> None:
    """Add SQLITE_COMPANIONS to the contents manager's hidden names (the sessions file stays listed)."""
    globs = list(getattr(contents_manager, "hide_globs", None) or [])
    missing = [glob for glob in SQLITE_COMPANIONS if glob not in globs]
    if missing and hasattr(contents_manager, "hide_globs"):
        contents_manager.hide_globs = [*globs, *missing]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    hold_provider_key(getattr(serverapp, "config", None), serverapp.log)
    setup_handlers(serverapp.web_app, serverapp)
    hide_sqlite_companions(getattr(serverapp, "contents_manager", None))
    NotebookFollower(serverapp).install()
    RoomHistoryKeeper(serverapp).install()
    serverapp.log.info(
        "agentik_jupyter: /agentik/api/chat, /agentik/api/sessions, /agentik/api/events and /agentik/mcp ready"
    )


def _unload_jupyter_server_extension(serverapp: Any) -> None:
    endpoint = serverapp.web_app.settings.pop(MANAGER_SETTING, None)
    if endpoint is not None:
        endpoint.stop()
    links = serverapp.web_app.settings.pop(LINKS_SETTING, None)
    if links is not None:
        links.stop()
