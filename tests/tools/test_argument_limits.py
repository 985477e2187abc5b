"""Tool-call arguments beyond the depth and size limits are a tool error, not a failed turn.

Before the limits, arguments nested 300 levels deep passed the parser and then failed the
turn's commit to SQLite (pydantic: "Maximum serialization depth exceeded"), out of
Session.send. Now the model reads an error naming the limit and the loop goes on.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentik_jupyter.core.session import Session
from agentik_jupyter.core.transport import InProcessTransport
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.providers.base import ProviderToolCall
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import PROVIDERS
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.arguments import (
    MAX_ARGUMENT_CHARS,
    MAX_ARGUMENT_DEPTH,
    bound_arguments,
    limit_problem,
)
from agentik_jupyter.tools.registry import ToolRegistry, definition_from_function, tool
from agentik_jupyter.tools.validation import check_call, validate_arguments
from agentik_jupyter.types import ToolCall, ToolResult


def nested(depth: int, kind: str = "list") -> Any:
    """`depth` levels of arrays (or objects) around a 1, built without recursion."""
    value: Any = 1
    for _ in range(depth - 1):
        value = [value] if kind == "list" else {"k": value}
    return value


def echo_registry(ran: list[Any]) -> ToolRegistry:
    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    def echo(data: dict[str, Any] | None = None) -> str:
        """Echo the data back."""
        ran.append(data)
        return "echoed"

    return reg


def tool_errors(session: Session) -> list[str]:
    return [m.tool_result.error or "" for m in session.chat_store.messages if m.role == "tool" and m.tool_result]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"data": nested(300)}, f"nest more than {MAX_ARGUMENT_DEPTH} levels"),
        ({"data": nested(5_000, "dict")}, f"nest more than {MAX_ARGUMENT_DEPTH} levels"),
        ({"data": "x" * (MAX_ARGUMENT_CHARS + 1)}, "longer than 1,000,000 characters"),
        ({"data": list(range(200_000))}, "more than 100,000 values"),
    ],
    ids=["depth-300", "depth-5000", "2MB-string", "200k-values"],
)
async def test_over_limit_arguments_are_a_tool_error_and_the_turn_goes_on(
    tmp_path: Path, args: dict[str, Any], expected: str
) -> None:
    ran: list[Any] = []
    db = await AsyncSessionDB.open(tmp_path / "nb.agentik.db")
    transport = ScriptedTransport([Step.call("echo", args), Step.say("Sorry, I will send less.")])
    session = Session(transport, echo_registry(ran), db=db)
    try:
        outcome = await session.send("go")
        assert outcome.reason == "complete", outcome.error
        assert ran == []
        (error,) = tool_errors(session)
        assert "Invalid arguments for 'echo'" in error and expected in error
        assert expected in str([m.content for m in transport.requests[1].messages])
    finally:
        await db.aclose()
    with sqlite3.connect(tmp_path / "nb.agentik.db") as conn:
        roles = [r[0] for r in conn.execute("SELECT role FROM message ORDER BY seq")]
    assert roles == ["user", "assistant", "tool_call", "tool_result", "assistant"]


async def test_arguments_within_the_limits_run_unchanged(tmp_path: Path) -> None:
    ran: list[Any] = []
    data = {"rows": [[i, str(i)] for i in range(100)], "deep": nested(MAX_ARGUMENT_DEPTH - 1)}
    session = Session(
        ScriptedTransport([Step.call("echo", {"data": data}), Step.say("ok")]), echo_registry(ran), temporary=True
    )
    assert (await session.send("go")).reason == "complete"
    assert ran == [data] and tool_errors(session) == [""]


@pytest.mark.parametrize("llm_provider", PROVIDERS)
async def test_deep_arguments_over_http_reach_the_model_as_an_error(
    fake_llm: FakeLLMServer, llm_env: dict[str, str], llm_provider: str
) -> None:
    """The whole path: the provider's JSON arguments, parsed, bounded, answered with an error."""
    ran: list[Any] = []
    fake_llm.push(
        Reply.tool_calls([{"name": "echo", "args": {"data": nested(200)}}]),
        Reply.text("I will flatten it."),
    )
    session = Session(InProcessTransport(), echo_registry(ran), temporary=True)
    outcome = await session.send("go")
    assert outcome.reason == "complete", outcome.error
    sent = json.dumps(fake_llm.requests[1].body)
    # the provider's parser measures the depth before decoding (providers/_convert.py)
    assert ran == [] and "nest 200 levels deep; at most 64 are accepted" in sent


def test_raw_arguments_longer_than_the_limit_are_bounded_without_parsing() -> None:
    raw = json.dumps({"data": "y" * MAX_ARGUMENT_CHARS})
    (call,) = bound_arguments([ProviderToolCall(id="c1", name="echo", args={}, arguments_raw=raw)])
    assert call.args == {} and call.arguments_raw is None and "longer than" in (call.parse_error or "")


# ---- property: the argument validator on arbitrary JSON never raises ----

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=40,
)
DEEP_VALUES = st.builds(nested, st.integers(1, 3_000), st.sampled_from(["list", "dict"]))


def _definitions() -> list[Any]:
    def typed(
        name: str, count: int, ratio: float = 0.5, flags: list[str] | None = None, opts: dict | None = None
    ) -> str:
        """Typed parameters."""
        return name

    def anything(data: Any = None) -> str:
        """Any data."""
        return "x"

    return [definition_from_function(typed, policy="auto"), definition_from_function(anything, policy="auto")]


DEFINITIONS = _definitions()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.dictionaries(st.text(max_size=10), JSON_VALUES | DEEP_VALUES, max_size=4), which=st.integers(0, 1))
def test_bounded_validation_of_arbitrary_json_only_returns_typed_errors(args: dict[str, Any], which: int) -> None:
    problem = limit_problem(args)
    assert problem is None or isinstance(problem, str)
    (bounded,) = bound_arguments([ProviderToolCall(id="c", name=DEFINITIONS[which].name, args=args)])
    assert (bounded.parse_error is None) == (problem is None)
    call = ToolCall(id=bounded.id, name=bounded.name, args=bounded.args)
    result = check_call(call, DEFINITIONS[which], bounded.parse_error)
    assert result is None or (isinstance(result, ToolResult) and result.error)
    if problem is not None:
        assert result is not None and problem in (result.error or "")


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES | DEEP_VALUES)
def test_any_json_value_as_arguments_is_judged_not_raised(value: Any) -> None:
    assert limit_problem(value) is None or isinstance(limit_problem(value), str)
    problems = validate_arguments(value if limit_problem(value) is None else {}, DEFINITIONS[0].parameters)
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)
