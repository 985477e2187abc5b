"""Ask the user before a tool whose policy is "ask" runs (run_code, MCP tools).

An `ApprovalGate` is the orchestrator's `approver`. It resolves the policy
(`AGENTIK_APPROVE` for headless runs, then the session's mode: Auto lets through what Rewind can
take back, then "always for this session" per tool), then hands an `ApprovalRequest` to the UI callback and waits on an asyncio Future, so
the kernel's loop keeps serving widget messages (Approve, Deny, Stop) meanwhile.
Nothing waits forever: with no UI the request is denied at once, and a pending
one is denied after `AGENTIK_APPROVAL_TIMEOUT` seconds (default 300).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import sys
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Literal, NamedTuple, cast

from agentik_jupyter.tools.modes import PLAN_TOOL, STEP_TOOL, offered, rewind_blockers
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import AgentMode, ToolCall, ToolDefinition

log = logging.getLogger(__name__)

APPROVE_ENV = "AGENTIK_APPROVE"
TIMEOUT_ENV = "AGENTIK_APPROVAL_TIMEOUT"
DEFAULT_TIMEOUT = 300.0
CODE_TOOL = "run_code"

ONLY_IN = {PLAN_TOOL: "offered in Plan mode only", STEP_TOOL: "offered while a plan runs"}


class NowhereToAsk(Exception):
    """A card with no place the user would see it (an outside agent's call while no chat panel is
    open): the call is refused at once with this message, which says how the user can give it one,
    instead of a card that waits unseen until its timeout."""


CALLER: ContextVar[str | None] = ContextVar("agentik_outside_caller", default=None)
"""The outside client (an MCP client's name) whose call runs in this task, None for our own agent:
its card says who asks, and its "always" answers are its own (kernel/agent.py's scope)."""

Mode = Literal["auto", "deny", "ask"]
Decision = Literal["approved", "denied", "timeout", "cancelled"]
ResolvedCallback = Callable[["ApprovalRequest"], None]


def approve_mode() -> Mode:
    """`AGENTIK_APPROVE` as a mode; unset or unknown means ask (unknown values are logged)."""
    value = os.environ.get(APPROVE_ENV, "").strip().lower()
    if value in ("auto", "deny", "ask"):
        return cast(Mode, value)
    if value:
        log.warning("%s=%r is not auto, deny or ask; asking", APPROVE_ENV, value)
    return "ask"


def approval_timeout(explicit: float | None = None) -> float | None:
    """Seconds to wait for an answer; None waits forever (0, "none" or "inf" ask for that)."""
    raw: float | str | None = explicit if explicit is not None else os.environ.get(TIMEOUT_ENV)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return DEFAULT_TIMEOUT
    if isinstance(raw, str) and raw.strip().lower() in ("none", "never"):
        return None
    try:
        seconds = float(raw)
    except ValueError:
        log.warning("%s=%r is not a number of seconds; using %s", TIMEOUT_ENV, raw, DEFAULT_TIMEOUT)
        return DEFAULT_TIMEOUT
    return None if seconds <= 0 or math.isinf(seconds) else seconds


class ApprovalRequest:
    """One pending question to the user; the card calls approve() or deny() exactly once.

    Both may be called from any thread; the first decision wins and later calls
    return False. `on_resolved` callbacks run on the event loop's thread.
    """

    def __init__(self, call: ToolCall, definition: ToolDefinition, loop: asyncio.AbstractEventLoop) -> None:
        self.call = call
        self.definition = definition
        self.id = call.id
        self.tool_name = call.name
        self.arguments = dict(call.args)
        # Only run_code's `code` is shown as code; any other tool's arguments are listed one by
        # one (a `source` of move_file is a path, not what runs).
        code = self.arguments.get("code") if call.name == CODE_TOOL else None
        self.code: str | None = code if isinstance(code, str) else None
        self.decision: Decision | None = None
        self.always = False
        self.reason: str | None = None
        self.cannot_undo: list[str] = []  # what a rewind could not take back, said before Run
        self.asks_because: list[str] = []  # in Auto: why this call still asks (what Rewind can't undo)
        self.requester: str | None = CALLER.get()  # an outside client asking (None: our agent)
        self._loop = loop
        self._future: asyncio.Future[bool] = loop.create_future()
        self._callbacks: list[ResolvedCallback] = []
        self._lock = threading.Lock()

    @property
    def language(self) -> str:
        """How to highlight `display_text`: python for code, json for other arguments."""
        return "python" if self.code is not None else "json"

    @property
    def display_text(self) -> str:
        """Exactly what will run: the code, or the arguments as JSON."""
        if self.code is not None:
            return self.code
        return json.dumps(self.arguments, indent=2, ensure_ascii=False, default=str)

    @property
    def other_arguments(self) -> dict[str, object]:
        """Every argument the code view does not show (all of them for tools other than run_code)."""
        if self.code is None:
            return dict(self.arguments)
        return {k: v for k, v in self.arguments.items() if k != "code"}

    @property
    def done(self) -> bool:
        return self.decision is not None

    @property
    def approved(self) -> bool:
        return self.decision == "approved"

    def approve(self, always: bool = False) -> bool:
        """Allow this call; `always` allows the tool for the rest of the session."""
        return self._resolve("approved", always=always, reason=None)

    def deny(self, reason: str | None = None) -> bool:
        return self._resolve("denied", always=False, reason=reason or "denied by the user")

    def cancel(self, reason: str = "cancelled") -> bool:
        """Withdraw the question (the turn was stopped); the card should stop offering buttons."""
        return self._resolve("cancelled", always=False, reason=reason)

    def on_resolved(self, callback: ResolvedCallback) -> Callable[[], None]:
        """Call `callback(request)` once decided (at once if already decided); returns an unsubscribe."""
        with self._lock:
            if self.decision is None:
                self._callbacks.append(callback)
                return lambda: self._callbacks.remove(callback) if callback in self._callbacks else None
        _safe_call(callback, self)
        return lambda: None

    async def wait(self, timeout: float | None) -> bool:
        """The decision, without blocking the loop; no answer within `timeout` is a denial."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._future), timeout)
        except TimeoutError:
            self._resolve("timeout", always=False, reason=f"no answer within {timeout:g} s")
            return await self._future

    def _resolve(self, decision: Decision, *, always: bool, reason: str | None) -> bool:
        with self._lock:
            if self.decision is not None:
                return False
            self.decision, self.always, self.reason = decision, always, reason
        if _on_loop_thread(self._loop):
            self._finish()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._finish)
        return True

    def _finish(self) -> None:
        if not self._future.done():
            self._future.set_result(self.decision == "approved")
        with self._lock:
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _safe_call(callback, self)

    def __repr__(self) -> str:
        return f"<ApprovalRequest {self.tool_name} {self.id} {self.decision or 'pending'}>"


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _safe_call(callback: ResolvedCallback, request: ApprovalRequest) -> None:
    try:
        callback(request)
    except Exception:
        log.exception("approval on_resolved callback failed")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


class ApprovalGate:
    """The orchestrator's approver: `await gate(call, definition) -> bool`.

    `present(request)` shows the approval card (None: no UI, e.g. plain IPython
    or a headless run, so requests are denied). `timeout=None` reads
    `AGENTIK_APPROVAL_TIMEOUT`. `notify(message)` tells the user why a call was
    denied without asking (default: stderr).
    """

    def __init__(
        self,
        present: Callable[[ApprovalRequest], None] | None = None,
        timeout: float | None = None,
        *,
        notify: Callable[[str], None] | None = None,
        scope: Callable[[], str] | None = None,
        mode: Callable[[], AgentMode] | None = None,
    ) -> None:
        self.present = present
        self.timeout = timeout
        self.notify = notify or _stderr
        self.scope = scope or (lambda: "")
        self.mode = mode or (lambda: "agent")  # the running turn's mode
        self.auto_ran = 0  # calls Auto let through without a card (bench, tests)
        self._always: dict[str, set[str]] = {}
        self.pending: dict[str, ApprovalRequest] = {}
        self.last: ApprovalRequest | None = None
        self.notes_for: Callable[[ToolCall], list[str]] | None = None  # what rewind can't undo

    @property
    def always(self) -> set[str]:
        """Tools allowed "always" in the current conversation (`scope`): not kernel-wide."""
        return self._always.setdefault(self.scope(), set())

    async def __call__(self, call: ToolCall, definition: ToolDefinition) -> bool:
        headless = approve_mode()
        if headless != "ask":
            return headless == "auto"
        blockers: list[str] = []
        if self.mode() == "auto":  # the mode first: Auto runs what Rewind can take back
            try:
                blockers = rewind_blockers(call, definition, self.notes_for)
            except Exception:
                log.exception("could not tell what rewind can't undo")
                blockers = ["what it changes could not be read before it runs"]
            if not blockers:
                self.auto_ran += 1
                return True
        if call.name in self.always:
            return True
        if self.present is None:
            self.notify(
                f"agentik: {call.name!r} needs your approval, but there is no approval UI here, so it was "
                f"denied. Set {APPROVE_ENV}=auto to allow it (or deny to silence this)."
            )
            return False
        request = ApprovalRequest(call, definition, asyncio.get_running_loop())
        request.asks_because = blockers
        if self.notes_for is not None:
            try:
                request.cannot_undo = self.notes_for(call)
            except Exception:
                log.exception("could not tell what rewind can't undo")
        self.pending[request.id] = request
        self.last = request
        try:
            try:
                self.present(request)
            except NowhereToAsk as exc:
                request.deny(str(exc))
                raise  # (the caller says why, in its own words)
            except Exception as exc:
                log.exception("approval card failed")
                request.deny(f"the approval card failed: {type(exc).__name__}: {exc}")
                self.notify(f"agentik: could not show the approval card for {call.name!r}; denied ({exc}).")
            approved = await request.wait(approval_timeout(self.timeout))
        except asyncio.CancelledError:
            request.cancel("the turn was stopped")
            raise
        finally:
            self.pending.pop(request.id, None)
        if approved and request.always:
            self.always.add(call.name)
        return approved

    def deny_pending(self, reason: str = "denied") -> int:
        """Deny every pending request (e.g. when the user stops the turn); returns how many."""
        requests = list(self.pending.values())
        return sum(1 for r in requests if r.deny(reason))

    def forget(self, tool_name: str | None = None) -> None:
        """Ask again for `tool_name` (or every tool) after "always for this session"."""
        if tool_name is None:
            self.always.clear()
        else:
            self.always.discard(tool_name)

    def effective_policy(self, definition: ToolDefinition) -> str:
        """The policy that applies now, with the reason when it differs from the declared one."""
        return effective_policy(definition, self)


def effective_policy(definition: ToolDefinition, gate: ApprovalGate | None = None) -> str:
    if definition.source == "builtin" and definition.name in ONLY_IN:
        return f"{definition.policy} ({ONLY_IN[definition.name]})"
    if definition.policy != "ask":
        return definition.policy
    mode = approve_mode()
    if mode != "ask":
        return f"{mode} ({APPROVE_ENV}={mode})"
    if gate is not None and definition.name in gate.always:
        return "auto (always allowed in this session; %agent policy --reset asks again)"
    if gate is not None and gate.present is None:
        return "ask (no approval UI: denied)"
    return "ask"


class ToolInfo(NamedTuple):
    name: str
    policy: str
    source: str
    description: str


def describe_tools(
    registry: ToolRegistry, gate: ApprovalGate | None = None, mode: AgentMode | None = None
) -> list[ToolInfo]:
    """Each tool with the policy in effect, its source and the first line of its description
    (with `mode`: only the tools a request offers in that mode)."""
    rows = []
    definitions = registry.get_all() if mode is None else offered(registry.get_all(), mode)
    for d in definitions:
        first = (d.description or "").strip().split("\n")[0]
        short = first if len(first) <= 90 else first[:89] + "…"
        rows.append(ToolInfo(d.name, effective_policy(d, gate), d.source, short))
    return rows


def format_tools(registry: ToolRegistry, gate: ApprovalGate | None = None, mode: AgentMode | None = None) -> str:
    """`%agent tools` as aligned plain text."""
    rows = describe_tools(registry, gate, mode)
    if not rows:
        return "No tools are registered."
    header = ToolInfo("tool", "policy", "source", "description")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    return "\n".join(
        "  ".join(str(r[i]).ljust(widths[i]) for i in range(3)) + "  " + r.description for r in [header, *rows]
    )
