"""The modes' rules: the names, the tools each mode offers, and Auto's "can Rewind take it all back?"."""

from __future__ import annotations

import numpy as np
import pytest

from agentik_jupyter.errors import OptionsError
from agentik_jupyter.tools.checkpoint import Checkpoints
from agentik_jupyter.tools.modes import offered, parse_mode, rewind_blockers
from agentik_jupyter.types import ToolCall, ToolDefinition


def tool(name: str, source: str = "builtin", read_only: bool = False) -> ToolDefinition:
    return ToolDefinition(name=name, execute=lambda: None, source=source, read_only=read_only)


TOOLS = [
    tool("list_variables"),
    tool("read_notebook"),
    tool("run_code"),
    tool("edit_cell"),
    tool("insert_cell"),
    tool("propose_plan"),
    tool("plan_step"),
    tool("db__query", "mcp", read_only=True),
    tool("db__drop", "mcp"),
    tool("region_share", "user"),
]


@pytest.mark.parametrize(
    ("mode", "running", "names"),
    [
        ("ask", False, ["list_variables", "read_notebook", "db__query"]),
        ("plan", False, ["list_variables", "read_notebook", "propose_plan", "db__query"]),
        (
            "agent",
            False,
            [
                "list_variables",
                "read_notebook",
                "run_code",
                "edit_cell",
                "insert_cell",
                "db__query",
                "db__drop",
                "region_share",
            ],
        ),
        (
            "auto",
            True,
            [
                "list_variables",
                "read_notebook",
                "run_code",
                "edit_cell",
                "insert_cell",
                "plan_step",
                "db__query",
                "db__drop",
                "region_share",
            ],
        ),
    ],
)
def test_each_mode_offers_its_tools(mode: str, running: bool, names: list[str]) -> None:
    assert [d.name for d in offered(TOOLS, parse_mode(mode), running)] == names


def test_an_unknown_name_is_one_line_listing_the_four() -> None:
    with pytest.raises(OptionsError) as info:
        parse_mode("yolo")
    assert str(info.value) == "unknown mode 'yolo': use ask, agent, auto or plan"
    assert parse_mode(" AUTO ") == "auto"


def test_auto_runs_what_rewind_takes_back_and_names_what_it_cannot() -> None:

    checkpoints = Checkpoints({"df": [1, 2], "big": np.zeros(10)})

    def notes(call: ToolCall) -> list[str]:
        return checkpoints.cannot_undo(str(call.args["code"]))

    def blockers(code: str) -> list[str]:
        return rewind_blockers(ToolCall(id="c", name="run_code", args={"code": code}), tool("run_code"), notes)

    assert blockers("df.append(3)\nnew = 41") == []
    assert blockers("open('sales.csv', 'w').write('x')") == ["writes to sales.csv"]
    assert blockers("import requests\nrequests.get('https://example.com')") == ["uses the network (requests.get(…))"]
    mcp = rewind_blockers(ToolCall(id="m", name="db__drop", args={}), tool("db__drop", "mcp"), notes)
    assert mcp == ["calls the MCP tool db__drop, which acts outside the kernel"]
    unread = rewind_blockers(ToolCall(id="r", name="run_code", args={"code": 1}), tool("run_code"), notes)
    assert unread == ["its code could not be read before it runs"]
