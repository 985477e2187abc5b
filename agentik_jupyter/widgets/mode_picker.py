"""The panel's mode picker beside Send, and the mode in its status line: the session's mode, set and shown.

Picking a mode sets the session's (saved with it, as `%agent mode` does); a mode set elsewhere
(`%agent mode`, a resumed session's) shows here too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

from ipywidgets import HTML, Dropdown, Layout

from agentik_jupyter.core.mainloop import main_thread_callback
from agentik_jupyter.tools.modes import LABELS, MODES, label
from agentik_jupyter.types import AgentMode
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.protocol import SessionLike

log = logging.getLogger(__name__)

TIPS = {
    "ask": "Ask: reads and answers; nothing runs, nothing is edited",
    "agent": "Agent: code and MCP calls ask on their cards",
    "auto": "Auto: code runs without a card when Rewind can take back all it changes",
    "plan": "Plan: proposes steps with the reading tools; nothing runs until you run the plan",
}


def mode_html(mode: str) -> str:
    return f'<span class="agentik-mode" title="{escape(TIPS.get(mode, ""))}">Mode: {escape(label(mode))}</span>'


class ModePicker:
    """`picker` (a dropdown for beside Send) and `label` (for the status line) of one session."""

    def __init__(self, session: SessionLike) -> None:
        self.session = session
        mode = session.effective_mode
        self.picker = Dropdown(
            options=[(LABELS[m], m) for m in MODES],
            value=mode,
            description="",
            tooltip="The session's mode",
            layout=Layout(width="6.5em"),
        )
        self.picker.add_class("agentik-mode-picker")
        self.label = HTML(value=mode_html(mode))
        self.task: asyncio.Task[Any] | None = None
        # Widget messages may arrive on a kernel subshell's thread: hand them to the main loop.
        self.picker.observe(main_thread_callback(self._picked), names="value")
        self._off = session.on_mode(self._show)

    def _picked(self, change: dict[str, Any]) -> None:
        mode = str(change.get("new") or "")
        if mode not in MODES or mode == self.session.mode:
            return
        self.label.value = mode_html(mode)
        self.task = asyncio.get_running_loop().create_task(self.session.set_mode(cast(AgentMode, mode)))
        self.task.add_done_callback(self._saved)

    def _saved(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("could not save the mode: %s", task.exception())
            self.label.value = mode_html(self.session.effective_mode) + " <em>(could not be saved)</em>"

    def _show(self) -> None:
        mode = self.session.effective_mode
        if self.picker.value != mode:
            self.picker.value = mode
        self.label.value = mode_html(mode)

    def close(self) -> None:
        self._off()
