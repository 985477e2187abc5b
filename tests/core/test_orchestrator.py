"""The tool-call loop, driven by a scripted model (no HTTP here; see test_e2e_* for that)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agentik_jupyter.core.orchestrator import MAX_ITERATIONS_MESSAGE, Orchestrator
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.errors import AuthenticationError
from agentik_jupyter.persistence import INTERRUPTED_MESSAGE
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry, tool
from agentik_jupyter.types import AgentContext, ChatMessage, ToolDefinition, ToolParameter


def make(steps: list[Step], registry: ToolRegistry | None = None, **kw: object):
    transport = ScriptedTransport(steps)
    chat, agent = ChatStore(), AgentStore()
    orch = Orchestrator(transport, registry or ToolRegistry(), chat, agent, **kw)  # type: ignore[arg-type]
    events: list[object] = []
    orch.on_event(events.append)
    return orch, transport, chat, agent, events


def user(text: str = "hi") -> list[ChatMessage]:
    return [ChatMessage(role="user", content=text)]


def echo_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    def echo_context(text: str = "x") -> str:
        """Echo the text back."""
        return f"echo:{text}"

    return reg


async def test_happy_path_without_tools() -> None:
    orch, transport, chat, agent, events = make([Step.say("Hello there")])
    statuses: list[str] = []
    agent.subscribe(lambda s: statuses.append(s.status) if not statuses or statuses[-1] != s.status else None)
    outcome = await orch.run(user(), AgentContext(notebook_path="/n.ipynb"))
    assert outcome.reason == "complete"
    assert [m.content for m in chat.messages] == ["Hello there"]
    assert agent.status == "idle" and chat.loading is False and chat.error is None
    assert statuses == ["idle", "sending", "responding", "idle"]
    assert "".join(e.text for e in events if e.type == "append_text") == "Hello there"
    assert [e.type for e in events][0] == "start_response" and events[-1].type == "end"
    assert agent.context.notebook_path == "/n.ipynb"


async def test_tool_call_then_final_answer() -> None:
    orch, transport, chat, agent, events = make(
        [Step.call("echo_context", {"text": "a"}), Step.say("done")], echo_registry()
    )
    seen_tools: list[tuple[str, str | None]] = []
    agent.subscribe(lambda s: seen_tools.append((s.status, s.active_tool)))
    outcome = await orch.run(user())
    roles = [m.role for m in chat.messages]
    assert roles == ["assistant", "tool", "assistant"]
    assert chat.messages[1].tool_result is not None and chat.messages[1].tool_result.result == "echo:a"
    assert chat.messages[-1].content == "done" and agent.status == "idle"
    assert ("processing", "echo_context") in seen_tools
    second_request = transport.requests[1].messages
    assert [m.role for m in second_request] == ["user", "assistant", "tool"]
    types = [e.type for e in events]
    assert types.index("tool_call") < types.index("tool_result") < len(types) - 1
    assert outcome.reason == "complete" and len(outcome.messages) == 3


async def test_throwing_tool_becomes_error_result_and_loop_goes_on() -> None:
    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    def explode() -> str:
        raise ValueError("kaboom")

    orch, transport, chat, agent, _ = make([Step.call("explode"), Step.say("recovered")], reg)
    await orch.run(user())
    result = chat.messages[1].tool_result
    assert result is not None and result.error == "ValueError: kaboom"
    assert transport.requests[1].messages[-1].tool_result.error == "ValueError: kaboom"
    assert chat.messages[-1].content == "recovered" and agent.status == "idle"


async def test_wrong_argument_type_is_not_executed() -> None:
    ran: list[object] = []
    reg = ToolRegistry()
    reg.add(
        ToolDefinition(
            name="get_asset",
            parameters=[ToolParameter(key="assetId", type="string", required=False)],
            execute=lambda assetId=None: ran.append(assetId),
            policy="auto",
        )
    )
    orch, _, chat, _, _ = make([Step.call("get_asset", {"assetId": 123}), Step.say("ok")], reg)
    await orch.run(user())
    err = chat.messages[1].tool_result.error
    assert ran == [] and err is not None and "assetId" in err


async def test_missing_optional_argument_runs() -> None:
    ran: list[object] = []
    reg = ToolRegistry()
    reg.add(
        ToolDefinition(
            name="get_asset",
            parameters=[ToolParameter(key="assetId", type="string", required=False)],
            execute=lambda assetId=None: ran.append(assetId) or "fine",
            policy="auto",
        )
    )
    orch, _, chat, _, _ = make([Step.call("get_asset", {}), Step.say("ok")], reg)
    await orch.run(user())
    assert ran == [None] and chat.messages[1].tool_result.error is None


async def test_unknown_tool_goes_back_to_the_model() -> None:
    orch, transport, chat, _, _ = make([Step.call("nope"), Step.say("sorry")])
    await orch.run(user())
    assert "Unknown tool 'nope'" in (chat.messages[1].tool_result.error or "")
    assert chat.messages[-1].content == "sorry"


async def test_cap_at_eight_iterations() -> None:
    orch, transport, chat, agent, events = make([Step.call("echo_context") for _ in range(8)], echo_registry())
    outcome = await orch.run(user())
    assert len(transport.requests) == 8
    assert chat.messages[-1].content == MAX_ITERATIONS_MESSAGE
    assert agent.status == "idle" and outcome.reason == "max_iterations"
    tool_msgs = [m for m in chat.messages if m.role == "tool"]
    assert len(tool_msgs) == 8  # every call paired with a result
    assert events[-1].type == "end" and events[-1].reason == "max_iterations"


async def test_final_answer_after_two_iterations_has_no_cap_message() -> None:
    orch, transport, chat, agent, _ = make(
        [Step.call("echo_context"), Step.call("echo_context"), Step.say("final")], echo_registry()
    )
    await orch.run(user())
    contents = [m.content for m in chat.messages]
    assert MAX_ITERATIONS_MESSAGE not in contents and contents[-1] == "final"
    assert len(transport.requests) == 3


async def test_provider_error_sets_store_error_and_status() -> None:
    orch, _, chat, agent, events = make([Step.fail(AuthenticationError("Invalid API key (401)", status=401))])
    outcome = await orch.run(user())
    assert outcome.reason == "error" and outcome.error_code == "authentication"
    assert chat.error == "Invalid API key (401)" and chat.loading is False
    assert agent.status == "error"
    assert [e.type for e in events][-2:] == ["error", "end"]


async def test_interrupt_mid_tool_leaves_stores_consistent() -> None:
    started = threading.Event()
    release = threading.Event()
    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    async def slow() -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    orch, _, chat, agent, events = make([Step.call("slow", text="Let me look. ")], reg)
    task = asyncio.create_task(orch.run(user()))
    for _ in range(200):
        if started.is_set():
            break
        await asyncio.sleep(0.01)
    assert agent.status == "processing" and agent.active_tool == "slow"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert agent.status == "idle" and agent.active_tool is None and chat.loading is False
    roles = [m.role for m in chat.messages]
    assert roles == ["assistant", "tool", "assistant"]
    assert chat.messages[1].tool_result.error == "Interrupted by the user."
    assert chat.messages[2].error == INTERRUPTED_MESSAGE  # the stopped mark, as a resumed transcript has it
    assert orch.last_outcome is not None and chat.messages[2] not in orch.last_outcome.messages  # (never sent)
    assert orch.last_outcome is not None and orch.last_outcome.reason == "interrupted"
    assert events[-1].type == "end" and events[-1].reason == "interrupted"


async def test_interrupt_while_streaming_keeps_partial_text() -> None:
    orch, _, chat, agent, _ = make([Step.say("x" * 400, chunk_size=1, delay=0.01)])
    task = asyncio.create_task(orch.run(user()))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.status == "idle" and chat.loading is False
    assert len(chat.messages) == 2 and 0 < len(chat.messages[0].content) < 400
    assert chat.messages[1].error == INTERRUPTED_MESSAGE


async def test_sync_tools_run_on_the_loop_thread_unless_they_opt_into_a_thread() -> None:
    reg = ToolRegistry()
    loop_thread = threading.get_ident()
    where: dict[str, int] = {}

    @tool(registry=reg, policy="auto")
    def sync_tool() -> str:
        where["sync"] = threading.get_ident()
        return "s"

    @tool(registry=reg, thread=True, policy="auto")
    def threaded_tool() -> str:
        where["threaded"] = threading.get_ident()
        return "t"

    @tool(registry=reg, policy="auto")
    async def async_tool() -> str:
        where["async"] = threading.get_ident()
        return "a"

    steps = [Step.calls(("sync_tool", {}), ("threaded_tool", {}), ("async_tool", {})), Step.say("ok")]
    orch, _, chat, _, _ = make(steps, reg)
    await orch.run(user())
    assert where["sync"] == loop_thread and where["async"] == loop_thread and where["threaded"] != loop_thread
    assert [m.tool_result.result for m in chat.messages if m.role == "tool"] == ["s", "t", "a"]


async def test_ask_policy_without_approval_is_denied_and_deny_never_runs() -> None:
    ran: list[str] = []
    reg = ToolRegistry()
    reg.add(ToolDefinition(name="run_code", policy="ask", execute=lambda: ran.append("ask")))
    reg.add(ToolDefinition(name="rm", policy="deny", execute=lambda: ran.append("deny")))

    async def approver(call, definition) -> bool:
        return call.name == "run_code" and len(ran) == 0 and approvals.pop(0)

    approvals = [False]
    orch, _, chat, _, _ = make([Step.calls(("run_code", {}), ("rm", {})), Step.say("ok")], reg, approver=approver)
    await orch.run(user())
    errors = [m.tool_result.error for m in chat.messages if m.role == "tool"]
    assert ran == [] and "did not approve" in errors[0] and "policy: deny" in errors[1]


async def test_long_results_are_truncated_with_a_note() -> None:
    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    def big() -> str:
        return "y" * 50_000

    orch, transport, chat, _, _ = make([Step.call("big"), Step.say("ok")], reg)
    await orch.run(user())
    text = chat.messages[1].tool_result.result
    assert len(text) < 21_000 and "truncated: 30000 more characters" in text


async def test_empty_and_repeated_call_ids_are_made_unique() -> None:
    from agentik_jupyter.providers.base import ProviderToolCall

    step = Step(tool_calls=[ProviderToolCall(id="", name="echo_context"), ProviderToolCall(id="", name="echo_context")])
    orch, transport, chat, _, _ = make([step, Step.say("ok")], echo_registry())
    await orch.run(user())
    ids = [c.id for c in chat.messages[0].tool_calls]
    assert len(set(ids)) == 2 and all(ids)
    assert [m.tool_result.tool_call_id for m in chat.messages if m.role == "tool"] == ids


async def test_status_says_when_a_tool_waits_for_approval() -> None:
    from agentik_jupyter.core.orchestrator import AWAITING_APPROVAL

    reg = ToolRegistry()
    reg.add(ToolDefinition(name="run_code", policy="ask", execute=lambda: "ran"))
    seen: list[str | None] = []

    async def approver(call, definition) -> bool:
        seen.append(agent.active_tool)
        return True

    orch, _, chat, agent, _ = make([Step.call("run_code"), Step.say("ok")], reg, approver=approver)
    await orch.run(user())
    assert seen == ["run_code" + AWAITING_APPROVAL]
    assert chat.messages[1].tool_result.result == "ran"


async def test_a_tools_time_leaves_out_the_users_thinking() -> None:
    """An approval (or a diff) the user takes a while to decide is not the tool's time."""
    from agentik_jupyter.tools.status import waiting_on

    reg = ToolRegistry()
    reg.add(ToolDefinition(name="run_code", policy="ask", execute=lambda: "ran"))

    async def wait_for_a_diff() -> str:
        waiting_on("the diff on cell 2")
        await asyncio.sleep(1.5)  # the user reads the diff
        waiting_on(None)
        return "accepted"

    reg.add(ToolDefinition(name="edit_cell", policy="auto", execute=wait_for_a_diff))

    async def approver(call, definition) -> bool:
        await asyncio.sleep(1.5)  # the user reads the code
        return True

    steps = [Step.call("run_code"), Step.call("edit_cell"), Step.say("ok")]
    orch, _, chat, _, _ = make(steps, reg, approver=approver)
    await orch.run(user())
    results = [m.tool_result for m in chat.messages if m.tool_result is not None]
    assert [r.result for r in results] == ["ran", "accepted"]
    assert all(r.duration_ms is not None and r.duration_ms < 1000 for r in results), [r.duration_ms for r in results]
