"""Stdio servers' process groups, so that none outlives its kernel.

The SDK starts each stdio server in a new session (its own process group) and
kills the group when the session closes in an orderly way. When the kernel
shuts down or restarts, its loop is gone before that can run; so the manager
records each server's group when it starts and, at exit, signals the groups
itself: SIGTERM, a short grace, then SIGKILL. It needs no event loop.

The server's pid is found as the kernel's child whose stderr is the server's
own log file (the SDK does not expose its process); Linux `/proc` only,
elsewhere the SDK's orderly close and the closed stdin remain.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")
KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL at exit (the kernel is being shut down)
_POLL = 0.02


def _parent_of(pid: str) -> int | None:
    try:
        stat = (PROC / pid / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return int(fields[1]) if len(fields) > 1 else None


def server_group(stderr_path: Path, parent: int | None = None) -> int | None:
    """The process group led by our child whose stderr is `stderr_path`, or None."""
    if not PROC.is_dir():
        return None
    parent = os.getpid() if parent is None else parent
    target = str(stderr_path.resolve())
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or _parent_of(entry.name) != parent:
            continue
        try:
            if os.readlink(entry / "fd" / "2") != target:
                continue
            pid = int(entry.name)
            if os.getpgid(pid) == pid:
                return pid
        except OSError:
            continue
    return None


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_groups(pgids: Iterable[int], grace: float = KILL_GRACE) -> None:
    """SIGTERM each group, wait up to `grace` seconds, SIGKILL what is left. Never raises."""
    groups = [g for g in set(pgids) if g > 1 and g != os.getpgid(0)]
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while any(_alive(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(_POLL)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
