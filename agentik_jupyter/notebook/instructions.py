"""Standing instructions per project: an `AGENTS.md` beside the notebook or in a folder above it.

The file comes with the project (a clone, a download), and its text steers the model,
so it is data until the user trusts it, like a project `mcp.json`: the decision is
kept in the user's trust store (security/trust.py), keyed by the file's content hash,
and a changed file asks again. Trusted text is added to the system prompt after
`AGENTIK_SYSTEM_PROMPT`, bounded to INSTRUCTIONS_CHARS.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from agentik_jupyter.core.server_info import find_server
from agentik_jupyter.security.trust import TrustStore, digest

FILENAME = "AGENTS.md"
INSTRUCTIONS_CHARS = 4_000
MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class ProjectInstructions:
    path: Path
    text: str
    sha256: str
    trusted: bool
    clipped: int = 0

    def describe(self) -> str:
        state = "trusted" if self.trusted else "not trusted: `%agent instructions trust` adds it to the prompt"
        cut = f", {self.clipped} chars past the limit left out" if self.clipped else ""
        return f"AGENTS.md: {self.path} ({len(self.text)} chars{cut}; {state})"


def search_dirs(start: Path, root: Path | None) -> list[Path]:
    """`start` and its parents up to `root` (the server root), or up to the home folder."""
    return list(_chain(start, root or Path.home()))


@lru_cache(maxsize=32)
def _chain(start: Path, stop: Path) -> tuple[Path, ...]:
    """The folders from `start` up to `stop`, resolved once: each turn looks for AGENTS.md in them,
    and resolving a path is a system call per folder in it."""
    start = start.resolve()
    stop = stop.resolve()
    if not start.is_relative_to(stop):
        return (start,)
    dirs = [start]
    while dirs[-1] != stop and dirs[-1].parent != dirs[-1]:
        dirs.append(dirs[-1].parent)
    return tuple(dirs)


def find_instructions(start: Path, root: Path | None) -> Path | None:
    """The nearest AGENTS.md from the notebook's folder upwards."""
    for folder in search_dirs(start, root):
        candidate = folder / FILENAME
        if candidate.is_file():
            return candidate
    return None


def read_instructions(path: Path, store: TrustStore | None = None) -> ProjectInstructions:
    raw = path.read_bytes()[:MAX_FILE_BYTES]
    sha = digest(raw)
    text = raw.decode("utf-8", errors="replace").strip()
    clipped = max(0, len(text) - INSTRUCTIONS_CHARS)
    trusted = (store or TrustStore()).is_trusted(path, sha)
    return ProjectInstructions(path=path, text=text[:INSTRUCTIONS_CHARS], sha256=sha, trusted=trusted, clipped=clipped)


class InstructionsFinder:
    """The project's AGENTS.md for one kernel, re-read only when the file changes (one stat a turn)."""

    def __init__(self, notebook_dir: Path, root: Path | None, store: TrustStore | None = None) -> None:
        self.notebook_dir, self.root, self.store = notebook_dir, root, store
        self._cache: tuple[Path, float, int, ProjectInstructions] | None = None
        self.warned: set[str] = set()

    def current(self) -> ProjectInstructions | None:
        path = find_instructions(self.notebook_dir, self.root)
        if path is None:
            return None
        try:
            stat = path.stat()
            cached = self._cache
            if cached is not None and cached[:3] == (path, stat.st_mtime, stat.st_size):
                return cached[3]
            found = read_instructions(path, self.store)
        except OSError:
            return None
        self._cache = (path, stat.st_mtime, stat.st_size, found)
        return found

    def forget_cache(self) -> None:
        self._cache = None

    def prompt_text(self) -> str | None:
        """The trusted instructions for the system prompt; an untrusted file is named once on stderr."""
        found = self.current()
        if found is None or not found.text:
            return None
        if found.trusted:
            return found.text
        if found.sha256 not in self.warned:
            self.warned.add(found.sha256)
            print(f"agentik: {found.describe()}", file=sys.stderr)
        return None


def finder_for(notebook: Path | None) -> InstructionsFinder:
    server = find_server()
    root = Path(server.root_dir) if server is not None and server.root_dir else None
    return InstructionsFinder(notebook.parent if notebook is not None else Path.cwd(), root)


class InstructedAgent(Protocol):
    """What `%agent instructions` reads of the kernel's agent (kernel/agent.py's KernelAgent)."""

    @property
    def instructions(self) -> InstructionsFinder: ...


async def instructions_command(agent: InstructedAgent, args: list[str]) -> None:
    """`%agent instructions [trust|untrust]`: show the project's AGENTS.md and decide on it."""
    finder: InstructionsFinder = agent.instructions
    finder.forget_cache()
    found = finder.current()
    if found is None:
        where = ", ".join(str(d) for d in search_dirs(finder.notebook_dir, finder.root))
        print(f"agentik: no {FILENAME} found (looked in {where}).")
        return
    action = args[0].lower() if args else "show"
    store = finder.store or TrustStore()
    if action == "trust":
        store.trust(found.path, found.sha256)
    elif action == "untrust":
        store.forget(found.path)
    elif action != "show":
        print("Usage: %agent instructions [trust|untrust]")
        return
    finder.forget_cache()
    found = finder.current() or found
    print(found.describe())
    if action == "show":
        print("---\n" + found.text + ("\n…" if found.clipped else ""))
