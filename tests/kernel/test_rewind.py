"""`%agent rewind` in a real kernel: the variables an approved run_code changed come back, the names it
created go, and the conversation forgets the turn while the sessions file keeps it with a rewind record.
The fake LLM server over real HTTP; approvals by AGENTIK_APPROVE=auto, or by clicking the real card.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentik_jupyter.persistence import REWOUND_CODE
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.types import ErrorRecord, ToolCallRecord
from tests.kernel.test_subshell import create_subshell, send_on_subshell
from tests.kernel_support import (
    AGENT_EXPR,
    NotebookKernel,
    RawKernel,
    audit,
    kernel_env,
    sql,
    transcript,
    user_texts,
    wait_for,
)
from tests.notebook.test_edits import LIVE_CELLS, finish, next_request, reply, run_turn
from tests.tools.test_default_policy import _button

pytestmark = pytest.mark.timeout(180)

SETUP = """
import numpy as np, pandas as pd
df = pd.DataFrame({"a": [1.0, None, 3.0], "b": [4, 5, 6]})
sales = pd.DataFrame({"units": [10, 20, 30], "price": [1.5, 2.5, 3.5]})
y = 42
df_before, sales_before, df_object, y_object = df.copy(), sales.copy(), df, y
"""
TURN_CODE = (
    "df = df.dropna()\ndf2 = df.head(1)\ndel y\ndf['x'] = 0\nsales.loc[0, 'units'] = -1\nsales.to_csv('sales.csv')"
)


def test_rewind_restores_the_variables_and_the_model_no_longer_sees_the_turn(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with FakeLLMServer() as llm:
        llm.push(Reply.text("First answer."))
        llm.push(Reply.tool_calls([{"name": "run_code", "args": {"code": TURN_CODE}}]), Reply.text("Cleaned."))
        llm.push(Reply.text("Fresh start."))
        kernel = NotebookKernel(kernel_env(llm, AGENTIK_APPROVE="auto", AGENTIK_DB_PATH=str(db)), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(SETUP)
            kernel.run("%%agent --wait\nHello there.")
            turn = kernel.run("%%agent --wait\nClean df and fix the first sale.")
            # no card asked (AGENTIK_APPROVE=auto), so the tool card says what rewind cannot undo
            assert "Rewind can't undo: writes to sales.csv" in transcript(turn.outputs)["text/plain"]
            assert kernel.text("print(sales.loc[0, 'units'], 'y' in dir(), 'df2' in dir())").split() == [
                "-1",
                "False",
                "True",
            ]
            preview = kernel.text("%agent rewind --preview")
            assert "Rewind would take back turn 2" in preview and "names removed: df2" in preview
            assert kernel.text("print(sales.loc[0, 'units'])").strip() == "-1"  # a preview changes nothing

            done = kernel.text("%agent rewind")
            assert "Rewound turn 2 (back to before turn 2)." in done
            # (df_object was the same object as df: it gets the same snapshot back, and stays one object with df)
            assert "names restored: df, df_object, sales, y" in done and "names removed: df2" in done
            assert "turns dropped from the conversation: 2: 'Clean df and fix the first sale.'" in done
            assert "could not restore: writes to sales.csv" in done
            kernel.run(
                "import pandas.testing as pdt\n"
                "pdt.assert_frame_equal(df, df_before)\n"
                "pdt.assert_frame_equal(sales, sales_before)\n"
                "assert y is y_object and df_object is df and 'df2' not in dir()"
            )
            kernel.run("%%agent --wait\nWhat now?")
            again = kernel.text("%agent rewind 5")
        finally:
            kernel.close()
        last = llm.requests[-1]
    assert user_texts(last)[:-1] == ["Hello there."]  # the rewound question is gone
    assert "Clean df" not in str(last.messages) and "Cleaned." not in str(last.messages)
    assert "there is no turn 5" in again
    entries = audit(db)
    assert any(isinstance(e.record, ToolCallRecord) for e in entries)  # the audit log keeps every message
    rewound = [e for e in entries if isinstance(e.record, ErrorRecord) and e.record.code == REWOUND_CODE]
    assert len(rewound) == 1 and "names removed: df2" in rewound[0].record.message
    kept = sql(db, "SELECT count(*) FROM working_memory WHERE turn_id = ?", (rewound[0].turn_id,))
    assert kept == [(0,)]


def test_an_over_budget_change_is_named_on_the_card_and_the_rewind_says_so(tmp_path: Path) -> None:
    code = "big[0] = 1.0\nsmall.append(4)"
    with FakeLLMServer() as llm:
        llm.push(Reply.tool_calls([{"name": "run_code", "args": {"code": code}}]), Reply.text("Changed."))
        env = kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "b.db"), AGENTIK_REWIND_BUDGET="1")
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("import numpy as np\nbig = np.zeros(512 * 1024)\nsmall = [1, 2, 3]")  # big: 4 MB
            assert kernel.execute("%%agent\nChange them.").ok
            approve = _button(kernel, "Approve")
            cards = [
                str(m["content"]["data"].get("state", {}).get("value", ""))
                for m in kernel.iopub
                if m["msg_type"] == "comm_open" and "Rewind can" in str(m["content"]["data"].get("state", {}))
            ]
            assert cards and "changes `big` (4.0 MB) in place, over the rewind budget" in cards[-1]
            assert kernel.value("big[0]") == 0.0  # named before Run: nothing ran yet
            kernel.click(approve)
            s = "__import__('agentik_jupyter').current_session()"
            kernel.wait_until(f"not {s}.busy and small == [1, 2, 3, 4]", timeout=30)
            done = kernel.text("%agent rewind")
            assert kernel.value("small") == [1, 2, 3] and kernel.value("big[0]") == 1.0
        finally:
            kernel.close()
    assert "could not restore: changes `big` (4.0 MB) in place, over the rewind budget" in done


def test_the_panel_rewind_button_previews_asks_and_rewinds(tmp_path: Path) -> None:
    s = f"{AGENT_EXPR}.session"
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": "x = 2\nitems.append(3)"}}]), Reply.text("Done.")
        )
        env = kernel_env(llm, AGENTIK_APPROVE="auto", AGENTIK_DB_PATH=str(tmp_path / "p.db"))
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("x = 1\nitems = [1, 2]")
            assert kernel.execute("%%agent --wait\nChange x.").ok
            assert kernel.value("(x, items)") == [2, [1, 2, 3]]
            assert kernel.execute("%agent panel").ok
            kernel.drain(0.3)
            subshell = create_subshell(kernel)
            click = {"method": "custom", "content": {"event": "click"}}
            send_on_subshell(kernel, subshell, button(kernel, "Rewind"), click)
            wait_for(
                lambda: kernel.drain(0.05) or html_updates(kernel, "Rewind would take back turn 1"), 10, "the preview"
            )
            assert kernel.value("(x, items)") == [2, [1, 2, 3]]  # asked, not done
            send_on_subshell(kernel, subshell, button(kernel, "Rewind now"), click)
            kernel.wait_until("x == 1 and items == [1, 2]", timeout=10)
            wait_for(lambda: kernel.drain(0.05) or html_updates(kernel, "Rewound turn 1"), 10, "the outcome")
            assert kernel.value(f"[m.error for m in {s}.chat_store.messages if m.error][-1]").startswith(
                "Rewound turn 1"
            )  # the transcript shows the turn as rewound
        finally:
            kernel.close()


def html_updates(kernel: RawKernel, text: str) -> bool:
    """Some widget's value was set (opened or updated) to a text containing `text`."""
    return any(
        m["msg_type"] in ("comm_open", "comm_msg")
        and text in str(m["content"]["data"].get("state", {}).get("value", ""))
        for m in kernel.iopub
    )


def button(kernel: RawKernel, description: str) -> str:
    """The comm id of the button whose description is exactly `description`."""
    found = [
        m["content"]["comm_id"]
        for m in kernel.comm_opens("ButtonModel")
        if m["content"]["data"].get("state", {}).get("description") == description
    ]
    assert found, f"no {description!r} button"
    return str(found[-1])


def test_accept_and_run_of_a_cell_edit_is_checkpointed_too(tmp_path: Path) -> None:
    new_source = "price = 3\nitems.append(9)"
    with FakeLLMServer() as llm:
        env = kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "e.db"), AGENTIK_APPROVAL_TIMEOUT="20")
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("price = 1\nitems = [1]")
            run_turn(
                kernel,
                llm,
                {"name": "read_notebook", "args": {}},
                {"name": "edit_cell", "args": {"cell_id": "c-load", "new_source": new_source}},
            )
            reply(kernel, next_request(kernel, 0), phase="result", status="ok", path="a.ipynb", cells=LIVE_CELLS)
            edit = next_request(kernel, 1)
            reply(kernel, edit, phase="shown")
            assert kernel.execute(new_source).ok  # the page runs the accepted cell, as JupyterLab does
            reply(kernel, edit, phase="result", status="accepted_and_run", ran_ok=True, outputs=[])
            finish(kernel, llm, 3)
            assert kernel.value("(price, items)") == [3, [1, 9]]
            done = kernel.text("%agent rewind")
            assert kernel.value("(price, items)") == [1, [1]]
        finally:
            kernel.close()
    assert "names restored: items, price" in done


def test_rewind_asks_the_page_to_revert_the_agents_cell_edit_and_remove_its_inserted_cell(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        env = kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "c.db"), AGENTIK_APPROVAL_TIMEOUT="20")
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            run_turn(
                kernel,
                llm,
                {"name": "read_notebook", "args": {}},
                {"name": "edit_cell", "args": {"cell_id": "c-load", "new_source": "price = 3"}},
                {"name": "insert_cell", "args": {"source": "print(price)"}},
            )
            reply(kernel, next_request(kernel, 0), phase="result", status="ok", path="a.ipynb", cells=LIVE_CELLS)
            edit = next_request(kernel, 1)
            reply(kernel, edit, phase="shown")
            reply(kernel, edit, phase="result", status="accepted")
            insert = next_request(kernel, 2)
            assert insert["data"]["action"] == "insert_cell"
            reply(kernel, insert, phase="result", status="ok", cell_id="c-new")
            finish(kernel, llm, 4)
            asking = kernel.submit("%agent rewind --preview")
            read = next_request(kernel, 3)  # the preview names the cells where the page has them now
            assert read["data"]["action"] == "read"
            page = [
                {**LIVE_CELLS[0], "source": "price = 3"},
                {"id": "c-new", "cell_type": "code", "source": insert["data"]["source"], "outputs": []},
                LIVE_CELLS[1],
            ]
            reply(kernel, read, phase="result", status="ok", path="a.ipynb", cells=page)
            preview = kernel.collect(asking).text
            assert "cells to revert: cell 1 'price = 3'" in preview, preview
            assert "inserted cells to remove: cell 2 'print(price)'" in preview, preview
            assert "c-load" not in preview and "c-new" not in preview
            pending = kernel.submit("%agent rewind")
            revert = next_request(kernel, 4)
            assert revert["data"]["action"] == "revert_cells"
            assert revert["data"]["changes"] == [  # newest first, each with what the agent left in the cell
                {"kind": "insert", "cell_id": "c-new", "source": insert["data"]["source"]},
                {"kind": "edit", "cell_id": "c-load", "old": LIVE_CELLS[0]["source"], "new": "price = 3"},
            ]
            results = [{"cell_id": "c-new", "outcome": "removed"}, {"cell_id": "c-load", "outcome": "changed"}]
            reply(kernel, revert, phase="result", status="ok", results=results)
            # the user changed c-load since: the revert is proposed on it as a diff, not done silently
            read = next_request(kernel, 5)
            assert read["data"]["action"] == "read"
            mine = [{**LIVE_CELLS[0], "source": "price = 4  # mine"}, LIVE_CELLS[1]]
            reply(kernel, read, phase="result", status="ok", path="a.ipynb", cells=mine)
            ask = next_request(kernel, 6)
            assert ask["data"]["action"] == "edit_cell" and ask["data"]["cell_id"] == "c-load"
            assert ask["data"]["expected_source"] == "price = 4  # mine"
            assert ask["data"]["new_source"] == LIVE_CELLS[0]["source"]  # the cell before the turn
            reply(kernel, ask, phase="shown")
            reply(kernel, ask, phase="result", status="rejected")
            done = kernel.collect(pending).text
        finally:
            kernel.close()
    # (done at once, without a preview: each cell named by its first line)
    assert "inserted cells removed: cell 'print(price)'" in done and "cells reverted: none" in done, done
    assert "cells left as they are: cell 'price = 3' (you kept your changes)" in done


def test_rewind_asks_the_page_to_restore_the_cell_the_agent_deleted(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        env = kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "d.db"), AGENTIK_APPROVAL_TIMEOUT="20")
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            run_turn(
                kernel,
                llm,
                {"name": "read_notebook", "args": {}},
                {"name": "delete_cell", "args": {"cell_id": "c-note"}},
            )
            reply(kernel, next_request(kernel, 0), phase="result", status="ok", path="a.ipynb", cells=LIVE_CELLS)
            delete = next_request(kernel, 1)
            assert delete["data"]["action"] == "delete_cell"
            reply(kernel, delete, phase="shown")
            reply(kernel, delete, phase="result", status="accepted")
            finish(kernel, llm, 3)
            asking = kernel.submit("%agent rewind --preview")
            read = next_request(kernel, 2)
            reply(kernel, read, phase="result", status="ok", path="a.ipynb", cells=LIVE_CELLS[:1])
            preview = kernel.collect(asking).text
            # (a deleted cell is not in the notebook: its first line names it)
            assert "deleted cells to restore: cell '# Notes' (their source, not their outputs)" in preview
            pending = kernel.submit("%agent rewind")
            revert = next_request(kernel, 3)
            assert revert["data"]["action"] == "revert_cells"
            assert revert["data"]["changes"] == [  # its source and type, and the cell that was above it
                {"kind": "delete", "cell_id": "c-note", "old": "# Notes", "cell_type": "markdown", "after": "c-load"}
            ]
            reply(kernel, revert, phase="result", status="ok", results=[{"cell_id": "c-note", "outcome": "restored"}])
            done = kernel.collect(pending).text
        finally:
            kernel.close()
    assert "deleted cells restored: cell '# Notes' (without their outputs)" in done
