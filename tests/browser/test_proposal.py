"""A cell the agent inserts is marked as an unrun proposal in JupyterLab.

JupyterLab + headless Debian Chromium + the fake LLM: a background `%%agent` turn calls
`insert_cell`; the new cell below the asking one starts with the proposal comment, is not
run, and, once the user saves, the notebook file holds it with the tag `agentik-proposal`
and the metadata `{"agentik": {"proposal": true}}` (set by the extension, labextension/src/cells.ts).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import nbformat
import pytest

from tests.browser.test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import run_cell  # noqa: E402  (Shift+Enter, again if the kernel was not ready)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

from agentik_jupyter.notebook.cells import PROPOSAL_LINE  # noqa: E402
from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "proposal_demo.ipynb"
CELL_LOAD, CELL_ASK = range(2)
CELL_WAIT = 3  # after the first test's proposed cell
SOURCES = [
    "%load_ext agentik_jupyter",
    "%%agent\nPropose a cell that doubles x.",
    "%%agent --wait\nPropose a cell that triples x.",
]
CODE = "x = 21\nprint('DOUBLE', x * 2)"
WAIT_CODE = "x = 14\nprint('TRIPLE', x * 3)"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact="jupyterlab-proposal", url_path=f"/lab/tree/{NOTEBOOK}"
    ) as lab:
        yield lab


def saved_proposal(lab: Lab, code: str = CODE) -> Any:
    """The proposed cell as the saved notebook holds it, or None before the save lands."""
    try:
        nb = nbformat.read(lab.server.root / NOTEBOOK, as_version=4)
    except Exception:
        return None
    found = [c for c in nb.cells if code in c.source]
    return found[0] if found else None


def test_an_inserted_cell_is_marked_as_an_unrun_proposal(lab: Lab) -> None:
    run_cell(lab, CELL_LOAD)
    lab.srv.push(
        Reply.tool_calls([{"name": "insert_cell", "args": {"source": CODE}}]),
        Reply.text("Review the cell below. END-PROPOSE"),
    )
    run_cell(lab, CELL_ASK)
    lab.wait(lambda: "END-PROPOSE" in lab.text(lab.output(CELL_ASK)), 60, "the proposing turn to end")
    proposed = lab.cell(CELL_ASK + 1)
    editor = proposed.locator(".jp-InputArea-editor .cm-content")
    lab.wait(lambda: lab.text(editor) == f"{PROPOSAL_LINE}\n{CODE}", 10, "the marked proposal below the asking cell")
    prompt = lab.text(proposed.locator(".jp-InputArea-prompt")).strip()
    assert not re.search(r"\d", prompt), f"the proposed cell was run: {prompt!r}"
    lab.shot("proposal_cell.png", at=proposed)

    proposed.locator(".jp-InputArea-prompt").click()
    lab.page.keyboard.press("Control+s")
    cell = lab.wait(lambda: saved_proposal(lab), 20, "the saved notebook to hold the proposed cell")
    assert cell.source == f"{PROPOSAL_LINE}\n{CODE}"
    assert cell.metadata.get("agentik") == {"proposal": True}
    assert "agentik-proposal" in cell.metadata.get("tags", [])
    assert cell.execution_count is None and cell.outputs == []
    assert "DOUBLE 42" not in lab.text(lab.page.locator(".jp-Notebook"))  # what running it would print


def test_a_wait_turns_inserted_cell_is_marked_too(lab: Lab) -> None:
    """`%%agent --wait`: the cell the turn proposes carries the same marks (not a bare payload cell)."""
    lab.srv.push(
        Reply.tool_calls([{"name": "insert_cell", "args": {"source": WAIT_CODE}}]),
        Reply.text("Review the cell below. END-WAIT"),
    )
    run_cell(lab, CELL_WAIT)
    lab.wait(lambda: "END-WAIT" in lab.text(lab.output(CELL_WAIT)), 60, "the --wait turn to end")
    proposed = lab.cell(CELL_WAIT + 1)
    editor = proposed.locator(".jp-InputArea-editor .cm-content")
    lab.wait(
        lambda: lab.text(editor) == f"{PROPOSAL_LINE}\n{WAIT_CODE}", 10, "the marked proposal below the --wait cell"
    )
    assert "TRIPLE 42" not in lab.text(lab.page.locator(".jp-Notebook"))  # not run
    proposed.locator(".jp-InputArea-prompt").click()
    lab.page.keyboard.press("Control+s")
    cell = lab.wait(lambda: saved_proposal(lab, WAIT_CODE), 20, "the saved notebook to hold the --wait proposal")
    assert cell.metadata.get("agentik") == {"proposal": True}
    assert "agentik-proposal" in cell.metadata.get("tags", [])
    nb = nbformat.read(lab.server.root / NOTEBOOK, as_version=4)
    assert sum(WAIT_CODE in c.source for c in nb.cells) == 1  # once
