"""Reading, from a kernel a Jupyter server started, what /proc shows of the server and its ancestors."""

from __future__ import annotations

from typing import Any

ANCESTRY = """
import os as _os
def ancestry(stop, needle):
    pid, found = int(_os.environ['JPY_PARENT_PID']), {}
    while True:
        found[pid] = {name: needle in open(f'/proc/{pid}/{name}', 'rb').read() for name in ('environ', 'cmdline')}
        if pid in (stop, 1):
            return found
        pid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])
"""
"""Defines, in the kernel, `ancestry(stop, needle)`: for the server (JPY_PARENT_PID) and each of its
ancestors up to the pid `stop`, whether its /proc environ and cmdline hold the bytes `needle`."""


def proc_files_holding(kernel: Any, stop: int, needle: str) -> dict[int, dict[str, bool]]:
    """From `kernel`: which of its server's and ancestors' /proc files (up to `stop`, the process the
    test started) hold `needle`; fails unless the walk starts at JPY_PARENT_PID and reaches `stop`."""
    kernel.text(ANCESTRY)
    found = {int(pid): files for pid, files in kernel.value(f"ancestry({stop}, {needle.encode()!r})").items()}
    pids = list(found)
    assert pids[0] == kernel.value("int(__import__('os').environ['JPY_PARENT_PID'])")
    assert pids[-1] == stop, found  # the walk reached the process the test started
    return found


def no_proc_file_holds(found: dict[int, dict[str, bool]]) -> bool:
    return all(files == {"environ": False, "cmdline": False} for files in found.values())
