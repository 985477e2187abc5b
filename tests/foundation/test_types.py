"""JSON round-trips of the contract types: what is persisted and sent must come back equal."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from agentik_jupyter.types import (
    AgentContext,
    AppendText,
    AssistantMessage,
    ChatMessage,
    ChatRequest,
    End,
    ErrorEvent,
    ErrorRecord,
    Event,
    PersistedMessage,
    StartReasoning,
    StartResponse,
    ToolCall,
    ToolCallEvent,
    ToolCallRecord,
    ToolParameter,
    ToolResult,
    ToolResultEvent,
    ToolResultRecord,
    Usage,
    UserMessage,
    VariableSummary,
)

CALL = ToolCall(id="call_1", name="describe_dataframe", args={"name": "df", "rows": 3})
RESULT = ToolResult(tool_call_id="call_1", name="describe_dataframe", result={"shape": [3, 2]})

MESSAGES = [
    ChatMessage(role="user", content="hi"),
    ChatMessage(role="assistant", content="", tool_calls=[CALL], reasoning="thinking"),
    ChatMessage(role="tool", content="x", tool_result=RESULT),
    ChatMessage(role="tool", content="", tool_result=ToolResult(tool_call_id="c", name="n", error="boom")),
]


@pytest.mark.parametrize("message", MESSAGES)
def test_chat_message_round_trip(message: ChatMessage) -> None:
    assert ChatMessage.model_validate_json(message.model_dump_json()) == message


EVENTS = [
    StartReasoning(),
    StartResponse(iteration=2),
    AppendText(text="Hel"),
    AppendText(text="hmm", reasoning=True),
    ToolCallEvent(call=CALL),
    ToolResultEvent(result=RESULT),
    ErrorEvent(message="LLM provider error", code="authentication"),
    End(reason="max_iterations", usage=Usage(input_tokens=5, output_tokens=7)),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_event_union_round_trip(event: object) -> None:
    adapter = TypeAdapter(Event)
    assert adapter.validate_json(adapter.dump_json(event)) == event


PERSISTED = [
    UserMessage(
        content="q",
        context=AgentContext(
            notebook_path="/n.ipynb",
            execution_count=3,
            variables=[VariableSummary(name="df", type="DataFrame", shape="(3, 2)")],
        ),
    ),
    UserMessage(content="q"),
    AssistantMessage(content="a", usage=Usage(input_tokens=1, output_tokens=2)),
    AssistantMessage(content="", tool_calls=[CALL]),
    ToolCallRecord(call=CALL),
    ToolResultRecord(result=RESULT),
    ErrorRecord(message="rate limited", code="rate_limit"),
    ErrorRecord(message="no code"),
]


@pytest.mark.parametrize("record", PERSISTED, ids=lambda r: r.kind)
def test_persisted_union_round_trip(record: object) -> None:
    adapter = TypeAdapter(PersistedMessage)
    back = adapter.validate_json(adapter.dump_json(record))
    assert back == record and type(back) is type(record)


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError):
        ToolCall.model_validate({"id": "1", "name": "x", "args": {}, "extra": 1})


def test_tool_parameter_shape() -> None:
    p = ToolParameter(key="assetId", type="string", required=False)
    assert p.model_dump(include={"key", "type", "required"}) == {"key": "assetId", "type": "string", "required": False}
    with pytest.raises(ValidationError):
        ToolParameter(key="x", type="str")  # type: ignore[arg-type]


def test_chat_request_needs_messages() -> None:
    with pytest.raises(ValidationError):
        ChatRequest.model_validate({"messages": []})
    req = ChatRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]})
    assert req.messages[0].content == "hi"
