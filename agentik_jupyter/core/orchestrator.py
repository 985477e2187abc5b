"""The tool-call loop: ask the model, run the tools it asks for, repeat (at most 8 times).

The loop owns the stores' transitions during a turn and emits Events for the UI
and persistence. Tool failures go back to the model as ToolResult errors; only
provider, network and configuration failures end a turn with an error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.errors import ConfigurationError, MalformedResponseError, ProviderError
from agentik_jupyter.persistence import INTERRUPTED_MESSAGE
from agentik_jupyter.providers.base import (
    ProviderChatResponse,
    ProviderDelta,
    ProviderToolCall,
    ReasoningDelta,
    StreamDone,
    TextDelta,
    UsageDelta,
)
from agentik_jupyter.security.scrub import scrub, scrub_response, scrub_result
from agentik_jupyter.security.stream import StreamScrubber
from agentik_jupyter.tools.approval import CALLER, NowhereToAsk
from agentik_jupyter.tools.arguments import bound_arguments
from agentik_jupyter.tools.interruptible import interruptible
from agentik_jupyter.tools.modes import not_offered, offered
from agentik_jupyter.tools.registry import ToolRegistry, run_tool
from agentik_jupyter.tools.status import label as tool_label
from agentik_jupyter.tools.status import noting
from agentik_jupyter.tools.validation import check_call, coerce_arguments
from agentik_jupyter.types import (
    AgentContext,
    AgentMode,
    AppendText,
    ChatMessage,
    End,
    EndReason,
    ErrorEvent,
    Event,
    StartReasoning,
    StartResponse,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
    ToolOutput,
    ToolResult,
    ToolResultEvent,
    ToolSchema,
    Usage,
    add_usage,
)

log = logging.getLogger(__name__)

MAX_ITERATIONS = 8
MAX_RESULT_CHARS = 20_000
MAX_ITERATIONS_MESSAGE = "Reached maximum iteration limit"
INTERRUPTED = "interrupted"
AWAITING_APPROVAL = " (awaiting approval)"
DENIED = "The user did not approve"
"""How the error of a call the user denied begins: a choice, not a failure (widgets/status.py)."""
STOPPED_CALL = "Interrupted by the user."
"""The result of a call a Stop cut short (the turn's cards say "stopped", not "error")."""

Approver = Callable[[ToolCall, ToolDefinition], Awaitable[bool]]
EventListener = Callable[[Event], None]


class StopFlag:
    """A turn's one stop request, read before each model call and tool.

    Set by Stop, by Jupyter's Interrupt (kernel/interrupt.py), and by a SIGINT that lands in a
    tool's own code (interruptible.py), whose handler may do no more than set a bool: so a tool
    that swallows the KeyboardInterrupt still ends the turn. Its owner (the session) clears it
    when a turn starts; an orchestrator given none keeps its own and clears it per run.
    """

    __slots__ = ("requested",)

    def __init__(self) -> None:
        self.requested = False

    def set(self) -> None:
        self.requested = True


class Transport(Protocol):
    """How the loop reaches a model: in-process adapter, Jupyter server route, or a script."""

    model: str | None
    """The model to ask (None: the configured one); `Session` sets it for a turn's `--model`."""

    def stream(
        self,
        messages: list[ChatMessage],
        context: AgentContext | None,
        tool_schemas: list[ToolSchema],
    ) -> AsyncIterator[ProviderDelta]: ...


@dataclass
class TurnOutcome:
    """What one run produced: the messages to keep, how it ended, and the error if any."""

    messages: list[ChatMessage] = field(default_factory=list)
    reason: EndReason = "complete"
    error: str | None = None
    error_code: str | None = None
    usage: Usage = field(default_factory=Usage)
    requests: int = 0


def result_text(value: Any, limit: int = MAX_RESULT_CHARS) -> str:
    """The bounded text form of a tool's return value that the model reads."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, default=str, ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(value)
    if len(text) > limit:
        cut = len(text) - limit
        text = text[:limit] + f"\n… [truncated: {cut} more characters]"
    return text


def _unique_ids(calls: list[ProviderToolCall], iteration: int) -> list[ProviderToolCall]:
    """Some providers send empty or repeated call ids; results must pair with exactly one call."""
    seen: set[str] = set()
    out: list[ProviderToolCall] = []
    for n, call in enumerate(calls):
        if not call.id or call.id in seen:
            call = call.model_copy(update={"id": f"call_{iteration}_{n}"})
        seen.add(call.id)
        out.append(call)
    return out


class _UserWait:
    """The time one tool call spent waiting for the user (an approval, a diff to accept or reject)."""

    def __init__(self) -> None:
        self._since: float | None = None
        self._total = 0.0

    def mark(self, where: str | None) -> None:
        """`where` set: the user has to act from now; None: they answered."""
        now = time.perf_counter()
        if where is not None and self._since is None:
            self._since = now
        elif where is None and self._since is not None:
            self._total += now - self._since
            self._since = None

    def total(self) -> float:
        running = time.perf_counter() - self._since if self._since is not None else 0.0
        return self._total + running


class Orchestrator:
    def __init__(
        self,
        transport: Transport,
        registry: ToolRegistry,
        chat_store: ChatStore,
        agent_store: AgentStore,
        *,
        max_iterations: int = MAX_ITERATIONS,
        approver: Approver | None = None,
        stop: StopFlag | None = None,
    ) -> None:
        self.transport = transport
        self.stop = StopFlag() if stop is None else stop
        self._owns_stop = stop is None
        self.registry = registry
        self.chat_store = chat_store
        self.agent_store = agent_store
        self.max_iterations = max_iterations
        self.approver = approver
        self._listeners: list[EventListener] = []
        self.last_outcome: TurnOutcome | None = None
        self.mode: AgentMode = "agent"  # the turn's (the session sets it; running a plan changes it)
        self.plan: object | None = None  # the plan the user ran in this turn (tools/plan.py)

    def offered(self) -> list[ToolDefinition]:
        """The tools the next request offers, in the turn's mode as it is now."""
        return offered(self.registry.get_all(), self.mode, self.plan is not None)

    def on_event(self, listener: EventListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def emit(self, event: Event) -> None:
        if isinstance(event, ErrorEvent):
            event = event.model_copy(update={"message": scrub(event.message)})
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("event listener failed")

    async def run(self, messages: list[ChatMessage], context: AgentContext | None = None) -> TurnOutcome:
        """Run one turn over `messages` (the history, ending with the user's message).

        Returns the outcome; cancelling the task leaves the stores consistent,
        gives every started tool call an "interrupted" result, and re-raises.
        """
        outcome = TurnOutcome()
        self.last_outcome = outcome
        if self._owns_stop:
            self.stop.requested = False
        self.chat_store.set_error(None)
        self.chat_store.set_loading(True)
        if context is not None:
            self.agent_store.set_context(context)
        pending: dict[str, ToolCall] = {}
        partial: list[str] = []
        limit, plan = self.max_iterations, self.plan
        try:
            iteration = -1
            while iteration + 1 < limit:
                iteration += 1
                partial.clear()
                self._check_stop()
                response = await self._ask(iteration, [*messages, *outcome.messages], context, outcome, partial)
                bounded = bound_arguments(_unique_ids(response.tool_calls, iteration))
                response = scrub_response(response.model_copy(update={"tool_calls": bounded}))  # as streamed
                calls = response.tool_calls
                assistant = ChatMessage(
                    role="assistant",
                    content=response.content or "",
                    reasoning=response.reasoning,
                    tool_calls=[ToolCall(id=c.id, name=c.name, args=c.args) for c in calls] or None,
                    provider_blocks=response.content_blocks,
                )
                self._keep(outcome, assistant)
                partial.clear()
                if not assistant.tool_calls:
                    return self._finish(outcome, "complete")
                parse_errors = {c.id: c.parse_error for c in calls}
                pending.update({c.id: c for c in assistant.tool_calls})
                for call in assistant.tool_calls:
                    self.emit(ToolCallEvent(call=call))
                for call in assistant.tool_calls:
                    self._check_stop()
                    result = await self._run_tool(call, parse_errors.get(call.id))
                    pending.pop(call.id, None)
                    self._keep_result(outcome, result)
                if self.plan is not plan:  # the user ran a plan: carrying it out gets the calls a turn gets
                    limit, plan = iteration + 1 + self.max_iterations, self.plan
            self._keep(outcome, ChatMessage(role="assistant", content=MAX_ITERATIONS_MESSAGE))
            return self._finish(outcome, "max_iterations")
        except asyncio.CancelledError:
            self._interrupt(outcome, pending, "".join(partial))
            raise
        except KeyboardInterrupt:
            # Jupyter's Interrupt landed in a tool or in run_code's user code: the turn ends here.
            self._interrupt(outcome, pending, "".join(partial))
            return outcome
        except (ConfigurationError, ProviderError) as exc:  # the model could not be asked
            return self._fail(outcome, exc.message, exc.code)
        except Exception as exc:
            log.exception("turn failed")
            return self._fail(outcome, f"{type(exc).__name__}: {scrub(str(exc))}", "internal")

    def _check_stop(self) -> None:
        """An Interrupt that a tool swallowed still ends the turn before the next step."""
        if self.stop.requested:
            raise KeyboardInterrupt

    async def _ask(
        self,
        iteration: int,
        history: list[ChatMessage],
        context: AgentContext | None,
        outcome: TurnOutcome,
        partial: list[str],
    ) -> ProviderChatResponse:
        self.agent_store.set_active_tool(None)
        self.agent_store.set_status("sending")
        self.emit(StartResponse(iteration=iteration))
        response: ProviderChatResponse | None = None
        reasoning_started = False
        text, thought = StreamScrubber(), StreamScrubber()  # a key split across deltas is still masked
        outcome.requests += 1
        if context is not None and context.mode != self.mode:  # the system prompt explains the mode
            context = context.model_copy(update={"mode": self.mode})
        stream = self.transport.stream(history, context, [d.schema_() for d in self.offered()])
        try:
            async for delta in stream:
                if isinstance(delta, TextDelta) and delta.text:
                    if self.agent_store.status != "responding":
                        self.agent_store.set_status("responding")
                    self._emit_text(text.push(delta.text), partial)
                elif isinstance(delta, ReasoningDelta) and delta.text:
                    if not reasoning_started:
                        reasoning_started = True
                        self.emit(StartReasoning())
                    self._emit_text(thought.push(delta.text), None)
                elif isinstance(delta, UsageDelta):
                    pass
                elif isinstance(delta, StreamDone):
                    response = delta.response
        finally:
            self._emit_text(thought.finish(), None)
            self._emit_text(text.finish(), partial)
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if response is None:
            raise MalformedResponseError("The model's answer ended before it was complete.")
        if response.usage is not None:
            outcome.usage = add_usage(outcome.usage, response.usage)
        return response

    def _emit_text(self, text: str, partial: list[str] | None) -> None:
        """Show scrubbed streamed text: answer text (kept in `partial` for a Stop) or reasoning."""
        if not text:
            return
        if partial is not None:
            partial.append(text)
        self.emit(AppendText(text=text, reasoning=partial is None))

    async def run_call(self, call: ToolCall) -> ToolResult:
        """One tool call that no model of ours asked for (an outside agent's, over MCP): the same
        argument checks, policy, approval gate, interruption and scrubbing as a model's call, and
        the same events, so the panel shows it as a tool card."""
        self.emit(ToolCallEvent(call=call))
        try:
            return await self._run_tool(call, None)
        except KeyboardInterrupt:  # Jupyter's Interrupt landed in the call's code
            result = ToolResult(tool_call_id=call.id, name=call.name, error=STOPPED_CALL)
            self.emit(ToolResultEvent(result=result))
            return result
        finally:
            self.agent_store.reset()

    async def _run_tool(self, call: ToolCall, parse_error: str | None) -> ToolResult:
        self.agent_store.set_status("processing")
        self.agent_store.set_active_tool(call.name)
        waited = _UserWait()
        started = time.perf_counter()
        result = scrub_result(await self._execute(call, parse_error, waited))
        # the tool's own time: the user's thinking (an approval, a diff to decide) is not the tool's
        elapsed = time.perf_counter() - started - waited.total()
        result.duration_ms = round(max(elapsed, 0.0) * 1000, 1)
        self.emit(ToolResultEvent(result=result))
        return result

    async def _execute(self, call: ToolCall, parse_error: str | None, waited: _UserWait) -> ToolResult:
        definition = self.registry.get(call.name)
        rejected = check_call(call, definition, parse_error)
        if rejected is not None or definition is None:
            return rejected or ToolResult(tool_call_id=call.id, name=call.name, error="Unknown tool.")
        if all(d.name != call.name for d in self.offered()):  # asked for anyway: the mode's answer, not the tool's
            error = not_offered(call.name, self.mode, CALLER.get())
            return ToolResult(tool_call_id=call.id, name=call.name, error=error)
        if definition.policy == "deny":
            return ToolResult(
                tool_call_id=call.id, name=call.name, error=f"The tool '{call.name}' is disabled (policy: deny)."
            )
        if definition.policy == "ask":
            self.agent_store.set_active_tool(call.name + AWAITING_APPROVAL)
            waited.mark("the approval")
            try:
                approved = await self.approver(call, definition) if self.approver else False
            except NowhereToAsk as exc:
                return ToolResult(tool_call_id=call.id, name=call.name, error=str(exc))
            finally:
                waited.mark(None)
            self.agent_store.set_active_tool(call.name)
            if not approved:
                return ToolResult(
                    tool_call_id=call.id,
                    name=call.name,
                    error=f"{DENIED} running '{call.name}'. Do not retry it; answer without it or ask the user.",
                )
        args = coerce_arguments(call.args, definition.parameters)
        try:

            def on_wait(where: str | None) -> None:
                waited.mark(where)
                self.agent_store.set_active_tool(tool_label(call.name, where))

            waiting = noting(on_wait)
            with waiting, interruptible(on_interrupt=self.stop.set):  # Interrupt raises in the tool's own code
                value = await run_tool(definition, args)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return ToolResult(tool_call_id=call.id, name=call.name, error=f"{type(exc).__name__}: {scrub(str(exc))}")
        if isinstance(value, ToolOutput):
            return ToolResult(
                tool_call_id=call.id,
                name=call.name,
                result=result_text(value.text),
                display=value.display,
                images=value.images,
            )
        return ToolResult(tool_call_id=call.id, name=call.name, result=result_text(value))

    def _keep(self, outcome: TurnOutcome, message: ChatMessage) -> None:
        outcome.messages.append(message)
        self.chat_store.add_message(message)

    def _keep_result(self, outcome: TurnOutcome, result: ToolResult) -> None:
        self._keep(outcome, ChatMessage(role="tool", content=result.error or str(result.result), tool_result=result))

    def _finish(self, outcome: TurnOutcome, reason: EndReason) -> TurnOutcome:
        outcome.reason = reason
        self.agent_store.reset()
        self.chat_store.set_loading(False)
        self.emit(End(reason=reason, usage=outcome.usage))
        return outcome

    def _fail(self, outcome: TurnOutcome, message: str, code: str | None) -> TurnOutcome:
        message = scrub(message)
        outcome.reason = "error"
        outcome.error = message
        outcome.error_code = code
        self.chat_store.set_error(message)
        self.agent_store.set_active_tool(None)
        self.agent_store.set_status("error")
        self.emit(ErrorEvent(message=message, code=code))
        self.emit(End(reason="error", usage=outcome.usage))
        return outcome

    def _interrupt(self, outcome: TurnOutcome, pending: dict[str, ToolCall], partial: str) -> None:
        if partial:
            self._keep(outcome, ChatMessage(role="assistant", content=partial))
        for call in pending.values():
            result = ToolResult(tool_call_id=call.id, name=call.name, error=STOPPED_CALL)
            self.emit(ToolResultEvent(result=result))
            self._keep_result(outcome, result)
        outcome.reason = "interrupted"
        outcome.error_code = INTERRUPTED
        # the mark a resumed transcript reads from the audit log (shown, never sent): a panel drawn
        # later from the store marks the stopped turn as one drawn from the sessions file does
        self.chat_store.add_message(ChatMessage(role="assistant", error=INTERRUPTED_MESSAGE))
        self.agent_store.reset()
        self.chat_store.set_loading(False)
        self.emit(End(reason="interrupted", usage=outcome.usage))
