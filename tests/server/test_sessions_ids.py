"""A shipped sessions file with a hostile conversation id, on a real Jupyter server.

A project can ship `<notebook>.agentik.db`; its conversation ids are data, not names the
server may hand on. A session id is `[A-Za-z0-9_-]{1,64}`: rows with other ids are neither
listed nor served (the list says how many it hides), their events are not streamed, and a
route given an invalid id answers 400 without touching the file.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest

from agentik_jupyter.persistence import SessionDB
from agentik_jupyter.types import AssistantMessage, UserMessage
from tests.jupyter_servers import RunningServer, server_fixtures

pytestmark = pytest.mark.timeout(240)

llm, server = server_fixtures()

VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")
HOSTILE_IDS = [
    "conv_evil\nopen('pwned', 'w').close()",
    "conv_semi; import os",
    "conv_nul\x00\nimport os",
    "x" * 65,
    "conv_é",
]


def api(server: RunningServer, method: str, route: str, **kwargs: Any) -> httpx2.Response:
    headers = {"Authorization": f"token {server.token}", **kwargs.pop("headers", {})}
    return httpx2.request(method, f"{server.url}/agentik/api/{route}", headers=headers, timeout=30, **kwargs)


def shipped_file(folder: Path, name: str) -> str:
    """A notebook whose sessions file holds one normal session and, updated later, the hostile ones
    (written with plain sqlite3, as an attacker would). Returns the normal session's id."""
    (folder / f"{name}.ipynb").write_text("{}")
    path = folder / f"{name}.agentik.db"
    with SessionDB(path) as db:
        conv = db.create_conversation("A normal session")
        turn = db.begin_turn(conv.id, UserMessage(content="question"))
        db.append(conv.id, turn, AssistantMessage(content="answer"))
    conn = sqlite3.connect(path)
    with conn:
        later = time.time() + 60
        for i, hostile in enumerate(HOSTILE_IDS):
            conn.execute(
                "INSERT INTO conversation (id, title, is_temporal, created_at, updated_at) VALUES (?, ?, 0, ?, ?)",
                (hostile, f"Hostile {i}", later, later + i),
            )
    conn.close()
    return conv.id


def test_hostile_ids_are_not_listed(server: RunningServer) -> None:
    good = shipped_file(server.root, "shipped")
    body = api(server, "GET", "sessions", params={"path": "shipped.ipynb"}).json()
    assert [s["id"] for s in body["sessions"]] == [good]
    assert all(VALID.fullmatch(s["id"]) for s in body["sessions"])
    assert body["total"] == 1
    assert body["hidden"] == len(HOSTILE_IDS)  # the sidebar can say that some are not shown


def test_an_invalid_id_in_a_route_is_a_400(server: RunningServer) -> None:
    shipped_file(server.root, "routes")
    path = server.root / "routes.agentik.db"
    before = path.read_bytes()
    q = {"path": "routes.ipynb"}
    for hostile in [*HOSTILE_IDS, "a.b", "a%20b"]:
        route = f"sessions/{quote(hostile, safe='')}"
        got = api(server, "GET", route, params=q)
        assert got.status_code == 400, (hostile, got.status_code, got.text[:200])
        assert "session id" in got.json()["message"]
        assert api(server, "PATCH", route, params=q, json={"title": "x"}).status_code == 400
        assert api(server, "DELETE", route, params=q).status_code == 400
    assert path.read_bytes() == before  # nothing renamed or deleted


def test_events_of_hostile_ids_are_not_streamed(server: RunningServer) -> None:
    good = shipped_file(server.root, "evented")
    with SessionDB(server.root / "evented.agentik.db") as db:
        db.rename_conversation(good, "Renamed after the hostile rows")  # the last event of the file
    q = {"path": "evented.ipynb", "after": 0}
    seen: list[dict[str, Any]] = []
    with (
        httpx2.Client(timeout=30) as client,
        client.stream(
            "GET",
            f"{server.url}/agentik/api/events",
            params=q,
            headers={"Authorization": f"token {server.token}", "Accept": "text/event-stream"},
        ) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:"):
                seen.append(json.loads(line[5:]))
            if any(e["type"] == "renamed" for e in seen):
                break
    assert [e["type"] for e in seen] == ["created", "message", "message", "renamed"]
    assert {e["session_id"] for e in seen} == {good}, [e["session_id"] for e in seen]


REFERENCE = Path(__file__).parents[2] / "docs" / "reference.md"


def test_a_well_formed_unknown_id_is_a_404_as_the_reference_says(server: RunningServer) -> None:
    shipped_file(server.root, "known")
    for params in ({"path": "known.ipynb"}, {"path": "no-sessions-file.ipynb"}):
        got = api(server, "GET", "sessions/nope", params=params)
        assert got.status_code == 404, (params, got.status_code, got.text[:200])
    assert api(server, "GET", "sessions/no.pe", params={"path": "known.ipynb"}).status_code == 400
    route = REFERENCE.read_text().split("- `GET /agentik/api/sessions/<id>", 1)[1].split("\n- ", 1)[0]
    assert "404 for a well-formed id" in route and "400 for an id that is not a session id" in route, route
