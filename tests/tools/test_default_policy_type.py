"""A tool that names no policy asks, whoever builds its definition (types.DEFAULT_POLICY).

The registry used to patch `ask` into a user's ToolDefinition built without a policy, while the
type itself said `auto`: a definition built another way (a copy, a non-user source, a registry
of one's own) ran without asking. Now the type's default is `ask`, and the built-in and MCP
definitions state their own.
"""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from agentik_jupyter.tools.context import make_context_tools
from agentik_jupyter.tools.registry import ToolRegistry, definition_from_function
from agentik_jupyter.types import ToolDefinition


def read(name: str) -> str:
    """Read a value."""
    return name


@pytest.mark.parametrize("source", ["user", "builtin", "mcp"])
def test_a_definition_without_a_policy_asks_whatever_its_source(source: str) -> None:
    definition = ToolDefinition(name="t", execute=read, source=source)
    assert definition.policy == "ask"
    assert definition.model_copy().policy == "ask"
    registry = ToolRegistry()
    registry.add(definition)
    assert registry.get("t").policy == "ask"  # type: ignore[union-attr]


def test_definitions_from_functions_ask_for_user_tools_and_run_for_built_in_ones() -> None:
    assert definition_from_function(read).policy == "ask"
    assert definition_from_function(read, source="builtin").policy == "auto"
    assert definition_from_function(read, source="builtin", policy="ask").policy == "ask"


def test_every_built_in_data_tool_states_its_policy() -> None:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    try:
        tools = make_context_tools(InteractiveShell.instance(config=config))
    finally:
        InteractiveShell.clear_instance()
    assert tools and all("policy" in t.model_fields_set for t in tools)
    policies = {t.name: t.policy for t in tools}
    assert policies["run_code"] == "ask" and policies["list_variables"] == "auto"
