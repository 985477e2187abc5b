"""A cell the agent inserts is an unrun proposal until the user runs it.

The proposed cell says so in its first line (on the no-extension route too: IPython's
set_next_input payload), and `%agent export` writes a proposal the kernel never ran
commented out, so the exported notebook does not run code nobody approved; one the user
did run is exported as code. Real kernel, fake LLM over HTTP, the export run by nbclient.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import KERNEL, RawKernel, kernel_env, output_text

pytestmark = pytest.mark.timeout(180)

RUN_ME = "answer = 6 * 7\nprint('ANSWER', answer)"
NEVER_RUN = "import shutil\nprint('WIPED')\n\nshutil.rmtree('data')"


def _proposed_text(reply: dict[str, object]) -> str:
    payloads = [p for p in reply.get("payload", []) if p.get("source") == "set_next_input"]  # type: ignore[union-attr]
    assert len(payloads) == 1, reply
    return str(payloads[0]["text"])


def test_the_fallback_marks_the_proposal_and_the_export_comments_out_what_never_ran(tmp_path: Path) -> None:
    notebook = tmp_path / "work.ipynb"
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "insert_cell", "args": {"source": RUN_ME}}]),
            Reply.text("Run the cell below."),
            Reply.tool_calls([{"name": "insert_cell", "args": {"source": NEVER_RUN}}]),
            Reply.text("Here is a cleanup cell."),
        )
        k = RawKernel(kernel_env(llm, JPY_SESSION_NAME=str(notebook)), tmp_path)
        try:
            assert k.execute("%load_ext agentik_jupyter").ok
            first = k.execute("%%agent --wait\nCompute the answer.")
            assert first.ok, first.text
            proposed = _proposed_text(first.reply)
            head, _, body = proposed.partition("\n")
            assert head.startswith("#") and "proposed by the agent" in head.lower() and "not run" in head.lower()
            assert body == RUN_ME
            ran = k.execute(proposed)  # the user runs the proposed cell as it was inserted
            assert ran.ok and "ANSWER 42" in ran.text
            second = k.execute("%%agent --wait\nClean up the data folder.")
            assert second.ok and _proposed_text(second.reply).endswith(NEVER_RUN)
            said = k.text("%agent export")
        finally:
            k.close()
    exported = tmp_path / "work.agentik-export.ipynb"
    assert "exported 2 code cell(s)" in said, said
    assert "1 proposed cell(s) never run here are commented out" in said, said
    nb = nbformat.read(exported, as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert len(code) == 2
    assert code[0].endswith(RUN_ME) and code[0].splitlines()[0].startswith("# proposed by the agent")
    header, *lines = code[1].splitlines()
    assert "never run" in header and "uncomment" in header
    assert lines and all(line.startswith("#") for line in lines), code[1]
    assert "\n".join(line[2:] for line in lines) == NEVER_RUN
    assert "WIPED" not in json.dumps([c.source for c in nb.cells if c.cell_type == "markdown"])

    (tmp_path / "data").mkdir()
    client = NotebookClient(nb, timeout=60, kernel_name=KERNEL, resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env=kernel_env(), cwd=str(tmp_path))
    shown = "\n".join(output_text(c.outputs) for c in nb.cells if c.cell_type == "code")
    assert "ANSWER 42" in shown and "WIPED" not in shown
    assert (tmp_path / "data").is_dir()  # the unrun proposal did not run in the export either
