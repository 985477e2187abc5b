"""`%agent fix`: the turn starts from the failed cell's source, its traceback and the variables it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentik_jupyter.notebook.document import Cell
from agentik_jupyter.notebook.fix import failure_from_cell, fix_prompt
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import NotebookKernel, kernel_env, transcript, user_texts

pytestmark = pytest.mark.timeout(120)

FAILING = "total = sales['units'].sum() * rate"


def test_fix_turn_carries_the_cell_the_traceback_and_the_variables(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        llm.push(Reply.text("`rate` is never defined: define it before this cell. END-FIX"))
        kernel = NotebookKernel(kernel_env(llm, AGENTIK_WAIT="1"), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            nothing = kernel.text("%agent fix")
            kernel.run("import pandas as pd\nsales = pd.DataFrame({'units': [1, 2, 3]})\ndef helper(): return 1")
            kernel.client.allow_errors = True  # the failing cell is the point of this test
            kernel.run(FAILING, allow_error=True)
            fixed = kernel.run("%agent fix")
        finally:
            kernel.close()
        (request,) = llm.requests
    assert "no cell has failed since the extension was loaded" in nothing
    (question,) = user_texts(request)
    # the user's bubble shows one line; the model gets the details attached to it
    shown = "Fix the failed cell [4]: NameError: name 'rate' is not defined"
    assert question.startswith(shown + "\n\nAttached by %agent fix")
    assert transcript(fixed.outputs)["application/vnd.agentik.transcript+json"]["entries"][0]["content"] == shown
    # nbclient does not say which cell runs (JupyterLab does: see the browser test)
    assert "Fix the error in the cell (In [4]): NameError" in question
    assert "NameError: name 'rate' is not defined" in question
    assert f"```python\n{FAILING}\n```" in question
    assert "Traceback (most recent call last)" in question and "interactiveshell.py" not in question
    assert "- sales: pandas.DataFrame (3, 1)" in question and "helper" not in question
    assert "propose the corrected code with insert_cell" in question
    assert "END-FIX" in transcript(fixed.outputs)["text/plain"]


def test_an_older_error_is_read_from_the_notebook_cell() -> None:
    cell = Cell(
        id="c9",
        cell_type="code",
        source="1/0",
        execution_count=4,
        outputs=[
            {
                "output_type": "error",
                "ename": "ZeroDivisionError",
                "evalue": "division by zero",
                "traceback": ["\x1b[31mZeroDivisionError\x1b[0m: division by zero"],
            }
        ],
    )
    failure = failure_from_cell(cell)
    assert failure is not None and failure.traceback == "ZeroDivisionError: division by zero"
    prompt = fix_prompt(failure, {})
    assert prompt.startswith("Fix the error in cell c9 (In [4]): ZeroDivisionError: division by zero")
    assert failure_from_cell(Cell(id="ok", cell_type="code", source="1")) is None
