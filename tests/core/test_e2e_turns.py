"""Whole turns over real HTTP: Session -> orchestrator -> chat route -> adapter -> FakeLLMServer."""

from __future__ import annotations

import pytest

from agentik_jupyter.core.session import Session
from agentik_jupyter.core.transport import InProcessTransport
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY, PROVIDERS
from agentik_jupyter.tools.registry import ToolRegistry, tool

pytestmark = pytest.mark.parametrize("llm_provider", PROVIDERS)


def make_session() -> tuple[Session, list[object]]:
    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    def get_rows(table: str) -> int:
        """How many rows a table has."""
        return {"sales": 100, "users": 7}[table]

    session = Session(InProcessTransport(), reg, temporary=True)
    events: list[object] = []
    session.on_event(events.append)
    return session, events


async def test_streamed_answer_with_two_tool_calls(fake_llm: FakeLLMServer, llm_env: dict[str, str]) -> None:
    fake_llm.push(
        Reply.tool_calls(
            [{"name": "get_rows", "args": {"table": "sales"}}, {"name": "get_rows", "args": {"table": "users"}}],
            text="Checking both tables. ",
        ),
        Reply.text("Sales has 100 rows and users has 7."),
    )
    fake_llm.chunk_delay = 0.005  # each chunk its own read: a local server's chunks read together come as one delta
    session, events = make_session()
    outcome = await session.send("How big are my tables?")
    assert outcome.reason == "complete"
    types = [e.type for e in events]
    assert types[0] == "start_response" and types[-1] == "end"
    first_call = types.index("tool_call")
    assert types[first_call : first_call + 4] == ["tool_call", "tool_call", "tool_result", "tool_result"]
    assert types.index("start_response", first_call) > first_call  # second model call after the tools
    texts = [e.text for e in events if e.type == "append_text" and not e.reasoning]
    assert len(texts) > 3 and "".join(texts) == "Checking both tables. Sales has 100 rows and users has 7."
    results = [e.result.result for e in events if e.type == "tool_result"]
    assert results == ["100", "7"]
    assert [m.role for m in session.chat_store.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert session.agent_store.status == "idle"
    second = fake_llm.requests[1].body
    assert second["stream"] is True and "100" in str(second["messages"]) and "7" in str(second["messages"])
    for request in fake_llm.requests:
        assert FAKE_API_KEY not in str(request.body)


FAULTS = [
    (Reply.fault("401"), "authentication", "LLM_API_KEY"),
    (Reply.fault("404"), "not_found", "LLM_MODEL"),
    (Reply.fault("500"), "server", "500"),
    (Reply.fault("reset"), "stream", ""),
    (Reply.fault("malformed_sse"), "malformed_response", ""),
    (Reply.fault("stream_error"), "stream", "Overloaded"),
]


@pytest.mark.parametrize(("reply", "code", "hint"), FAULTS, ids=[f[1] + "-" + (f[0].fault_kind or "") for f in FAULTS])
async def test_faults_end_the_turn_with_a_clear_error(
    fake_llm: FakeLLMServer, llm_env: dict[str, str], reply: Reply, code: str, hint: str
) -> None:
    fake_llm.push(*([reply] * 3), Reply.text("Back to normal."))
    session, events = make_session()
    outcome = await session.send("hello")
    assert outcome.reason == "error", outcome
    assert outcome.error_code == code
    error = session.chat_store.error or ""
    assert error and hint in error and FAKE_API_KEY not in error
    assert session.agent_store.status == "error"
    assert [e.type for e in events][-2:] == ["error", "end"]
    fake_llm.clear()
    fake_llm.push(Reply.text("Back to normal."))
    again = await session.send("hello again")
    assert again.reason == "complete" and session.chat_store.error is None
    assert session.chat_store.messages[-1].content == "Back to normal."


async def test_rate_limit_is_retried_then_answers(fake_llm: FakeLLMServer, llm_env: dict[str, str]) -> None:
    fake_llm.push(Reply.fault("429", retry_after=0.05), Reply.text("Made it."))
    session, _ = make_session()
    outcome = await session.send("hi")
    assert outcome.reason == "complete" and session.chat_store.messages[-1].content == "Made it."
    assert len(fake_llm.requests) == 2


async def test_missing_configuration_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, llm_provider: str) -> None:
    monkeypatch.delenv("LLM_PROVIDER", raising=False)
    session, _ = make_session()
    outcome = await session.send("hi")
    assert outcome.error_code == "configuration"
    assert "LLM_PROVIDER is not set" in (session.chat_store.error or "")


async def test_reasoning_arrives_as_reasoning_events_not_answer_text(
    fake_llm: FakeLLMServer, llm_env: dict[str, str]
) -> None:
    fake_llm.push(Reply.text("Paris.", reasoning="The capital of France is Paris."))
    session, events = make_session()
    await session.send("Capital of France?")
    thinking = "".join(e.text for e in events if e.type == "append_text" and e.reasoning)
    answer = "".join(e.text for e in events if e.type == "append_text" and not e.reasoning)
    assert thinking == "The capital of France is Paris." and answer == "Paris."
    types = [e.type for e in events]
    assert types.index("start_reasoning") < types.index("append_text")
    assert session.chat_store.messages[-1].content == "Paris."
