"""core/chat_route.py: request validation, the system prompt, and the route's error mapping."""

from __future__ import annotations

import pytest

from agentik_jupyter.core.chat_route import build_system_prompt, handle, parse_request
from agentik_jupyter.core.prompt import context_note
from agentik_jupyter.errors import ChatRouteError
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY
from agentik_jupyter.types import AgentContext, VariableSummary


def test_system_prompt_names_the_notebook_and_adds_standing_instructions_but_nothing_per_turn() -> None:
    ctx = AgentContext(
        notebook_path="/work/sales.ipynb",
        cell_id="cell-7",
        execution_count=12,
        variables=[VariableSummary(name="df", type="pandas.DataFrame", shape="(100, 3)")],
    )
    prompt = build_system_prompt(ctx, {"AGENTIK_SYSTEM_PROMPT": "Answer in French."})
    assert "/work/" not in prompt  # the notebook's name; the user's folders are not the model's business
    assert "Notebook: sales.ipynb" in prompt and "Answer in French." in prompt
    assert "Answer in French." not in build_system_prompt(ctx, {})
    # What changes per question travels in the question's context note, after the history.
    later = ctx.model_copy(update={"cell_id": "cell-9", "execution_count": 13, "variables": []})
    assert build_system_prompt(later, {}) == build_system_prompt(ctx, {})


def test_context_note_says_where_the_question_was_asked_then_only_what_changed() -> None:
    df = VariableSummary(name="df", type="pandas.DataFrame", shape="(100, 3)")
    first = AgentContext(notebook_path="/work/sales.ipynb", cell_id="cell-7", execution_count=12, variables=[df])
    note = context_note(first) or ""
    for expected in ("cell-7", "Execution count: 12", "- df: pandas.DataFrame (100, 3)"):
        assert expected in note
    n = VariableSummary(name="n", type="int")
    second = first.model_copy(
        update={"cell_id": "cell-9", "execution_count": 14, "variables": [df.model_copy(update={"shape": "(5, 3)"}), n]}
    )
    later = context_note(second, first) or ""
    assert "cell-9" in later and "Execution count: 14" in later
    assert "New variables since the last question:\n- n: int" in later
    assert "Changed since the last question:\n- df: pandas.DataFrame (5, 3)" in later
    assert "Deleted since the last question: n" in (context_note(first, second) or "")
    assert "unchanged" in (context_note(first, first) or "")


def test_many_variables_are_capped_with_a_pointer_to_the_tool() -> None:
    ctx = AgentContext(variables=[VariableSummary(name=f"v{i}", type="int") for i in range(100)])
    note = context_note(ctx) or ""
    assert "- v39: int" in note and "- v40" not in note and "60 more (use list_variables)" in note


@pytest.mark.parametrize("body", [b"", b"{", b"[]", b'{"messages": "hi"}', b'{"messages": [{"role": "user"}], "x": 1}'])
def test_invalid_bodies_are_400_with_a_reason(body: bytes) -> None:
    with pytest.raises(ChatRouteError) as info:
        parse_request(body)
    assert info.value.status == 400 and info.value.body["message"]


async def test_handle_maps_configuration_and_provider_errors(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(ChatRouteError) as info:
        await handle(body, [], environ={})
    assert info.value.status == 502 and info.value.body["error"] == "Missing configuration"
    env = fake_llm.env(api_key=FAKE_API_KEY)
    monkeypatch.setenv("LLM_API_KEY", FAKE_API_KEY)
    fake_llm.push(Reply.fault("503"), Reply.fault("503"), Reply.fault("503"))
    with pytest.raises(ChatRouteError) as info:
        await handle(body, [], environ=env)
    assert info.value.status == 502 and info.value.body["error"] == "LLM provider error"
    assert FAKE_API_KEY not in str(info.value.body)
    fake_llm.push(Reply.tool_calls([{"name": "t", "args": {"a": 1}}], text="Calling."))
    result = await handle(body, [], environ=env)
    assert result["content"] == "Calling."
    assert [(c["name"], c["args"]) for c in result["toolCalls"]] == [("t", {"a": 1})] and result["toolCalls"][0]["id"]
