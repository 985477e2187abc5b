"""The panel's Rewind button: it shows what `%agent rewind` would do, and does it only when asked."""

from __future__ import annotations

import asyncio
from typing import Any

from ipywidgets import HTML, Button, HBox, Layout, VBox

from agentik_jupyter.core.mainloop import main_thread_callback
from agentik_jupyter.core.rewind import RewindError, RewindPlan
from agentik_jupyter.notebook.revert import plan as plan_rewind
from agentik_jupyter.notebook.revert import rewind as apply_rewind
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.shared import PLAIN_CLASSES, REJECT_CLASSES, button_style
from agentik_jupyter.widgets.turn_rewind import notes_html


def _lines_html(lines: list[str], lead: str = "") -> str:
    items = "".join(f"<li>{escape(line)}</li>" for line in lines[1:])
    return f'<div class="agentik-rewind">{lead}<b>{escape(lines[0])}</b><ul>{items}</ul></div>'


class RewindControl:
    """`button` goes beside Send and Stop; `widget` shows the preview, the question and the outcome."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.button = Button(description="Rewind", icon="undo", _dom_classes=PLAIN_CLASSES)
        self.button.tooltip = "Take back the latest turn: its variables and the conversation (asks first)"
        self.confirm_button = Button(
            description="Rewind now", icon="undo", _dom_classes=REJECT_CLASSES, style=button_style("reject")
        )
        self.cancel_button = Button(description="Cancel", _dom_classes=PLAIN_CLASSES)
        self.message = HTML(value="")
        self.choices = HBox(children=(self.confirm_button, self.cancel_button), layout=Layout(display="none"))
        self.widget = VBox(children=(self.message, self.choices))
        self.plan: RewindPlan | None = None
        self.task: asyncio.Task[Any] | None = None
        # Clicks may arrive on a kernel subshell's thread: the work runs on the main loop.
        self.button.on_click(main_thread_callback(lambda _: self._start(self.preview())))
        self.confirm_button.on_click(main_thread_callback(lambda _: self._start(self.confirm())))
        self.cancel_button.on_click(main_thread_callback(lambda _: self.cancel()))

    def _start(self, work: Any) -> None:
        self.task = asyncio.get_running_loop().create_task(work)

    async def preview(self) -> None:
        """Show what a rewind of the latest turn would do, and ask."""
        try:
            self.plan = await plan_rewind(self.session)
        except RewindError as exc:
            self._say(f"<em>Nothing rewound: {escape(scrub(str(exc)))}</em>")
            return
        self.message.value = _lines_html(self.plan.lines(done=False))
        self.choices.layout.display = ""

    async def confirm(self) -> None:
        plan, self.plan = self.plan, None
        self.choices.layout.display = "none"
        if plan is None:
            return
        try:
            done = await apply_rewind(self.session, plan)
        except RewindError as exc:
            self._say(f"<em>Nothing rewound: {escape(scrub(str(exc)))}</em>")
            return
        # the rewound turn's line in the transcript says what was rewound (once, where the turn is);
        # here only what that line does not hold: the cells
        self._say(notes_html(done.unrecorded()))

    def cancel(self) -> None:
        self.plan = None
        self._say("<em>Nothing rewound.</em>")

    def _say(self, value: str) -> None:
        self.choices.layout.display = "none"
        self.message.value = value
