"""The approval card: exactly what will run, and Approve / Deny / Always for this session.

The code (or the arguments) is shown escaped in a code block; once the request
is decided, by a click, a timeout or a Stop, the buttons go and the decision stays.
"""

from __future__ import annotations

from typing import Any

from ipywidgets import HTML, Button, HBox, Layout, VBox

from ..kernel.mainloop import main_thread_callback
from .markdown import escape
from .protocol import ApprovalRequestLike

DECISIONS: dict[str, str] = {
    "approved": "✓ Approved",
    "denied": "✗ Denied",
    "timeout": "⌛ No answer in time: denied",
    "cancelled": "■ Withdrawn: the turn was stopped",
}


def approval_html(request: ApprovalRequestLike) -> str:
    """The question and the exact code or arguments, as escaped HTML."""
    what = "run this code" if request.language == "python" else "call this tool with these arguments"
    return (
        f"<div><b>Approve?</b> The agent wants to {what} "
        f"(<code>{escape(request.tool_name)}</code>):</div>"
        f'<pre style="max-height:24em;overflow:auto;border:1px solid #ddd;padding:4px">'
        f'<code class="language-{escape(request.language)}">{escape(request.display_text)}</code></pre>'
    )


def decision_text(request: ApprovalRequestLike) -> str:
    text = DECISIONS.get(request.decision or "", "Pending")
    if request.decision == "approved" and request.always:
        text += f" (always for {request.tool_name} in this session)"
    elif request.decision == "denied" and request.reason and request.reason != "denied by the user":
        text += f" ({request.reason})"
    return text


class ApprovalCard:
    """A live card bound to one request; `widget` is what to display."""

    def __init__(self, request: ApprovalRequestLike) -> None:
        self.request = request
        self.question = HTML(value=approval_html(request))
        self.approve_button = Button(description="Approve", button_style="success", icon="check")
        self.deny_button = Button(description="Deny", button_style="danger", icon="times")
        self.always_button = Button(
            description="Always for this session", button_style="warning", layout=Layout(width="auto")
        )
        # Clicks may arrive on a kernel subshell's thread: decide on the main loop.
        self.approve_button.on_click(main_thread_callback(lambda _: self.request.approve()))
        self.deny_button.on_click(main_thread_callback(lambda _: self.request.deny()))
        self.always_button.on_click(main_thread_callback(lambda _: self.request.approve(always=True)))
        self.buttons = HBox(children=(self.approve_button, self.deny_button, self.always_button))
        self.outcome = HTML(value="")
        self.widget = VBox(
            children=(self.question, self.buttons, self.outcome),
            layout=Layout(border="2px solid #e0a800", padding="4px 8px", margin="4px 0"),
        )
        request.on_resolved(self._resolved)

    def _resolved(self, request: Any) -> None:
        for button in (self.approve_button, self.deny_button, self.always_button):
            button.disabled = True
        self.buttons.layout.display = "none"
        self.outcome.value = f"<b>{escape(decision_text(self.request))}</b>"
        self.widget.layout.border = "1px solid #ccc"
