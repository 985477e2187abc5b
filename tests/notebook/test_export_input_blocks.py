"""Which proposed cells `%agent export` counts as run: the kernel's inputs are split once per export
(InputBlocks) and every proposal is looked up in them by the same rule `ran_in` states."""

from __future__ import annotations

from agentik_jupyter.notebook.cells import PROPOSAL_LINE
from agentik_jupyter.notebook.export import InputBlocks, build_export, ran_in
from agentik_jupyter.persistence import AuditEntry
from agentik_jupyter.types import AssistantMessage, ToolCall, ToolResult, ToolResultRecord, UserMessage

INPUTS = [
    "import pandas as pd\ndf = pd.DataFrame({'a': [1]})\nprint(df)\n",
    "x = 1\ny = 2\nx = 1\ny = 3   \nz = x + y\n",  # `x = 1` twice: the second starts the match
    "%%agent\nplease run:\nq = 42\nprint(q)",  # a question quoting code is not running it
    "first = 1\n",
    "second = 2\n",
]


def test_the_rule_for_a_run_proposal() -> None:
    blocks = InputBlocks([*INPUTS, None])  # type: ignore[list-item]
    assert blocks.ran("df = pd.DataFrame({'a': [1]})\nprint(df)")  # a block of one input
    assert blocks.ran(f"{PROPOSAL_LINE}\n\nx = 1\ny = 3\nz = x + y\n\n")  # header, blank ends, spaces aside
    assert not blocks.ran("q = 42\nprint(q)")  # only inside an %%agent question
    assert not blocks.ran("first = 1\nsecond = 2")  # lines of two inputs are not one block
    assert not blocks.ran("print(df)\ndf = pd.DataFrame({'a': [1]})")  # out of order
    assert not blocks.ran("df = pd.DataFrame({'a': [2]})")  # edited after it ran
    assert not blocks.ran(f"{PROPOSAL_LINE}\n\n")  # nothing to compare
    for source in ("x = 1\ny = 3", "q = 42", "second = 2"):
        assert ran_in(source, INPUTS) == blocks.ran(source)


def test_an_export_looks_every_proposal_up_in_one_split() -> None:
    sources = {"c0": "first = 1", "c1": "never = 0", "c2": "x = 1\ny = 3", "c3": "q = 42"}
    calls = [ToolCall(id=i, name="insert_cell", args={"source": s}) for i, s in sources.items()]
    entries = [
        AuditEntry(seq=0, turn_id="t", created_at=0, record=UserMessage(content="cells please")),
        AuditEntry(seq=1, turn_id="t", created_at=0, record=AssistantMessage(content="", tool_calls=calls)),
    ]
    entries += [
        AuditEntry(
            seq=2 + n,
            turn_id="t",
            created_at=0,
            record=ToolResultRecord(
                result=ToolResult(tool_call_id=i, name="insert_cell", result="Proposed a new code cell")
            ),
        )
        for n, i in enumerate(sources)
    ]
    export = build_export(entries, "Cells", INPUTS)
    assert (export.code_cells, export.unrun) == (4, 2)
    code = [c["source"] for c in export.cells if c["cell_type"] == "code"]
    assert [s.startswith("# proposed by the agent (insert_cell), run in this kernel") for s in code] == [
        True,
        False,
        True,
        False,
    ]
