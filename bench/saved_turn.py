"""What a finished turn adds to the saved notebook, per byte of its answer.

A notebook of two cells (`%load_ext`, a `%%agent --wait` turn) is executed with nbclient and
written with nbformat, widget state included, as `jupyter execute` saves it: once with a
~1 MB Markdown answer and once with a one-word answer. The difference is what the answer
costs the `.ipynb` (the issue's bound: within 2x).
"""

from __future__ import annotations

import tempfile
from typing import Any

import nbformat
from nbclient import NotebookClient

from agentik_jupyter.testing import FakeLLMServer, Reply

from .kernel_client import kernel_environ
from .kernel_turns import make_answer

ANSWER_CHARS = 990_000  # just under the 1,000,000-character answer limit


def saved_size(answer: str) -> int:
    """Bytes of the saved notebook after one turn that answers `answer`."""
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.push(Reply.text(answer, chunks=max(1, len(answer) // 500)))
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext agentik_jupyter"),
            nbformat.v4.new_code_cell("%%agent --wait\nWrite the report."),
        ]
        client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": tmp}})
        client.execute(env=kernel_environ(server.env()), cwd=tmp)
        return len(nbformat.writes(nb).encode())


def saved_turn() -> dict[str, Any]:
    answer = make_answer(ANSWER_CHARS)
    big, small = saved_size(answer), saved_size("ok")
    growth = big - small
    return {
        "bytes_per_answer_byte": round(growth / len(answer.encode()), 3),
        "notebook_growth_bytes": growth,
        "answer_bytes": len(answer.encode()),
        "small_notebook_bytes": small,
    }
