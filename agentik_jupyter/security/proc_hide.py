"""Secrets wiped from what /proc shows of this process (its initial environment and command line), and
the process made non-dumpable so its memory and /proc files are root's alone (Linux; a no-op elsewhere).

Linux shows the environment and arguments a process was *started* with in `/proc/<pid>/environ` and
`/proc/<pid>/cmdline`, whatever `os.environ` or `sys.argv` later become: those files read the memory
between `env_start`/`env_end` and `arg_start`/`arg_end` (fields 50-51 and 48-49 of `/proc/self/stat`).
Any process of the same user can read them. Here the process overwrites the secret bytes in that
memory itself (through `/proc/self/mem`, which fails with an error instead of crashing), keeping every
length and separator, so the files show `LLM_API_KEY=xxxx...`. Then `prctl(PR_SET_DUMPABLE, 0)`:
`/proc/<pid>/environ`, `mem` and friends belong to root, and a same-user ptrace is refused (the
process itself, unless root, can no longer open its own `environ` or `mem` either: hence the wipe
first). Children are dumpable again after their `exec`, so kernels started later are unaffected.
Root reads all of it anyway, and a process that *started* this one with the secret keeps its own copy.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
from collections.abc import Collection
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

FILL = ord("x")
MIN_VALUE = 8
"""Shorter values are not looked for in the command line: a dummy key for a local server ("none")
would wipe parts of unrelated arguments. The environment's named entries are wiped whatever their length."""
PR_SET_DUMPABLE = 4
_ARG_START, _ENV_START = 48, 50
"""1-based fields of /proc/<pid>/stat (arg_start, arg_end, env_start, env_end)."""


@dataclass
class Hidden:
    """What `hide_in_proc` did, for one log line (never the values)."""

    environ: list[str] = field(default_factory=list)
    """Names whose values were wiped from the initial environment."""
    cmdline: int = 0
    """Secret values wiped from the command line."""
    undumpable: bool = False
    problems: list[str] = field(default_factory=list)


def hide_in_proc(names: Collection[str], values: Collection[str], *, undumpable: bool = True) -> Hidden:
    """Wipe the values of the environment entries called `names` and every occurrence of `values` in
    the command line, from what /proc shows of this process; then make it non-dumpable."""
    done = Hidden()
    if not sys.platform.startswith("linux"):
        log.debug("agentik_jupyter: not Linux, so no /proc environment, command line or dumpable flag to change")
        return done
    try:
        fields = _stat_fields()
        _wipe_environ(fields, set(names), done)
        _wipe_cmdline(fields, values, done)
    except (OSError, ValueError, IndexError) as exc:
        done.problems.append(f"cannot rewrite the process's initial environment ({type(exc).__name__}: {exc})")
    if undumpable:
        done.undumpable = set_undumpable()
        if not done.undumpable:
            done.problems.append("prctl(PR_SET_DUMPABLE, 0) failed")
    return done


def set_undumpable() -> bool:
    """`prctl(PR_SET_DUMPABLE, 0)`: True when the system took it (Linux only)."""
    if not sys.platform.startswith("linux"):
        log.debug("agentik_jupyter: not Linux, so the process is not marked non-dumpable")
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _stat_fields() -> list[str]:
    """/proc/self/stat split into 1-based fields (index 0 unused); the comm may hold spaces or ')'."""
    with open("/proc/self/stat", encoding="ascii", errors="replace") as f:
        text = f.read()
    head, rest = text.rsplit(")", 1)
    pid = head.split(" (", 1)[0]
    return ["", pid, "comm", *rest.split()]


def _region(fields: list[str], start_field: int) -> tuple[int, bytes]:
    start, end = int(fields[start_field]), int(fields[start_field + 1])
    if not 0 < start < end:
        raise ValueError(f"no memory range in /proc/self/stat fields {start_field}-{start_field + 1}")
    with open("/proc/self/mem", "rb", buffering=0) as mem:
        mem.seek(start)
        return start, mem.read(end - start)


def _write(address: int, length: int) -> None:
    with open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(address)
        mem.write(bytes([FILL]) * length)


def _wipe_environ(fields: list[str], names: set[str], done: Hidden) -> None:
    if not names:
        return
    start, block = _region(fields, _ENV_START)
    offset = 0
    for entry in block.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and value and name.decode(errors="replace") in names:
            _write(start + offset + len(name) + 1, len(value))
            done.environ.append(name.decode())
        offset += len(entry) + 1


def _wipe_cmdline(fields: list[str], values: Collection[str], done: Hidden) -> None:
    needles = sorted({v.encode() for v in values if len(v) >= MIN_VALUE}, key=len, reverse=True)
    if not needles:
        return
    start, block = _region(fields, _ARG_START)
    wiped = bytearray(block)
    for needle in needles:
        at = wiped.find(needle)
        if at >= 0:
            done.cmdline += 1
        while at >= 0:
            _write(start + at, len(needle))
            wiped[at : at + len(needle)] = bytes([FILL]) * len(needle)
            at = wiped.find(needle, at + len(needle))
