"""The agent on the notebook itself, in JupyterLab + headless Debian Chromium + the fake LLM.

1. the agent reads an edit the user typed but did not save (the live document);
2. an `edit_cell` proposal appears on the cell as a diff; Reject leaves the cell as it was
   and the model is told;
3. "Accept and run" changes the cell and runs it, and the model sees the new outputs; the later
   cells that use what it defines are offered for a re-run (an approval card): Deny keeps them
   as they are and the model is told;
4. "Fix with agent" on a cell that raised NameError: the fix turn shows under that cell (no cell
   is added to the notebook), the agent proposes an edit, Accept and run fixes the cell, the cell after it that uses its result
   is re-run once the user approves, and the agent reports what both showed.

One JupyterLab, kernel and page for the module; steps run in file order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import (  # noqa: E402  (skips the module when chromium is missing)
    Lab,
    notebook_page,
    run_cell,
    tool_messages,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "edits_demo.ipynb"
CELL_LOAD, CELL_DATA, CELL_ASK, CELL_BROKEN, CELL_DEPENDENT = range(5)
SOURCES = [
    "%load_ext agentik_jupyter",
    "total = 1 + 1",
    "%%agent\nLook at my notebook and fix it.",
    "scaled = total * factor",
    "print('DOUBLE', scaled * 2)",
]
BROKEN_FIX = "factor = 10\nscaled = total * factor\nprint('SCALED', scaled)"
UNSAVED = "total = price * 2  # typed, not saved"
FIXED = "price = 21\ntotal = price * 2\nprint('TOTAL', total)"
PROPOSAL = ".agentik-proposal"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact="jupyterlab-notebook", url_path=f"/lab/tree/{NOTEBOOK}"
    ) as lab:
        yield lab


def source(lab: Lab, index: int) -> str:
    return str(
        lab.page.evaluate(
            "i => document.querySelectorAll('.jp-Notebook .jp-Cell')[i].querySelector('.cm-content').innerText", index
        )
    )


def ask(lab: Lab, *replies: Reply) -> None:
    lab.srv.push(*replies)
    run_cell(lab, CELL_ASK)


def proposal(lab: Lab) -> Any:
    return lab.cell(CELL_DATA).locator(PROPOSAL)


def read_then_edit(target_id: str, answer: str) -> list[Reply]:
    return [
        Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
        Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": target_id, "new_source": FIXED}}]),
        Reply.text(answer),
    ]


def live_cell_ids(lab: Lab) -> list[str]:
    """The cells' ids as the notebook model holds them (the ids read_notebook reports)."""
    text = " ".join(m["content"] for m in tool_messages(lab))
    return re.findall(r"id=(\S+) code", text)


def test_1_reads_the_unsaved_edit_and_reject_changes_nothing(lab: Lab) -> None:
    run_cell(lab, CELL_LOAD)
    editor = lab.cell(CELL_DATA).locator(".cm-content")
    editor.click()
    lab.page.keyboard.press("Control+A")
    lab.page.keyboard.type(UNSAVED)
    lab.page.keyboard.press("Escape")
    # First turn: read the notebook, to learn the cells' ids; the model then answers.
    ask(lab, Reply.tool_calls([{"name": "read_notebook", "args": {}}]), Reply.text("I read it. END-READ"))
    lab.wait(lambda: "END-READ" in lab.text(lab.output(CELL_ASK)), 30, "the reading turn to end")
    sent = tool_messages(lab)[-1]["content"]
    assert "live document in the editor (includes unsaved edits)" in sent and UNSAVED in sent
    ids = live_cell_ids(lab)
    assert len(ids) == len(SOURCES)
    lab.page.evaluate("id => window.__agentik_target = id", ids[CELL_DATA])
    # Second turn: propose an edit to that cell; the diff appears on it; Reject.
    ask(lab, *read_then_edit(ids[CELL_DATA], "Left as it is. END-REJECT"))
    lab.wait(lambda: proposal(lab).count() == 1 and proposal(lab).is_visible(), 30, "the diff on the cell")
    diff = lab.text(proposal(lab))
    assert "- " + UNSAVED in diff and "+ price = 21" in diff
    assert source(lab, CELL_DATA) == UNSAVED  # nothing changes before Accept
    lab.shot("edit_proposal.png", at=proposal(lab))
    proposal(lab).get_by_role("button", name="Reject").click()
    lab.wait(lambda: "END-REJECT" in lab.text(lab.output(CELL_ASK)), 30, "the answer after Reject")
    assert proposal(lab).count() == 0 and source(lab, CELL_DATA) == UNSAVED
    assert "rejected the edit" in tool_messages(lab)[-1]["content"]


def test_2_accept_changes_the_cell_without_running_it(lab: Lab) -> None:
    target = str(lab.page.evaluate("() => window.__agentik_target"))
    prompt_before = lab.text(lab.cell(CELL_DATA).locator(".jp-InputArea-prompt"))
    ask(
        lab,
        Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
        Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": target, "new_source": "total = 2"}}]),
        Reply.text("Changed. END-PLAIN"),
    )
    lab.wait(lambda: proposal(lab).count() == 1, 30, "the diff on the cell")
    proposal(lab).get_by_role("button", name="Accept", exact=True).click()
    lab.wait(lambda: "END-PLAIN" in lab.text(lab.output(CELL_ASK)), 30, "the answer after Accept")
    assert source(lab, CELL_DATA) == "total = 2"
    assert lab.text(lab.cell(CELL_DATA).locator(".jp-InputArea-prompt")) == prompt_before  # not run
    assert "now holds the new source (not run)" in tool_messages(lab)[-1]["content"]


def test_2b_accept_and_run_changes_the_cell_and_runs_it(lab: Lab) -> None:
    target = str(lab.page.evaluate("() => window.__agentik_target"))
    ask(lab, *read_then_edit(target, "Fixed and verified. END-ACCEPT"))
    lab.wait(lambda: proposal(lab).count() == 1, 30, "the diff on the cell")
    proposal(lab).get_by_role("button", name="Accept and run").click()
    # the cells after it that use `total` (directly, or through `scaled`) are offered for a re-run
    deny = lab.output(CELL_ASK).get_by_role("button", name="Deny")
    deny.wait_for(timeout=30_000)
    deny.click()
    lab.wait(lambda: "END-ACCEPT" in lab.text(lab.output(CELL_ASK)), 30, "the answer after Accept and run")
    assert source(lab, CELL_DATA) == FIXED
    lab.wait(lambda: "TOTAL 42" in lab.text(lab.output(CELL_DATA)), 20, "the fixed cell's output")
    assert "it ran without an error" in tool_messages(lab)[-1]["content"]
    assert "TOTAL 42" in tool_messages(lab)[-1]["content"]  # the agent sees what the run printed
    told = tool_messages(lab)[-1]["content"]
    ids = live_cell_ids(lab)  # as this turn's read_notebook reported them
    assert f"(total): {ids[CELL_BROKEN]}, {ids[CELL_DEPENDENT]}." in told
    assert "did not approve re-running them" in told
    assert "NameError" not in lab.text(lab.output(CELL_BROKEN))  # not run
    assert not [line for line in lab.console if line.startswith("pageerror")], lab.console


def fix_responder(request: Any) -> Reply:
    """The model of a fix turn: read the failed cell, propose the fix, report what the run showed."""
    last = request.messages[-1]
    if last.get("role") == "user":
        cell = re.search(r"Fix the error in cell (\S+) ", last["content"])
        assert cell, last["content"][:200]
        return Reply.tool_calls([{"name": "read_notebook", "args": {"cell_id": cell.group(1)}}])
    if "In [" in last.get("content", "") and "id=" in last.get("content", ""):
        cell_id = re.search(r"id=(\S+) code", last["content"]).group(1)  # type: ignore[union-attr]
        return Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": cell_id, "new_source": BROKEN_FIX}}])
    told = last.get("content", "")
    verified = "it ran without an error" in told and "SCALED 420" in told and "DOUBLE 840" in told
    return Reply.text(
        "Defined `factor`; the cell prints SCALED 420 and the next DOUBLE 840. END-FIXED"
        if verified
        else "Not verified."
    )


def test_3_fix_with_agent_fixes_the_failing_cell(lab: Lab) -> None:
    lab.srv.set_responder(fix_responder)
    run_cell(lab, CELL_BROKEN)
    broken = lab.cell(CELL_BROKEN)
    lab.wait(lambda: "NameError" in lab.text(lab.output(CELL_BROKEN)), 20, "the NameError")
    button = broken.get_by_role("button", name="Fix with agent")
    button.wait_for(timeout=10_000)
    lab.shot("fix_button.png", at=button)
    cells = lab.page.locator(".jp-Notebook .jp-Cell")
    before = cells.count()
    button.click()
    asking = broken.locator(".agentik-fix-turn")  # the fix turn, under the failed cell, not a cell
    lab.wait(lambda: broken.locator(PROPOSAL).count() == 1, 30, "the proposed fix on the failed cell")
    broken.locator(PROPOSAL).get_by_role("button", name="Accept and run").click()
    approve = asking.get_by_role("button", name="Approve")  # re-run the cell that uses `scaled`
    approve.wait_for(timeout=30_000)
    lab.shot("rerun_approval.png", at=approve)
    approve.click()
    lab.wait(lambda: "END-FIXED" in lab.text(asking), 30, "the verified fix")
    assert cells.count() == before  # no `%agent fix` cell left behind
    assert source(lab, CELL_BROKEN) == BROKEN_FIX
    assert "SCALED 420" in lab.text(lab.output(CELL_BROKEN))
    assert "DOUBLE 840" in lab.text(lab.output(CELL_DEPENDENT))
    assert broken.get_by_role("button", name="Fix with agent").count() == 0  # gone once the cell runs cleanly
    lab.shot("fixed.png", at=asking)
