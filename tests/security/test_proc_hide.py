"""A process wipes its secrets from what /proc shows of it (its initial environment and command line),
keeping every other byte, and becomes non-dumpable; another process reads the result."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentik_jupyter.security import proc_hide
from agentik_jupyter.security.proc_hide import hide_in_proc

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")

SECRET = "sk-wiped-from-proc-7c41e0b9d2"
OTHER = "sk-only-in-the-command-line-5a90"

CHILD = """
import ctypes, json, os, sys
from agentik_jupyter.security import proc_hide
from agentik_jupyter.security.proc_hide import hide_in_proc
print("ready", flush=True)
sys.stdin.readline()
done = hide_in_proc(["LLM_API_KEY", "LLM_EXTRA_TOKEN"], [os.environ["LLM_API_KEY"], sys.argv[2]])
dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)
print(json.dumps({"environ": done.environ, "cmdline": done.cmdline, "undumpable": done.undumpable,
                  "problems": done.problems, "dumpable": dumpable, "key": os.environ["LLM_API_KEY"],
                  "argv": sys.argv[1:]}), flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def child() -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "LLM_API_KEY": SECRET, "LLM_EXTRA_TOKEN": "short", "KEEP_ME": "kept-as-it-was"}
    args = [sys.executable, "-c", CHILD, f"--AgentikJupyter.api_key={SECRET}", OTHER, "--port=8888"]
    proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        # Popen returns once exec closed the child's close-on-exec pipe, which Linux does before it
        # sets up the new environment: /proc/<pid>/environ can read empty until the child runs
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


@LINUX
def test_the_secrets_are_gone_from_proc_and_nothing_else_moved(child: subprocess.Popen[str]) -> None:
    proc = Path(f"/proc/{child.pid}")
    environ_before, cmdline_before = (proc / "environ").read_bytes(), (proc / "cmdline").read_bytes()
    assert SECRET.encode() in environ_before and OTHER.encode() in cmdline_before
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    report = json.loads(child.stdout.readline())
    environ_after, cmdline_after = (proc / "environ").read_bytes(), (proc / "cmdline").read_bytes()

    assert report["problems"] == [] and report["undumpable"] is True and report["dumpable"] == 0
    assert sorted(report["environ"]) == ["LLM_API_KEY", "LLM_EXTRA_TOKEN"] and report["cmdline"] == 2
    assert SECRET.encode() not in environ_after and b"short" not in environ_after
    assert SECRET.encode() not in cmdline_after and OTHER.encode() not in cmdline_after
    assert len(environ_after) == len(environ_before) and len(cmdline_after) == len(cmdline_before)
    assert b"LLM_API_KEY=" + b"x" * len(SECRET) in environ_after.split(b"\0")
    assert b"LLM_EXTRA_TOKEN=xxxxx" in environ_after.split(b"\0")
    assert b"KEEP_ME=kept-as-it-was" in environ_after.split(b"\0")
    kept = [a for a in cmdline_before.split(b"\0") if SECRET.encode() not in a and OTHER.encode() not in a]
    assert all(a in cmdline_after.split(b"\0") for a in kept)  # every other argument as it was
    assert b"--AgentikJupyter.api_key=" + b"x" * len(SECRET) in cmdline_after.split(b"\0")
    # Python's own copies are untouched: the process goes on with its settings
    assert report["key"] == SECRET and report["argv"][1] == OTHER


def test_nothing_to_hide_changes_nothing() -> None:
    done = hide_in_proc([], [], undumpable=False)
    assert done.environ == [] and done.cmdline == 0 and done.problems == [] and not done.undumpable


def test_outside_linux_nothing_is_touched_and_a_debug_line_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    with caplog.at_level(logging.DEBUG, logger="agentik_jupyter.security.proc_hide"):
        done = hide_in_proc(["LLM_API_KEY"], [SECRET])
    assert done.environ == [] and done.cmdline == 0 and not done.undumpable and done.problems == []
    assert "not Linux" in caplog.text


NOBODY = "65534"
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "/usr/bin/python3"]
BY_PATH = """
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("proc_hide", sys.argv[1])
module = sys.modules["proc_hide"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print("ready", flush=True)
sys.stdin.readline()
module.hide_in_proc(["LLM_API_KEY"], [os.environ["LLM_API_KEY"], sys.argv[2]])
print("hidden", flush=True)
sys.stdin.readline()
"""
READ = """
import sys
try:
    print(sys.argv[2].encode() in open(sys.argv[1], 'rb').read())
except PermissionError:
    print('refused')
"""


def _as_nobody_works() -> bool:
    """Root with setpriv, and a Python and our module that user 65534 may run and read."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    module = Path(proc_hide.__file__)
    if any(not part.stat().st_mode & 0o005 for part in [module, *module.parents]):
        return False
    return subprocess.run([*AS_NOBODY, "-c", "pass"], capture_output=True).returncode == 0


def _read_as_nobody(path: str, needle: str) -> str:
    run = subprocess.run([*AS_NOBODY, "-c", READ, path, needle], capture_output=True, text=True, timeout=30)
    return run.stdout.strip()


@LINUX
def test_another_process_of_the_same_user_can_no_longer_open_the_environment() -> None:
    if not _as_nobody_works():
        pytest.skip("needs root, setpriv and a /usr/bin/python3 that user 65534 can run")
    args = [*AS_NOBODY, "-c", BY_PATH, proc_hide.__file__, OTHER]
    env = {"LLM_API_KEY": SECRET, "PATH": "/usr/bin:/bin"}
    child = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdin is not None and child.stdout is not None
        environ, cmdline = f"/proc/{child.pid}/environ", f"/proc/{child.pid}/cmdline"
        assert child.stdout.readline() == "ready\n"  # (the environment is set up: see `child`)
        assert _read_as_nobody(environ, SECRET) == "True"  # before: one file read away
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "hidden"
        assert _read_as_nobody(environ, SECRET) == "refused"  # non-dumpable: root's now
        assert _read_as_nobody(cmdline, OTHER) == "False"  # readable by all, and wiped
        assert SECRET.encode() not in Path(environ).read_bytes()  # root reads it: the bytes are gone
    finally:
        child.kill()
        child.wait(10)
