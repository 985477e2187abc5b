"""Plan mode's tools: `propose_plan` (the steps, as data, on a card the user runs, edits or rejects) and
`plan_step` (each step reported done or failed while the plan runs).

`propose_plan` is offered only in Plan mode (tools/modes.py), with the reading tools and no run_code.
It shows its card through the approval presenter and waits, as an approval does, without blocking
the loop; nothing runs until the user presses Run the plan. Then the turn goes on in Agent or Auto
(the user's choice on the card) with run_code offered, and the tool's answer carries the steps.
The call and its steps are in the audit log with the turn, and the tool's result carries the plan as
the user decided it (PLAN_MIME: the steps as run, the decision, the mode, edited or not), so a resumed
transcript shows the plan's card, ticked by the plan_step calls after it, without parsing text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

from agentik_jupyter.tools.approval import ApprovalRequest, approval_timeout
from agentik_jupyter.tools.modes import PLAN_TOOL, STEP_TOOL, label
from agentik_jupyter.tools.registry import ToolRegistry, add_builtin, definition_from_function
from agentik_jupyter.types import AgentMode, ToolCall, ToolDefinition, ToolOutput, new_id

MAX_STEPS = 30
PLAN_MIME = "application/vnd.agentik.plan+json"
"""In propose_plan's result `display`: the plan as decided (`plan_record`), for transcripts drawn later."""
StepStatus = Literal["done", "failed"]
Changed = Callable[["PlanRequest"], None]


def clean_steps(steps: list[str]) -> list[str]:
    """The steps as the card shows them: one line each, blank ones left out, at most MAX_STEPS."""
    found = [" ".join(str(step).split()) for step in steps]
    return [step for step in found if step][:MAX_STEPS]


class PlanRequest(ApprovalRequest):
    """A proposed plan waiting on its card: `run` (the steps, maybe edited; Agent or Auto) or `deny`."""

    kind = "plan"

    def __init__(self, call: ToolCall, definition: ToolDefinition, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(call, definition, loop)
        self.steps: list[str] = clean_steps(list(call.args.get("steps") or []))
        self.edited = False
        self.run_mode: AgentMode = "agent"
        self.status: list[StepStatus | None] = [None] * len(self.steps)
        self.notes: list[str] = [""] * len(self.steps)
        self._changed: list[Changed] = []

    def run(self, steps: list[str] | None = None, *, auto: bool = False) -> bool:
        """Run the plan (with the user's `steps` when they edited it), in Auto or in Agent."""
        if self.done:
            return False
        if steps is not None:
            edited = clean_steps(steps)
            if not edited:
                return False  # an emptied plan is not a plan: the card keeps asking
            if edited != self.steps:
                self.steps, self.edited = edited, True
                self.status, self.notes = [None] * len(edited), [""] * len(edited)
        self.run_mode = "auto" if auto else "agent"
        return self.approve()

    def mark(self, step: int, status: StepStatus, note: str = "") -> None:
        """Tick step `step` (1-based) done or failed on the card."""
        if not 1 <= step <= len(self.steps):
            raise ValueError(f"the plan has steps 1 to {len(self.steps)}, not {step}")
        self.status[step - 1] = status
        self.notes[step - 1] = " ".join(note.split())[:300]
        for callback in list(self._changed):
            callback(self)

    def on_change(self, callback: Changed) -> None:
        self._changed.append(callback)


def plan_record(plan: PlanRequest) -> dict[str, Any]:
    """The plan as the sessions file keeps it with the turn: the steps as run (or as proposed), what the
    user decided (approved, denied, timeout), in which mode it runs and whether the user edited it."""
    return {
        "steps": list(plan.steps),
        "decision": plan.decision,
        "mode": plan.run_mode if plan.decision == "approved" else None,
        "edited": plan.edited,
        "reason": plan.reason if plan.decision != "approved" else None,
    }


def numbered(steps: list[str]) -> str:
    return "\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1))


def make_plan_tools(
    present: Callable[[ApprovalRequest], None],
    on_run: Callable[[PlanRequest], None],
    running: Callable[[], object | None],
) -> list[ToolDefinition]:
    """`propose_plan` shows its card with `present` and, once run, hands the plan to `on_run` (the turn
    switches to the plan's mode); `plan_step` ticks the plan `running()` returns."""
    holder: list[ToolDefinition] = []

    async def propose_plan(steps: list[str]) -> ToolOutput:
        """Propose your plan: the steps you will take, short and in order. The user runs, edits or rejects
        it; nothing runs before they run it. When they do, carry out the steps and report each with plan_step.

        Args:
            steps: the steps, one short sentence each, in order
        """
        call = ToolCall(id=new_id("plan_"), name=PLAN_TOOL, args={"steps": clean_steps(steps)})
        request = PlanRequest(call, holder[0], asyncio.get_running_loop())
        if not request.steps:
            raise ValueError("a plan needs at least one step")
        present(request)
        try:
            ran = await request.wait(approval_timeout())
        except asyncio.CancelledError:
            request.cancel("the turn was stopped")
            raise
        if not ran:
            why = f" ({request.reason})" if request.reason and request.reason != "denied by the user" else ""
            text = (
                f"The user rejected the plan{why}. Do not carry it out and run nothing; "
                "ask what they want instead, or propose another plan."
            )
            return ToolOutput(text=text, display={"text/plain": text, PLAN_MIME: plan_record(request)})
        on_run(request)
        how = "as they edited it" if request.edited else "as proposed"
        text = (
            f"The user ran the plan ({how}), in {label(request.run_mode)} mode. Carry out these steps now, in order, "
            f"and after each one call {STEP_TOOL} with its number and done or failed:\n{numbered(request.steps)}"
        )
        return ToolOutput(text=text, display={"text/plain": text, PLAN_MIME: plan_record(request)})

    def plan_step(step: int, status: StepStatus, note: str = "") -> str:
        """Report a step of the plan the user ran as done or failed (the plan's card ticks it).

        Args:
            step: the step's number, from 1
            status: done or failed
            note: what came of it, in a few words
        """
        plan = running()
        if not isinstance(plan, PlanRequest):
            raise RuntimeError("no plan is running in this turn")
        plan.mark(step, status, note)
        return f"Step {step} marked {status}."

    holder.append(definition_from_function(propose_plan, policy="auto", source="builtin"))
    step_tool = definition_from_function(plan_step, policy="auto", source="builtin")
    step_tool.quick = True
    return [holder[0], step_tool]


def register_plan_tools(
    registry: ToolRegistry,
    present: Callable[[ApprovalRequest], None],
    on_run: Callable[[PlanRequest], None],
    running: Callable[[], object | None],
) -> None:
    """Add propose_plan and plan_step (offered only in Plan mode and while a plan runs: tools/modes.py)."""
    for definition in make_plan_tools(present, on_run, running):
        add_builtin(registry, definition)
