"""Jupyter Server extension: the chat route and the sessions API under /agentik/api/."""

from __future__ import annotations

from typing import Any

from agentik_jupyter.server.handlers import setup_handlers


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "agentik_jupyter.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    setup_handlers(serverapp.web_app, serverapp)
    serverapp.log.info("agentik_jupyter: /agentik/api/chat, /agentik/api/sessions and /agentik/api/events ready")
