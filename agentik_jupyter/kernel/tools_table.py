"""`%agent tools` as a table that wraps between words.

Printed, the aligned listing is stream output, which JupyterLab wraps anywhere (`break-all`):
in a narrow window "description" became "desc / ription". Displayed as a bundle, frontends that
render HTML show a table whose descriptions wrap at spaces (names never wrap); the aligned text stays
the `text/plain` of the same output, for terminals, logs and runners. Every name and description
is escaped: MCP servers and user `@tool`s choose them.
"""

from __future__ import annotations

from html import escape
from typing import Any

from agentik_jupyter.tools.approval import ApprovalGate, ToolInfo, describe_tools, format_tools
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import AgentMode

TABLE_STYLE = "border-collapse:collapse;table-layout:auto;margin:0;text-align:left"
CELL_STYLE = (
    "text-align:left;vertical-align:top;padding:1px 12px 1px 0;white-space:normal;"
    "overflow-wrap:normal;word-break:normal"
)
NAME_STYLE = CELL_STYLE.replace("white-space:normal", "white-space:nowrap")
DESCRIPTION_STYLE = (
    CELL_STYLE.replace("padding:1px 12px 1px 0", "padding:0 0 4px 1.5em") + ";color:var(--jp-ui-font-color2, #616161)"
)


def _row(info: ToolInfo) -> str:
    """The tool's name, policy and source on one row, its description on the row below: the table
    is never wider than a name and a policy, so a narrow window wraps it between words."""
    return (
        f'<tr><td style="{NAME_STYLE}"><code>{escape(info.name)}</code></td>'
        f'<td style="{CELL_STYLE}">{escape(info.policy)}</td><td style="{NAME_STYLE}">{escape(info.source)}</td></tr>'
        f'<tr><td colspan="3" style="{DESCRIPTION_STYLE}">{escape(info.description)}</td></tr>'
    )


def tools_html(registry: ToolRegistry, gate: ApprovalGate | None = None, mode: AgentMode | None = None) -> str:
    """The listing as an HTML table (the same tools as `format_tools`)."""
    rows = describe_tools(registry, gate, mode)
    if not rows:
        return "<p>No tools are registered.</p>"
    head = "".join(f'<th style="{NAME_STYLE}">{name}</th>' for name in ("tool", "policy", "source"))
    body = "".join(_row(info) for info in rows)
    return (
        f'<table class="agentik-tools" style="{TABLE_STYLE}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


class ToolsListing:
    """What `%agent tools` displays: the table, and the aligned text beside it."""

    def __init__(self, registry: ToolRegistry, gate: ApprovalGate | None = None, mode: AgentMode | None = None) -> None:
        self.registry = registry
        self.gate = gate
        self.mode = mode  # only the tools this mode offers (None: every tool)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {
            "text/plain": format_tools(self.registry, self.gate, self.mode),
            "text/html": tools_html(self.registry, self.gate, self.mode),
        }


def show_tools(registry: ToolRegistry, gate: ApprovalGate | None = None, mode: AgentMode | None = None) -> None:
    """Display the listing in the running cell."""
    from IPython.display import display

    display(ToolsListing(registry, gate, mode))
