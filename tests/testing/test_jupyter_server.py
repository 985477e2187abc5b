"""The kit's Jupyter Server launcher when its port is taken between choosing it and binding it.

A loaded suite starts many servers, kernels and browsers at once: a port `free_port()` just found
free can be bound by another process before the server binds it. Jupyter's default then moves to
another port, and the launcher waited on the first one until it gave up ("did not start"). Now the
server refuses to move, and the launcher starts it again on a new port; a port given on purpose
(a restart where a page reconnects) is never swapped.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from agentik_jupyter.testing import jupyter_server
from agentik_jupyter.testing.jupyter_server import free_port, jupyter


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another process holds (listening), as a kernel or a browser might."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_taken_port_chosen_for_the_server_is_replaced_by_a_free_one(
    held_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "root").mkdir()
    chosen = iter([held_port])  # the first choice is taken by the time the server binds it
    monkeypatch.setattr(jupyter_server, "free_port", lambda: next(chosen, None) or free_port())
    with jupyter(tmp_path / "root", tmp_path / "home", timeout=60) as server:
        assert server.url != f"http://127.0.0.1:{held_port}"
        reply = httpx2.get(f"{server.url}/api/status", headers={"Authorization": f"token {server.token}"}, timeout=10)
        assert reply.status_code == 200


def test_a_port_given_on_purpose_is_not_swapped_and_says_it_is_taken(held_port: int, tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=f"port http://127.0.0.1:{held_port} taken"):
        with jupyter(tmp_path / "root", tmp_path / "home", port=held_port, timeout=60):
            pass
    assert time.monotonic() - started < 50  # (it says so when the server exits, not at the timeout)
