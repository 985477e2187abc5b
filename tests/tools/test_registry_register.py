"""`ToolRegistry.register(definition)`, the spec's one-argument form."""

from __future__ import annotations

import pytest

from agentik_jupyter.core.orchestrator import Orchestrator
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.errors import DuplicateToolError
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import ChatMessage, ToolDefinition, ToolParameter


def get_asset() -> ToolDefinition:
    return ToolDefinition(
        name="get_asset",
        description="Look up an asset",
        parameters=[ToolParameter(key="assetId", type="string", required=True)],
        execute=lambda assetId: f"asset {assetId}",
        policy="auto",
    )


async def test_register_a_definition_as_the_spec_does() -> None:
    registry = ToolRegistry()
    definition = registry.register(get_asset())
    assert registry.get("get_asset") is definition and [s.name for s in registry.to_tool_schemas()] == ["get_asset"]
    chat = ChatStore()
    transport = ScriptedTransport([Step.call("get_asset", {"assetId": "a7"}), Step.say("found")])
    outcome = await Orchestrator(transport, registry, chat, AgentStore()).run([ChatMessage(role="user", content="go")])
    assert outcome.reason == "complete"
    assert [m.tool_result.result for m in chat.messages if m.tool_result] == ["asset a7"]


def test_register_keeps_the_duplicate_rule_and_the_two_argument_form() -> None:
    registry = ToolRegistry()
    registry.register(get_asset())
    with pytest.raises(DuplicateToolError, match="already registered"):
        registry.register(get_asset())
    replacement = get_asset().model_copy(update={"description": "newer"})
    assert registry.register(replacement, replace=True).description == "newer"
    registry.register("alias", get_asset())
    assert registry.get("alias") is not None and registry.get("alias").name == "get_asset"
    with pytest.raises(TypeError):
        registry.register(get_asset(), get_asset())  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        registry.register("nothing")  # type: ignore[call-overload]
