"""`%agent tools` as a table: the same rows as the aligned text, every name and description escaped
(MCP servers and user tools choose them), and the aligned text kept as the output's text/plain."""

from __future__ import annotations

from agentik_jupyter.kernel.tools_table import ToolsListing, tools_html
from agentik_jupyter.tools.approval import describe_tools, format_tools
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import ToolDefinition


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.add(
        ToolDefinition(
            name="list_variables", description="List the user's variables.", execute=lambda: "", source="builtin"
        )
    )
    tools.add(
        ToolDefinition(
            name="evil", description='<img src=x onerror="alert(1)"> & more', execute=lambda: "", source="mcp"
        )
    )
    return tools


def test_the_table_has_the_rows_of_the_text_listing_and_escapes_them() -> None:
    html = tools_html(registry())
    assert html.count("<tr>") == 1 + 2 * len(describe_tools(registry()))  # the header; a tool's row and its description
    assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; more" in html
    assert "<code>list_variables</code>" in html and "word-break:normal" in html


def test_the_output_keeps_the_aligned_text_beside_the_table() -> None:
    bundle = ToolsListing(registry())._repr_mimebundle_()
    assert bundle["text/plain"] == format_tools(registry())
    assert bundle["text/html"].startswith('<table class="agentik-tools"')
    assert tools_html(ToolRegistry()) == "<p>No tools are registered.</p>"
