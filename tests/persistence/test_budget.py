"""Context budgets per model and the pure rules behind trimming and pairing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentik_jupyter.persistence import (
    WorkingMemoryError,
    check_turn,
    complete_pairs,
    context_budget,
    context_window,
    estimate_tokens,
)
from agentik_jupyter.persistence.budget import (
    UNKNOWN_MODEL_BUDGET,
    CachedEstimate,
    first_turn_to_keep,
    message_tokens,
)
from agentik_jupyter.types import ChatMessage, ToolCall, ToolResult


def test_estimate_tokens() -> None:
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 400)] == [0, 1, 1, 2, 100]


@pytest.mark.parametrize(
    "model, budget",
    [
        ("claude-sonnet-4-5", 100_000),
        ("anthropic/claude-3-haiku", 100_000),
        ("gpt-4o-mini", 64_000),
        ("gpt-3.5-turbo", 8_000),
        ("qwen2.5-coder:7b", 16_000),
        ("my-local-model", UNKNOWN_MODEL_BUDGET),
        (None, UNKNOWN_MODEL_BUDGET),
    ],
)
def test_default_budgets(model: str | None, budget: int) -> None:
    assert context_budget(model, {}) == budget


def test_env_overrides_budget() -> None:
    assert context_budget("claude-sonnet-4-5", {"AGENTIK_CONTEXT_TOKENS": "4000"}) == 4000
    assert context_budget(None, {"AGENTIK_CONTEXT_TOKENS": " 32_000 "}) == 32_000
    for bad in ("lots", "0", "-5"):
        with pytest.raises(ValueError, match="AGENTIK_CONTEXT_TOKENS"):
            context_budget(None, {"AGENTIK_CONTEXT_TOKENS": bad})
    assert context_window("unheard-of") is None


@settings(deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50), max_size=12), st.none() | st.integers(0, 300))
def test_first_turn_to_keep_property(costs: list[int], budget: int | None) -> None:
    start = first_turn_to_keep(costs, budget)
    if not costs or budget is None:
        assert start == 0
        return
    kept = costs[start:]
    assert start <= len(costs) - 1  # the latest turn always stays
    assert len(kept) == 1 or sum(kept) <= budget
    if start > 0:
        assert sum(kept) + costs[start - 1] > budget  # the next older turn would not fit


def _call(i: str) -> ToolCall:
    return ToolCall(id=i, name=f"tool_{i}")


def _result(i: str) -> ChatMessage:
    return ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=i, name=f"tool_{i}", result=i))


def test_check_turn_accepts_well_formed_turns() -> None:
    user = ChatMessage(role="user", content="q")
    check_turn([user])
    check_turn([user, ChatMessage(role="assistant", content="a")])
    check_turn(
        [
            user,
            ChatMessage(role="assistant", tool_calls=[_call("a"), _call("b")]),
            _result("b"),
            _result("a"),
            ChatMessage(role="assistant", tool_calls=[_call("c")]),
            _result("c"),
            ChatMessage(role="assistant", content="x"),
        ]
    )


def test_check_turn_rejects_duplicate_call_ids() -> None:
    user = ChatMessage(role="user", content="q")
    with pytest.raises(WorkingMemoryError, match="twice"):
        check_turn([user, ChatMessage(role="assistant", tool_calls=[_call("a"), _call("a")]), _result("a")])


def test_check_turn_rejects_results_after_the_next_assistant() -> None:
    user = ChatMessage(role="user", content="q")
    with pytest.raises(WorkingMemoryError, match="without a tool result"):
        check_turn(
            [
                user,
                ChatMessage(role="assistant", tool_calls=[_call("a")]),
                ChatMessage(role="assistant", content="x"),
                _result("a"),
            ]
        )


def test_complete_pairs_drops_unanswered_calls_and_stray_results() -> None:
    user = ChatMessage(role="user", content="q")
    first = ChatMessage(role="assistant", tool_calls=[_call("a"), _call("b")])
    second = ChatMessage(role="assistant", tool_calls=[_call("c")])
    kept = complete_pairs([user, first, _result("a"), _result("zzz"), second])
    assert [m.role for m in kept] == ["user", "assistant", "tool"]
    assert [c.id for c in kept[1].tool_calls] == ["a"]
    check_turn(kept)
    with pytest.raises(WorkingMemoryError):
        complete_pairs([first])


def _asking(ids: list[str], text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text, tool_calls=[_call(i) for i in dict.fromkeys(ids)] or None)


@settings(deadline=None)
@given(
    st.lists(
        st.one_of(
            st.builds(_asking, st.lists(st.sampled_from("abcdef"), max_size=3), st.sampled_from(["", "text"])),
            st.builds(_result, st.sampled_from("abcdef")),
        ),
        max_size=10,
    )
)
def test_complete_pairs_always_yields_a_valid_turn(rest: list[ChatMessage]) -> None:
    check_turn(complete_pairs([ChatMessage(role="user", content="q"), *rest]))


def test_a_cached_estimate_gives_the_estimators_answers_and_stays_bounded() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return estimate_tokens(text)

    cached = CachedEstimate(count, size=3)
    texts = ["a" * 10, "b" * 2_000, "c" * 30]
    assert [cached(t) for t in texts + texts] == [estimate_tokens(t) for t in texts + texts]
    assert calls == texts  # each payload estimated once
    cached("d")  # a fourth payload: the memory starts over instead of growing
    assert len(cached._known) == 1 and cached(texts[0]) == estimate_tokens(texts[0])


def test_a_messages_cost_is_what_is_sent_not_the_stored_record() -> None:
    html = "<table>" + "<tr><td>1</td></tr>" * 500 + "</table>"
    result = ToolResult(tool_call_id="c1", name="describe", result="x" * 4_000, display={"text/html": html})
    message = ChatMessage(role="tool", content="x" * 4_000, tool_result=result)
    stored = estimate_tokens(message.model_dump_json())
    sent = message_tokens(message)
    assert 1_000 <= sent <= 1_030  # the result once, no HTML
    assert stored > 2 * sent
    asked = ChatMessage(role="user", content="Why?", context_note="[Notebook context for this question]\nCell: c")
    assert message_tokens(asked) > estimate_tokens("Why?") + 8  # the note is sent, so it is counted
