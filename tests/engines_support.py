"""Shared helpers for the engine tests: the tools on a fresh shell, RSS, and a timed describe."""

from __future__ import annotations

import time
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from agentik_jupyter.kernel.context_tools import make_context_tools

# The budget the big-frame tests give describe, and what they allow on top: the cancel
# grace (limits.CANCEL_GRACE_S) plus scheduling noise on a loaded 2-core machine.
BIG_BUDGET_S = 4.0
SLACK_S = 2.5
RSS_GROWTH_MB = 200


def tools_for(**variables: Any) -> dict[str, Any]:
    """The context tools on a new in-process shell holding `variables`."""
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance(config=config)
    shell.user_ns.update(variables)
    return {t.name: t.execute for t in make_context_tools(shell)}


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def timed_describe(tools: dict[str, Any], name: str) -> tuple[str, float, float]:
    """(text, seconds, RSS growth in MB) of describe_dataframe(name)."""
    before = rss_mb()
    started = time.monotonic()
    text = tools["describe_dataframe"](name=name).text
    return text, time.monotonic() - started, rss_mb() - before
