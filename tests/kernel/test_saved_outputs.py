"""What a notebook run by nbclient (jupyter execute, papermill, nbval's reference) saves of its turns.

Where widgets don't render (an untrusted notebook, GitHub, nbviewer) a cell's outputs read as
text: a `--wait` cell shows its transcript and nothing above it, and a background turn stopped by
`%agent stop` in the next cell is saved as what it said and that it was stopped, not as its
live view's placeholder.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import NotebookKernel, kernel_env, output_text, transcripts

pytestmark = pytest.mark.timeout(180)

LONG = " ".join(f"word{i}" for i in range(400))


def texts(cell: nbformat.NotebookNode) -> list[str]:
    """The text/plain of each output that has one (what a viewer without widgets shows)."""
    return [str(o["data"]["text/plain"]) for o in cell.outputs if "text/plain" in o.get("data", {})]


def test_saved_turns_read_as_what_they_said(tmp_path: Path) -> None:
    with FakeLLMServer(pace=40) as llm:
        llm.push(Reply.text("Hello there."), Reply.text(LONG))
        nk = NotebookKernel(kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "s.agentik.db")), tmp_path)
        try:
            nk.run("%load_ext agentik_jupyter")
            asked = nk.run("%%agent --wait\nSay hello.")
            background = nk.run("%%agent --no-wait\nWrite a long essay.")
            nk.run("import asyncio\n\nawait asyncio.sleep(1.0)\n%agent stop")
            saved = nbformat.reads(nk.saved(), as_version=4)
        finally:
            nk.close()
    # a --wait cell: its transcript, with no line of text above it
    assert texts(asked) == [texts(asked)[-1]] and texts(asked)[0].startswith("You: Say hello.")
    assert "Agent turn" not in output_text(asked.outputs)
    # the stopped background cell, as saved: its transcript, what it said before the Stop, and that it stopped
    stopped = saved.cells[2]
    assert stopped.source.startswith("%%agent --no-wait")
    (bundle,) = transcripts(stopped.outputs)
    shown = output_text(stopped.outputs)
    assert "live view" not in shown and "word0 word1" in shown and "Stopped" in shown, shown
    assert bundle["application/vnd.agentik.transcript+json"]["status"] == "interrupted"
    assert background is not None
