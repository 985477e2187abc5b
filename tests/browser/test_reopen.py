"""A turn outlives its page, in JupyterLab and Notebook 7: closed mid-turn, followed live after reopening.

Headless Debian Chromium + the fake LLM, streaming slowly: a background `%%agent` cell's answer
streams, the tab is closed (never saved), and the turn goes on in the kernel: its answer reaches
the sessions file with no page open, and the page opened then shows its transcript in the cell. A new page on the same notebook (same server, same live
kernel) shows the cell's answer so far and follows it to its end, then the transcript. Then a
`run_code` card is waiting when the tab closes: the reopened page shows it again, Approve runs the
code and the turn ends with its answer. Last, a turn asked in the chat panel: the reopened page's
panel shows its answer so far and follows it to the end.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from tests.browser.test_browser import WIDGET_ERROR, Lab, run_cell, tool_messages, words  # noqa: E402  (skips without chromium)
from tests.browser_apps import app_page_fixture, url_path

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "reopen.ipynb"
SESSIONS = "reopen.agentik.db"
CELL_LOAD, CELL_SLOW, CELL_APPROVE, CELL_PANEL = range(4)
SOURCES = [
    "%load_ext agentik_jupyter",
    "%%agent\nTell me about the units, slowly.",
    "%%agent\nAdd up the units by running code.",
    "%agent panel",
]
CHUNK_DELAY = 0.1  # one word a chunk
HELD = 2.0
"""The pace while the page is away (read by the fake per chunk): the turn cannot end before the
page is back, however slow the machine; once the page shows the text so far it speeds up again."""
SHORT_ANSWER = words("Short answer:", 40, "END-SHORT")
SLOW_ANSWER = words("Slow answer:", 80, "END-SLOW")
CODE = "print('TOTAL', 1 + 2 + 3)"
AFTER_APPROVAL = "The total is 6. END-APPROVED"
PANEL_QUESTION = "Tell me more, in the panel."
PANEL_ANSWER = words("Panel answer:", 80, "END-PANEL")

app_page = app_page_fixture(NOTEBOOK, SOURCES, "reopen")


def saved_answers(lab: Lab) -> str:
    """Every assistant message in the notebook's sessions file, read as SQLite (the kernel writes it)."""
    path = lab.server.root / SESSIONS
    if not path.exists():
        return ""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as db:
        rows = db.execute("SELECT payload_json FROM message WHERE role = 'assistant'").fetchall()
    return "\n".join(row[0] for row in rows)


def reopen(lab: Lab) -> Any:
    """Close the tab (nothing saved) and open the notebook in a new one: the same server and kernel."""
    old = lab.page
    page = old.context.new_page()
    page.set_default_timeout(15_000)
    page.on("console", lambda m: lab.console.append(f"{m.type}: {m.text}") if m.type in ("error",) else None)
    page.on("pageerror", lambda e: lab.console.append(f"pageerror: {e}"))
    old.close()
    lab.page = page
    return page


def open_again(lab: Lab) -> None:
    app = lab.app  # type: ignore[attr-defined]
    lab.page.goto(lab.server.link(url_path(app, NOTEBOOK), reset=app == "jupyterlab"), timeout=30_000)
    lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)


def follow_after_reopening(lab: Lab, index: int, so_far: str, end: str) -> Any:
    """Hold the model, close the tab mid-turn (nothing saved) and open the notebook again: cell
    `index`'s output shows the answer so far, then (the model sped up) follows it to `end`."""
    lab.srv.chunk_delay = HELD
    reopen(lab)
    open_again(lab)
    out = lab.output(index)
    lab.wait(lambda: so_far in lab.text(out), 60, "the answer so far in the reopened page")
    assert end not in lab.text(out)
    lab.srv.chunk_delay = CHUNK_DELAY / 2
    lab.wait(lambda: end in lab.text(out), 90, "the answer followed to its end")
    return out


def test_1_a_turn_goes_on_in_the_kernel_while_no_page_is_open(app_page: Lab) -> None:
    lab = app_page
    lab.srv.chunk_delay = CHUNK_DELAY
    lab.srv.push(Reply.text(SHORT_ANSWER))
    run_cell(lab, CELL_LOAD)
    run_cell(lab, CELL_SLOW)
    lab.wait(lambda: "w3 " in lab.text(lab.output(CELL_SLOW)), 60, "the answer to start streaming")
    reopen(lab)  # the tab closed mid-turn
    lab.wait(lambda: "END-SHORT" in saved_answers(lab), 60, "the whole answer in the sessions file, no page open")
    open_again(lab)  # the notebook was never saved: the kernel still has what the cell showed
    out = lab.output(CELL_SLOW)
    lab.wait(
        lambda: out.locator(".jp-AgentikTranscript").count() == 1 and "END-SHORT" in lab.text(out),
        60,
        "the ended turn's transcript in its cell",
    )
    assert WIDGET_ERROR not in lab.text(out)


def test_2_the_reopened_page_follows_the_turn_live_to_its_end(app_page: Lab) -> None:
    lab = app_page
    lab.srv.push(Reply.text(SLOW_ANSWER))
    run_cell(lab, CELL_SLOW)
    out = lab.output(CELL_SLOW)
    lab.wait(lambda: "Slow answer: w0 w1 w2 w3 " in lab.text(out), 60, "the answer to start streaming")
    out = follow_after_reopening(lab, CELL_SLOW, "Slow answer: w0 w1 w2 w3 ", "END-SLOW")
    lab.wait(lambda: out.locator(".jp-AgentikTranscript").count() == 1, 60, "the transcript in the cell")
    text = lab.text(out)
    assert text.count("w50 ") == 1, text  # the text so far and what followed, each once
    assert WIDGET_ERROR not in text
    assert "END-SLOW" in saved_answers(lab)


def test_3_a_waiting_approval_is_shown_again_and_approved_after_reopening(app_page: Lab) -> None:
    lab = app_page
    lab.srv.chunk_delay = 0.0
    lab.srv.push(Reply.tool_calls([{"name": "run_code", "args": {"code": CODE}}]), Reply.text(AFTER_APPROVAL))
    run_cell(lab, CELL_APPROVE)
    out = lab.output(CELL_APPROVE)
    lab.wait(lambda: out.get_by_role("button", name="Approve").is_visible(), 60, "the approval card")

    reopen(lab)
    open_again(lab)
    out = lab.output(CELL_APPROVE)
    approve = out.get_by_role("button", name="Approve")
    lab.wait(lambda: approve.is_visible(), 60, "the approval card again in the reopened page")
    assert CODE in lab.text(out)
    approve.click()
    lab.wait(lambda: "END-APPROVED" in lab.text(out), 60, "the answer after Approve on the reopened page")
    assert "TOTAL 6" in str(tool_messages(lab))  # it ran in the kernel
    assert WIDGET_ERROR not in lab.text(out)


def test_4_the_chat_panel_follows_its_turn_after_reopening(app_page: Lab) -> None:
    lab = app_page
    lab.srv.chunk_delay = CHUNK_DELAY
    run_cell(lab, CELL_PANEL)
    panel = lab.output(CELL_PANEL)
    box = panel.get_by_placeholder("Ask the agent")
    lab.wait(lambda: box.is_visible(), 60, "the chat panel")
    lab.srv.push(Reply.text(PANEL_ANSWER))
    box.fill(PANEL_QUESTION)
    panel.get_by_role("button", name="Send").click()
    lab.wait(lambda: "Panel answer: w0 w1 w2 w3 " in lab.text(panel), 60, "the panel's answer to start streaming")
    panel = follow_after_reopening(lab, CELL_PANEL, "Panel answer: w0 w1 w2 w3 ", "END-PANEL")
    lab.wait(lambda: panel.get_by_role("button", name="Stop").is_disabled(), 60, "the panel idle again")
    text = lab.text(panel)
    _, asked, answer = text.rpartition(PANEL_QUESTION)
    assert asked and answer.count("w50 ") == 1 and text.count("END-PANEL") == 1, text  # so far + followed, once
    assert WIDGET_ERROR not in text
