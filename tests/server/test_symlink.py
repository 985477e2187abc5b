"""The sessions API on a notebook whose sessions file is a symbolic link: writes are refused (409,
naming the link), and the file it points to is left as it was. Real Jupyter Server."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from agentik_jupyter.persistence import SessionDB
from tests.jupyter_servers import RunningServer, jupyter

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root, home = tmp_path_factory.mktemp("root"), tmp_path_factory.mktemp("home")
    with jupyter(root, home) as running:
        yield running


def test_renaming_or_deleting_through_a_linked_sessions_file_is_refused(server: RunningServer, tmp_path: Path) -> None:
    outside = tmp_path / "someone-elses.agentik.db"
    with SessionDB(outside) as db:
        conv = db.create_conversation("not yours")
    before = hashlib.sha256(outside.read_bytes()).hexdigest()
    (server.root / "shipped.ipynb").write_text("{}")
    link = server.root / "shipped.agentik.db"
    link.symlink_to(outside)
    headers = {"Authorization": f"token {server.token}"}
    url = f"{server.url}/agentik/api/sessions/{conv.id}"
    q = {"path": "shipped.ipynb"}
    for r in (
        httpx2.patch(url, params=q, json={"title": "renamed"}, headers=headers, timeout=30),
        httpx2.delete(url, params=q, headers=headers, timeout=30),
    ):
        assert r.status_code == 409, r.text
        assert "symbolic link" in r.json()["message"] and "shipped.agentik.db" in r.json()["message"]
    assert hashlib.sha256(outside.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["someone-elses.agentik.db"]
