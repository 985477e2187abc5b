"""core/chat_route.py: request validation, the system prompt, and the route's error mapping."""

from __future__ import annotations

import pytest

from agentik_jupyter.core.chat_route import build_system_prompt, handle, parse_request
from agentik_jupyter.errors import ChatRouteError
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY
from agentik_jupyter.types import AgentContext, VariableSummary


def test_system_prompt_says_where_we_are_and_adds_standing_instructions() -> None:
    ctx = AgentContext(
        notebook_path="/work/sales.ipynb",
        cell_id="cell-7",
        execution_count=12,
        variables=[VariableSummary(name="df", type="pandas.DataFrame", shape="(100, 3)")],
    )
    prompt = build_system_prompt(ctx, {"AGENTIK_SYSTEM_PROMPT": "Answer in French."})
    assert "/work/" not in prompt  # the notebook's name; the user's folders are not the model's business
    for expected in (
        "Notebook: sales.ipynb",
        "cell-7",
        "Execution count: 12",
        "- df: pandas.DataFrame (100, 3)",
        "Answer in French.",
    ):
        assert expected in prompt
    assert "Answer in French." not in build_system_prompt(ctx, {})


def test_many_variables_are_capped_with_a_pointer_to_the_tool() -> None:
    ctx = AgentContext(variables=[VariableSummary(name=f"v{i}", type="int") for i in range(100)])
    prompt = build_system_prompt(ctx, {})
    assert "- v39: int" in prompt and "- v40" not in prompt and "60 more (use list_variables)" in prompt


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
