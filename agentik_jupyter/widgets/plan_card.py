"""The plan card: the steps the agent proposes, with Run the plan / Edit / Reject, then each step ticked.

Nothing runs until Run the plan. Edit opens the steps as text (one a line), which Run the plan then
uses; "in Auto" runs the plan's code without a card where Rewind can take it back. Once the plan
runs, the card ticks each step done (✓) or failed (✗) as the agent reports it.

A finished turn (its saved transcript, a resumed session) draws the same card without buttons from
`SavedPlan`: propose_plan's result as the sessions file keeps it (tools/plan.py PLAN_MIME), ticked by
the plan_step calls that succeeded after it. The chat panel draws it so too for a `%%agent` cell's
running turn, whose live card (with the buttons) is in the cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ipywidgets import Checkbox, HBox, Textarea, VBox

from agentik_jupyter.core.mainloop import main_thread_callback
from agentik_jupyter.tools.plan import PLAN_MIME, clean_steps
from agentik_jupyter.types import ToolResult
from agentik_jupyter.widgets import look
from agentik_jupyter.widgets.approval_card import ApprovalCard
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.shared import APPROVAL_CLASSES, APPROVAL_DONE_CLASS, box, button, html, layout

MARKS = {None: "☐", "done": "✓", "failed": "✗"}
DECISIONS = {
    "denied": "✗ Plan rejected: nothing ran",
    "timeout": "✗ No answer in time: the plan did not run",
    "cancelled": "■ Withdrawn: the turn was stopped",
}


def steps_html(plan: Any) -> str:
    """The steps as a list, each with its mark (☐ to do, ✓ done, ✗ failed) and what came of it."""
    items = []
    for n, step in enumerate(plan.steps):
        status = plan.status[n] if n < len(plan.status) else None
        note = plan.notes[n] if n < len(plan.notes) else ""
        extra = f" <em>— {escape(note)}</em>" if note else ""
        items.append(
            f'<li class="agentik-step agentik-step-{status or "todo"}">{MARKS[status]} {escape(step)}{extra}</li>'
        )
    return f'<ol class="agentik-plan-steps" style="list-style:none;padding-left:0.5em">{"".join(items)}</ol>'


def plan_html(plan: Any) -> str:
    count = len(plan.steps)
    return (
        f"<div><b>Plan</b> ({count} step{'' if count == 1 else 's'}): nothing runs until you run it.</div>"
        + steps_html(plan)
    )


def outcome_text(plan: Any) -> str:
    if plan.decision == "approved":
        edited = ", as edited" if plan.edited else ""
        return f"▶ Running the plan in {'Auto' if plan.run_mode == 'auto' else 'Agent'}{edited}"
    text = DECISIONS.get(plan.decision or "", "Pending")
    if plan.decision == "denied" and plan.reason and plan.reason != "denied by the user":
        text += f" ({plan.reason})"
    return text


@dataclass
class SavedPlan:
    """A plan of a finished turn, with the attributes the card's HTML reads (steps, status, notes,
    decision, run_mode, edited, reason)."""

    steps: list[str]
    decision: str | None = None
    run_mode: str = "agent"
    edited: bool = False
    reason: str | None = None
    status: list[str | None] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        count = len(self.steps)
        self.status = (list(self.status) + [None] * count)[:count]
        self.notes = (list(self.notes) + [""] * count)[:count]

    @classmethod
    def of(cls, args: dict[str, Any], result: ToolResult | None) -> SavedPlan:
        """The plan of one propose_plan call: as decided when its result says so, else as proposed
        (a turn stopped on the card: withdrawn; no result yet: pending)."""
        record = (result.display or {}).get(PLAN_MIME) if result is not None else None
        if isinstance(record, dict) and isinstance(record.get("steps"), list):
            mode = "auto" if record.get("mode") == "auto" else "agent"
            reason = record.get("reason")
            return cls(
                steps=clean_steps(record["steps"]),
                decision=str(record.get("decision") or "") or None,
                run_mode=mode,
                edited=record.get("edited") is True,
                reason=reason if isinstance(reason, str) else None,
            )
        steps = args.get("steps")
        decision = "cancelled" if result is not None and result.error is not None else None
        return cls(steps=clean_steps(steps if isinstance(steps, list) else []), decision=decision)

    def tick(self, args: dict[str, Any]) -> None:
        """What a plan_step call that succeeded reported; anything else is left as it was."""
        step, status = args.get("step"), args.get("status")
        if isinstance(step, int) and 1 <= step <= len(self.steps) and status in ("done", "failed"):
            self.status[step - 1] = status
            note = args.get("note")
            self.notes[step - 1] = " ".join(note.split())[:300] if isinstance(note, str) else ""

    def entry(self, call_id: str) -> dict[str, Any]:
        """The transcript's JSON entry (widgets/transcript.py)."""
        return {
            "role": "plan",
            "id": call_id,
            "steps": self.steps,
            "status": self.status,
            "notes": self.notes,
            "decision": self.decision,
            "mode": self.run_mode if self.decision == "approved" else None,
            "edited": self.edited,
            "reason": self.reason,
        }

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> SavedPlan:
        return cls(
            steps=list(entry.get("steps") or []),
            decision=entry.get("decision"),
            run_mode="auto" if entry.get("mode") == "auto" else "agent",
            edited=entry.get("edited") is True,
            reason=entry.get("reason"),
            status=list(entry.get("status") or []),
            notes=list(entry.get("notes") or []),
        )


def saved_plan_html(plan: SavedPlan) -> str:
    """A finished turn's plan card: the steps ticked as they went, and what the user decided."""
    outcome = outcome_text(plan) if plan.decision else "Waiting for the user: nothing ran"
    frame = ";".join(f"{key}:{value}" for key, value in look.APPROVAL_DONE_FRAME.items())
    return (
        f'<div class="agentik-approval agentik-plan {APPROVAL_DONE_CLASS}" style="{frame}">{plan_html(plan)}'
        f"<div><b>{escape(outcome)}</b></div></div>"
    )


def saved_plan_text(plan: SavedPlan) -> str:
    """The plan as one line of a transcript's text/plain."""
    outcome = outcome_text(plan) if plan.decision else "Waiting for the user"
    steps = " · ".join(f"{MARKS[s]} {step}" for step, s in zip(plan.steps, plan.status, strict=True))
    return f"[plan] {outcome}: {steps}"


class PlanCard:
    """A live card bound to one PlanRequest (tools/plan.py); `widget` is what to display."""

    def __init__(self, plan: Any) -> None:
        self.plan = plan
        self.editing = False
        self.question = html(plan_html(plan))
        self.editor = Textarea(value="\n".join(plan.steps), rows=max(3, len(plan.steps) + 1), layout=layout("hidden"))
        self.auto = Checkbox(
            value=False, description="in Auto (what Rewind can undo runs without a card)", indent=False
        )
        self.run_button = button("Run the plan", icon="play", kind="accept")
        self.edit_button = button("Edit", icon="pencil")
        self.reject_button = button("Reject", icon="times", kind="reject")
        self.run_button.on_click(main_thread_callback(lambda _: self._run()))
        self.edit_button.on_click(main_thread_callback(lambda _: self._edit()))
        self.reject_button.on_click(main_thread_callback(lambda _: self.plan.deny()))
        self.buttons = box(HBox, (self.run_button, self.edit_button, self.reject_button, self.auto))
        self.outcome = html("")
        self.widget = box(
            VBox,
            (self.question, self.editor, self.buttons, self.outcome),
            layout_name="approval",
            classes=(*APPROVAL_CLASSES, "agentik-plan"),
        )
        plan.on_resolved(self._resolved)
        plan.on_change(self._changed)

    def _edit(self) -> None:
        """Show the steps as text to change; Run the plan then runs them as edited."""
        self.editing = True
        self.editor.layout = layout("plain")
        self.edit_button.disabled = True

    def _run(self) -> None:
        steps = self.editor.value.splitlines() if self.editing else None
        self.plan.run(steps, auto=bool(self.auto.value))

    def _changed(self, plan: Any) -> None:
        self.question.value = plan_html(plan)

    def _resolved(self, plan: Any) -> None:
        for choice in (self.run_button, self.edit_button, self.reject_button, self.auto):
            choice.disabled = True
        self.buttons.layout = layout("hidden")  # shared layouts are swapped, never changed
        self.editor.layout = layout("hidden")
        self.question.value = plan_html(plan)  # the steps as run (edited ones included)
        self.outcome.value = f"<b>{escape(outcome_text(plan))}</b>"
        self.widget.layout = layout("approval_done")
        self.widget.add_class(APPROVAL_DONE_CLASS)


def card_for(request: Any) -> ApprovalCard | PlanCard:
    """The card a request to the user needs: a plan's, or an approval's."""
    return PlanCard(request) if getattr(request, "kind", None) == "plan" else ApprovalCard(request)
