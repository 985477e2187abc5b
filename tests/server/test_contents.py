"""The sessions file's SQLite companions (-wal, -shm) stay out of the file browser (a real Jupyter Server)."""

from __future__ import annotations

import httpx2

from agentik_jupyter.persistence import SessionDB
from agentik_jupyter.types import UserMessage
from tests.jupyter_servers import RunningServer, server_fixtures

llm, server = server_fixtures()


def test_the_file_browser_lists_the_sessions_file_but_not_its_companions(server: RunningServer) -> None:
    folder = server.root / "project"
    folder.mkdir()
    (folder / "analysis.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    db = SessionDB(folder / "analysis.agentik.db")
    conversation = db.create_conversation("Kept open")
    db.begin_turn(conversation.id, UserMessage(content="hello"))  # WAL mode: -wal and -shm exist now
    try:
        on_disk = {p.name for p in folder.iterdir()}
        assert {"analysis.agentik.db-wal", "analysis.agentik.db-shm"} <= on_disk, on_disk
        r = httpx2.get(
            f"{server.url}/api/contents/project",
            headers={"Authorization": f"token {server.token}"},
            timeout=30,
        )
        r.raise_for_status()
        listed = {item["name"] for item in r.json()["content"]}
        assert listed == {"analysis.ipynb", "analysis.agentik.db"}, listed
    finally:
        db.close()
