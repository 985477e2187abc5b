"""`%load_ext agentik_jupyter`: register the magics, the `await` transformer, the sidebar's
control comm target (kernel/control.py), what agent cells show kept for a page opened later
(kernel/live_cells.py), the server routes' turns target (kernel/remote_turns.py)
and the MCP endpoint's tools target (kernel/remote_tools.py).

Only IPython is touched here; the agent itself (pydantic, httpx2, SQLite,
widgets) loads on the first turn.
"""

from __future__ import annotations

import atexit
import re
from typing import TYPE_CHECKING

from agentik_jupyter.kernel import control, live_cells, remote_tools, remote_turns
from agentik_jupyter.kernel.magics import CELL_HELPER, LINE_HELPER, AgentMagics
from agentik_jupyter.notebook import fix as failures
from agentik_jupyter.notebook import shown_images

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

_CELL = re.compile(r"^%%agent\b(?P<line>[^\n]*)\n?(?P<body>.*)\Z", re.S)
_LINE = re.compile(r"^%agent\b(?P<rest>[^\n]*)$")


def _wants_wait(line: str) -> bool:
    # load time: %load_ext stays cheap; the agent loads on first use
    from agentik_jupyter.errors import OptionsError
    from agentik_jupyter.kernel.turn_options import parse_options

    try:
        return parse_options(line).wait
    except OptionsError:
        return False


def transform(lines: list[str]) -> list[str]:
    """Rewrite `%%agent --wait` cells and top-level `%agent` lines into top-level awaits.

    IPython decides whether a cell is async after the cleanup transformers run, so
    the rewritten cell is awaited on the kernel's own loop: no nested loop.
    """
    if not lines:
        return lines
    source = "".join(lines)
    cell = _CELL.match(source)
    if cell is not None:
        line = cell.group("line")
        if not _wants_wait(line):
            return lines
        return [f"await {CELL_HELPER}({line.strip()!r}, {cell.group('body')!r})\n"]
    if not any(_LINE.match(raw.rstrip("\n")) for raw in lines):
        return lines
    out: list[str] = []
    for raw in lines:
        match = _LINE.match(raw.rstrip("\n"))
        if match is None:
            out.append(raw)
        else:
            out.append(f"await {LINE_HELPER}({match.group('rest').strip()!r})\n")
    return out


def load(ipython: InteractiveShell) -> None:
    if transform in ipython.input_transformers_cleanup:
        return
    # load time: %load_ext stays cheap; the agent loads on first use
    from agentik_jupyter.security.scrub import install_log_filter

    install_log_filter()
    ipython.register_magics(AgentMagics)

    async def cell_helper(line: str, body: str) -> None:
        # load time: %load_ext stays cheap; the turn's machinery loads when a --wait cell runs
        from agentik_jupyter.kernel.turns import run_cell_turn

        await run_cell_turn(ipython, line, body)

    async def line_helper(rest: str) -> None:
        # load time: %load_ext stays cheap; the commands load when a top-level %agent line runs
        from agentik_jupyter.kernel.commands import run_command

        await run_command(ipython, rest)

    helpers = {CELL_HELPER: cell_helper, LINE_HELPER: line_helper}
    ipython.user_ns.update(helpers)
    ipython.user_ns_hidden.update(helpers)
    ipython.input_transformers_cleanup.append(transform)
    failures.install(ipython)
    shown_images.install(ipython)
    control.register(ipython)
    live_cells.install(ipython)
    remote_turns.register(ipython)
    remote_tools.register(ipython)
    atexit.register(_shutdown, ipython)


def _shutdown(ipython: InteractiveShell) -> None:
    # load time: %load_ext stays cheap; the agent loads on first use
    from agentik_jupyter.kernel.agent import forget_agent

    forget_agent(ipython)


def unload(ipython: InteractiveShell) -> None:
    atexit.unregister(_shutdown)
    if transform in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.remove(transform)
    failures.uninstall(ipython)
    shown_images.uninstall(ipython)
    control.unregister(ipython)
    live_cells.uninstall(ipython)
    remote_turns.unregister(ipython)
    remote_tools.unregister(ipython)
    for name in (CELL_HELPER, LINE_HELPER):
        ipython.user_ns.pop(name, None)
        ipython.user_ns_hidden.pop(name, None)
    _shutdown(ipython)
