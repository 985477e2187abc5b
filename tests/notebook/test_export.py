"""`%agent export`: the code the agent ran becomes a notebook that runs without the agent."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import KERNEL, NotebookKernel, RawKernel, kernel_env, output_text
from tests.notebook.test_edits import finish, next_request, reply

pytestmark = pytest.mark.timeout(180)

Q_COMPUTE = "Compute the answer and keep it in a variable."
Q_BROKEN = "Now try something that fails."


def run_without_the_agent(nb: nbformat.NotebookNode, folder: Path) -> None:
    """Run an exported notebook top to bottom in a fresh kernel with no agent settings, as a reader would."""
    client = NotebookClient(nb, timeout=60, kernel_name=KERNEL, resources={"metadata": {"path": str(folder)}})
    client.execute(env=kernel_env(), cwd=str(folder))


def test_export_writes_the_successful_runs_in_order_and_the_export_runs(tmp_path: Path) -> None:
    notebook = tmp_path / "analysis.ipynb"
    notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    original = notebook.read_bytes()
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": "answer = 21 * 2"}}]),
            Reply.tool_calls([{"name": "run_code", "args": {"code": "print(f'answer is {answer}')"}}]),
            Reply.text("answer is 42."),
            Reply.tool_calls([{"name": "run_code", "args": {"code": "1 / 0"}}]),
            Reply.text("That failed with ZeroDivisionError."),
        )
        env = kernel_env(llm, JPY_SESSION_NAME=str(notebook), AGENTIK_APPROVE="auto")
        kernel = NotebookKernel(env, tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(f"%%agent --wait\n{Q_COMPUTE}")
            kernel.run(f"%%agent --wait\n{Q_BROKEN}")
            said = kernel.text("%agent export")
            again = kernel.text("%agent export")
        finally:
            kernel.close()
    exported = tmp_path / "analysis.agentik-export.ipynb"
    assert "exported 2 code cell(s)" in said and str(exported) in said
    assert "left out 1 denied or failed run(s)" in said
    assert "analysis.agentik-export-2.ipynb" in again  # a second export never overwrites the first
    assert notebook.read_bytes() == original  # the user's notebook is never written

    nb = nbformat.read(exported, as_version=4)
    nbformat.validate(nb)
    kinds = [(c.cell_type, c.source) for c in nb.cells]
    assert kinds[1] == ("markdown", f"> {Q_COMPUTE}")
    assert [s for t, s in kinds if t == "code"] == ["answer = 21 * 2", "print(f'answer is {answer}')"]
    assert Q_BROKEN not in json.dumps(kinds) and "1 / 0" not in json.dumps(kinds)

    run_without_the_agent(nb, tmp_path)
    assert "answer is 42" in output_text(nb.cells[-1].outputs)


def test_export_with_nothing_run_says_so(tmp_path: Path) -> None:
    notebook = tmp_path / "empty.ipynb"
    with FakeLLMServer() as llm:
        llm.push(Reply.text("Hello."))
        kernel = NotebookKernel(kernel_env(llm, JPY_SESSION_NAME=str(notebook)), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            before = kernel.text("%agent export")
            kernel.run("%%agent --wait\nHi")
            after = kernel.text("%agent export")
        finally:
            kernel.close()
    assert "no saved session to export yet" in before
    assert "has no code, accepted edit or proposed cell to export" in after
    assert not list(tmp_path.glob("*.agentik-export*.ipynb"))


LIVE = [
    {"id": "c-load", "cell_type": "code", "source": "price = 3", "outputs": []},
    {"id": "c-total", "cell_type": "code", "source": "total = price * 2", "outputs": []},
]


def test_export_keeps_accepted_edits_and_inserted_cells_in_order_and_leaves_rejected_edits_out(tmp_path: Path) -> None:
    notebook = tmp_path / "edited.ipynb"
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": "rate = 2"}}]),
            Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
            Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": "c-load", "new_source": "price = 21"}}]),
            Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": "c-total", "new_source": "total = 0"}}]),
            Reply.tool_calls([{"name": "insert_cell", "args": {"source": "print('TOTAL', price * rate)"}}]),
            Reply.text("Done."),
        )
        k = RawKernel(kernel_env(llm, JPY_SESSION_NAME=str(notebook), AGENTIK_APPROVE="auto"), tmp_path)
        try:
            assert k.execute("%load_ext agentik_jupyter").ok
            assert k.execute("%%agent\nDouble the price and show the total.").ok
            reply(k, next_request(k, 0), phase="result", status="ok", path=str(notebook), cells=LIVE)
            accepted = next_request(k, 1)
            reply(k, accepted, phase="shown")
            reply(k, accepted, phase="result", status="accepted")
            rejected = next_request(k, 2)
            reply(k, rejected, phase="shown")
            reply(k, rejected, phase="result", status="rejected")
            insert = next_request(k, 3)
            assert insert["data"]["action"] == "insert_cell"
            reply(k, insert, phase="result", status="ok", cell_id="c-new")
            finish(k, llm, 6)
            said = k.text("%agent export")
        finally:
            k.close()
    exported = tmp_path / "edited.agentik-export.ipynb"
    assert "exported 3 code cell(s)" in said, said
    nb = nbformat.read(exported, as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code == [
        "rate = 2",
        "# cell c-load, as edited by the agent (accepted)\nprice = 21",
        # the inserted cell never ran in the kernel: it is exported commented out (tests/notebook/test_insert_proposal.py)
        "# proposed by the agent (insert_cell), never run in this kernel: uncomment to use it\n"
        "# print('TOTAL', price * rate)",
    ]
    assert "total = 0" not in json.dumps(nb)  # the rejected edit
    run_without_the_agent(nb, tmp_path)
    assert output_text(nb.cells[-1].outputs) == ""  # the proposal does not run in the export


def test_export_leaves_out_rewound_turns_and_says_how_many(tmp_path: Path) -> None:
    notebook = tmp_path / "undone.ipynb"
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": "sales = list(range(10))"}}]),
            Reply.text("Made sales."),
            Reply.tool_calls([{"name": "run_code", "args": {"code": "sales = sales[:3]"}}]),
            Reply.text("Kept the first three."),
            Reply.tool_calls([{"name": "run_code", "args": {"code": "total = sum(sales)"}}]),
            Reply.text("Summed them."),
        )
        env = kernel_env(llm, JPY_SESSION_NAME=str(notebook), AGENTIK_APPROVE="auto")
        kernel = NotebookKernel(env, tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run("%%agent --wait\nMake sales.")
            kernel.run("%%agent --wait\nKeep only the first three sales.")
            assert "Rewound turn 2" in kernel.text("%agent rewind 2")
            kernel.run("%%agent --wait\nSum the sales.")
            said = kernel.text("%agent export")
        finally:
            kernel.close()
    assert "exported 2 code cell(s)" in said and "left out 1 rewound turn(s)" in said, said
    nb = nbformat.read(tmp_path / "undone.agentik-export.ipynb", as_version=4)
    sources = [c.source for c in nb.cells]
    assert [c.source for c in nb.cells if c.cell_type == "code"] == ["sales = list(range(10))", "total = sum(sales)"]
    assert "sales[:3]" not in json.dumps(sources) and "Keep only the first three" not in json.dumps(sources)
    assert "Left out: 1 rewound turn(s)" in nb.cells[0].source


def test_an_exported_fix_turn_is_headed_by_its_one_line_question(tmp_path: Path) -> None:
    notebook = tmp_path / "fixed.ipynb"
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": "rate = 2"}}]),
            Reply.text("Defined rate."),
        )
        env = kernel_env(llm, JPY_SESSION_NAME=str(notebook), AGENTIK_APPROVE="auto", AGENTIK_WAIT="1")
        kernel = NotebookKernel(env, tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.client.allow_errors = True  # the failing cell is the point of this test
            kernel.run("total = 3 * rate", allow_error=True)
            kernel.run("%agent fix")
            said = kernel.text("%agent export")
        finally:
            kernel.close()
    assert "exported 1 code cell(s)" in said, said
    nb = nbformat.read(tmp_path / "fixed.agentik-export.ipynb", as_version=4)
    heading = nb.cells[1]
    assert heading.cell_type == "markdown"
    assert heading.source == "> Fix the failed cell [2]: NameError: name 'rate' is not defined", heading.source
    assert "Attached by" not in json.dumps([c.source for c in nb.cells])
    assert nb.cells[2].source == "rate = 2"
