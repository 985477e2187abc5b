"""Helpers for the widget tests: count the bytes widgets would send to a frontend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import comm
import pytest
from comm.base_comm import BaseComm


@dataclass
class CommLog:
    """Every comm message the widgets published, with its JSON size."""

    messages: list[tuple[str, str, int, dict[str, Any]]] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(size for _, _, size, _ in self.messages)

    def reset(self) -> None:
        self.messages.clear()

    def updates_to(self, comm_id: str) -> int:
        return sum(1 for kind, cid, _, _ in self.messages if kind == "comm_msg" and cid == comm_id)


def recording_comm_factory(log: CommLog) -> Any:
    class RecordingComm(BaseComm):
        def publish_msg(
            self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
        ) -> None:
            payload = data or {}
            size = len(json.dumps(payload, default=str).encode())
            size += sum(len(b) for b in buffers or [])
            log.messages.append((msg_type, self.comm_id, size, payload))

    return lambda *args, **kwargs: RecordingComm(*args, **kwargs)


@pytest.fixture
def comm_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[CommLog]:
    log = CommLog()
    monkeypatch.setattr(comm, "create_comm", recording_comm_factory(log))
    yield log


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
