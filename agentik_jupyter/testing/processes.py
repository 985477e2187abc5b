"""Stop a helper process the tests, the soak and the benchmarks started: politely first, then by force."""

from __future__ import annotations

import subprocess
from typing import Any


def stop(proc: subprocess.Popen[Any], grace_s: float = 10.0) -> None:
    """SIGTERM, `grace_s` to exit, then SIGKILL: a server or browser that hangs never holds a run."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
