"""Where a turn's time goes: cProfile inside a real kernel around `%%agent --wait` turns.

`python -m bench.profile_turn [turns] [--tool] [--sort tottime|cumulative]` prints the kernel's
profile of that many turns of the benchmark's workload (bench/kernel_turns.py) after a warm-up
turn. Everything the kernel's main thread does is in it: the adapter reading the stream, the
orchestrator, the stores and widgets, the DB calls handed to threads, the iopub sends.
"""

from __future__ import annotations

import sys

from agentik_jupyter.testing import FakeLLMServer

from .kernel_client import BenchKernel, kernel_environ
from .kernel_turns import AGENT_CELL, SETUP, _reply, _tool_reply

PROFILE_CELL = """\
import cProfile, io, pstats
from agentik_jupyter.kernel.magics import run_cell_turn
__profile = cProfile.Profile()
__profile.enable()
for _ in range({turns}):
    await run_cell_turn(get_ipython(), "--wait", "Summarise the sales data.")
__profile.disable()
__out = io.StringIO()
pstats.Stats(__profile, stream=__out).sort_stats({sort!r}).print_stats({lines})
print(__out.getvalue())
"""


def profile(turns: int = 10, *, tool: bool = False, sort: str = "tottime", lines: int = 45) -> str:
    with FakeLLMServer() as server:
        kernel = BenchKernel(kernel_environ(server.env(), AGENTIK_APPROVE="auto"))
        try:
            kernel.run(SETUP)
            server.push(*([_tool_reply()] if tool else []), _reply())
            kernel.run(AGENT_CELL)
            for _ in range(turns):
                server.push(*([_tool_reply()] if tool else []), _reply())
            cell = kernel.run(PROFILE_CELL.format(turns=turns, sort=sort, lines=lines))
            return "\n".join(m["content"]["text"] for m in cell.messages if m["msg_type"] == "stream")
        finally:
            kernel.close()


def main(argv: list[str]) -> int:
    turns = int(argv[0]) if argv and argv[0].isdigit() else 10
    sort = argv[argv.index("--sort") + 1] if "--sort" in argv else "tottime"
    print(profile(turns, tool="--tool" in argv, sort=sort))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
