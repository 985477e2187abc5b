"""The approval card: exactly what will run, and Approve / Deny / Always for this session.

The code (or the arguments) is shown escaped in a code block; once the request
is decided, by a click, a timeout or a Stop, the buttons go and the decision stays.
Nothing on the card can hide: invisible and direction-changing characters (Trojan Source)
are shown as badges under a warning, the code is shown whole (no scroll box for a payload
to sit below) with its line count, and a folded argument says its size.
"""

from __future__ import annotations

import json
from typing import Any

from ipywidgets import HBox, VBox

from agentik_jupyter.core.mainloop import main_thread_callback
from agentik_jupyter.security import invisible
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.protocol import ApprovalRequestLike
from agentik_jupyter.widgets.shared import (
    APPROVAL_CLASSES,
    APPROVAL_DONE_CLASS,
    box,
    button,
    html,
    layout,
)

DECISIONS: dict[str, str] = {
    "approved": "✓ Approved",
    "denied": "✗ Denied",
    "timeout": "✗ No answer in time: denied",
    "cancelled": "■ Withdrawn: the turn was stopped",
}


RECAP_LINES = 20  # a card this long (the panel scrolls it to its end) repeats its size above the buttons
FOLD_CHARS = 400  # an argument longer than this is folded (a click opens it), never cut
# No max-height: a scroll box lets a payload sit below what the user reads before approving.
PRE_STYLE = (
    "border:1px solid var(--jp-border-color2,#ddd);padding:4px;margin:2px 0;white-space:pre-wrap;overflow-wrap:anywhere"
)
SIZE_STYLE = "color:var(--jp-ui-font-color2,#666);font-size:90%"


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _hidden_note(text: str) -> str:
    n = invisible.count(text)
    return f" · {n} hidden character{'' if n == 1 else 's'}" if n else ""


def argument_html(name: str, value: Any) -> str:
    """One argument, whole: long values are folded in a <details> that says their size, not dropped."""
    text = _value_text(value)
    pre = f'<pre style="{PRE_STYLE}"><code>{invisible.escape_visible(text)}</code></pre>'
    label = f"<code>{invisible.escape_visible(name)}</code>"
    if len(text) > FOLD_CHARS:
        size = escape(invisible.size_text(text) + _hidden_note(text))
        return (
            f'<details class="agentik-arg"><summary>{label} ({size}): '
            f"{invisible.escape_visible(text[:80])}…</summary>{pre}</details>"
        )
    return f'<div class="agentik-arg">{label}:{pre}</div>'


def _all_text(request: ApprovalRequestLike, others: dict[str, Any] | None) -> str:
    """Everything the card shows, to count its hidden characters in one warning."""
    shown = [request.display_text] if request.language == "python" or others is None else []
    shown += [f"{name}\n{_value_text(value)}" for name, value in (others or {}).items()]
    return "\n".join(shown)


def _who(request: ApprovalRequestLike) -> str:
    """Our agent, or the outside agent (an MCP client, by the name it gave) whose call asks."""
    requester = getattr(request, "requester", None)
    return f"<b>{escape(requester)}</b> (an outside agent, over MCP)" if requester else "The agent"


def approval_html(request: ApprovalRequestLike) -> str:
    """The question and every argument of the call, as escaped HTML (code only for run_code).

    A warning first when anything shown hides characters; the code whole, with its line count;
    a long or hiding card says so again at its end, beside the buttons (the panel shows a card's end)."""
    arguments = getattr(request, "arguments", None)
    others = getattr(request, "other_arguments", arguments)
    code_view = request.language == "python"
    what = "run this code" if code_view else "call this tool with these arguments"
    everything = _all_text(request, others)
    parts = [
        invisible.warning_html(everything, "This code" if code_view else "These arguments"),
        auto_html(request),
        f"<div><b>Approve?</b> {_who(request)} wants to {what} (<code>{escape(request.tool_name)}</code>):</div>",
    ]
    if code_view or others is None:
        text = request.display_text
        parts.append(f'<div class="agentik-size" style="{SIZE_STYLE}">{escape(invisible.size_text(text))}</div>')
        parts.append(
            f'<pre style="{PRE_STYLE}"><code class="language-{escape(request.language)}">'
            f"{invisible.escape_visible(text)}</code></pre>"
        )
    if others:
        if code_view:
            parts.append("<div>with:</div>")
        parts.extend(argument_html(str(name), value) for name, value in others.items())
    elif others is not None and not code_view:
        parts.append("<div><em>(no arguments)</em></div>")
    return (
        "".join(parts)
        + rewind_html(request)
        + recap_html(request.display_text if code_view else everything, everything)
    )


REWIND_STYLE = "color:var(--jp-warn-color0,#a60);margin:2px 0"


def auto_text(reasons: list[str]) -> str:
    return "Auto asks: " + "; ".join(reasons) + " — Rewind can't undo this"


def auto_html(request: ApprovalRequestLike) -> str:
    """In Auto, why this call still asks: what Rewind can't take back ("" outside Auto)."""
    reasons = list(getattr(request, "asks_because", None) or [])
    if not reasons:
        return ""
    return f'<div class="agentik-auto-asks" style="{REWIND_STYLE}"><b>{escape(auto_text(reasons))}</b></div>'


def rewind_html(request: ApprovalRequestLike) -> str:
    """Before Run: what `%agent rewind` could not take back if this code ran ("" when everything can,
    or when Auto's reason above already said it)."""
    said = set(getattr(request, "asks_because", None) or [])
    notes = [note for note in getattr(request, "cannot_undo", None) or [] if note not in said]
    if not notes:
        return ""
    return f'<div class="agentik-rewind-note" style="{REWIND_STYLE}">{escape(cannot_undo_text(notes))}</div>'


def cannot_undo_text(notes: list[str]) -> str:
    return "Rewind can't undo: " + "; ".join(notes)


def recap_html(main: str, everything: str) -> str:
    """Above the buttons: how long the card is and how many characters it hides ("" for a short clean one)."""
    lines, hidden = invisible.line_count(main), invisible.count(everything)
    if lines <= RECAP_LINES and not hidden:
        return ""
    said = [
        f"{lines:,} line{'' if lines == 1 else 's'} above: read {'it' if lines == 1 else 'them all'} before approving"
    ]
    if hidden:
        said.append(f"{hidden} hidden character{'' if hidden == 1 else 's'} shown as badges")
    style = invisible.WARNING_STYLE if hidden else SIZE_STYLE
    return f'<div class="agentik-recap" style="{style}">{escape(" · ".join(said))}</div>'


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
        self.question = html(approval_html(request))
        # JupyterLab's look, not ipywidgets' loud success/danger colours: classes the lab
        # extension styles with the theme's variables (labextension/style/index.css), and the
        # same colours inline where it is missing (widgets/look.py).
        self.approve_button = button("Approve", icon="check", kind="accept")
        self.deny_button = button("Deny", icon="times", kind="reject")
        self.always_button = button("Always in this session", "auto")
        # Clicks may arrive on a kernel subshell's thread: decide on the main loop.
        self.approve_button.on_click(main_thread_callback(lambda _: self.request.approve()))
        self.deny_button.on_click(main_thread_callback(lambda _: self.request.deny()))
        self.always_button.on_click(main_thread_callback(lambda _: self.request.approve(always=True)))
        self.buttons = box(HBox, (self.approve_button, self.deny_button, self.always_button))
        self.outcome = html("")
        self.widget = box(
            VBox, (self.question, self.buttons, self.outcome), layout_name="approval", classes=APPROVAL_CLASSES
        )
        request.on_resolved(self._resolved)

    def _resolved(self, request: Any) -> None:
        for choice in (self.approve_button, self.deny_button, self.always_button):
            choice.disabled = True
        self.buttons.layout = layout("hidden")  # shared layouts are swapped, never changed
        self.outcome.value = f"<b>{escape(decision_text(self.request))}</b>"
        self.widget.layout = layout("approval_done")
        self.widget.add_class(APPROVAL_DONE_CLASS)
