"""Small things a newcomer notices, in JupyterLab and Notebook 7 + headless Debian Chromium + the fake LLM.

1. A `run_code` call waiting for approval: its card says it waits for you (not "running…"), the
   status line's "Go to the approval" stays hidden while the card is right there above it, and the
   expanded card shows the code as code (live, then in the transcript the extension draws).
2. A stopped turn reads "■ Stopped" in its cell and in the Agent sessions sidebar.

Screenshots in tests/artifacts/small_things_*.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import (  # noqa: E402  (skips the module when chromium is missing)
    HELD_CHUNK_DELAY,
    Lab,
    browser_lab,
    lab_server,
    run_cell,
    write_code_cells,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from agentik_jupyter.testing import Reply  # noqa: E402
from agentik_jupyter.widgets.status import TICK_S  # noqa: E402
from tests.shared_servers import shared_llm  # noqa: E402

NOTEBOOK = "small_things.ipynb"
CELL_LOAD, CELL_CODE, CELL_LONG = range(3)
SOURCES = ["%load_ext agentik_jupyter", "%%agent\nRun my code.", "%%agent\nWrite a long essay."]
CODE = "total = 2 + 3\nprint('TOTAL', total)"
LONG = " ".join(f"word{i}" for i in range(600))
CHUNK_DELAY = 0.02


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab; the sessions file beside the notebook, where the sidebar reads it."""
    tmp = tmp_path_factory.mktemp("small_things")
    root, home = tmp / "root", tmp / "home"
    root.mkdir()
    write_code_cells(root / NOTEBOOK, SOURCES)
    with (
        shared_llm(chunk_delay=CHUNK_DELAY) as srv,
        lab_server(root, home, srv, artifact="small_things") as server,
        browser_lab(srv, server, artifact="small_things", height=1200) as lab,
    ):
        lab.page.goto(server.link(f"/lab/tree/{NOTEBOOK}", reset=True), timeout=30_000)
        lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)
        yield lab


def code_block(card: Any) -> Any:
    return card.locator("pre.agentik-code[data-arg='code']")


def test_1_a_waiting_card_says_so_and_shows_its_code_as_code(lab: Lab) -> None:
    run_cell(lab, CELL_LOAD)
    lab.srv.push(Reply.tool_calls([{"name": "run_code", "args": {"code": CODE}}]), Reply.text("Ran it. END-CODE"))
    run_cell(lab, CELL_CODE)
    out = lab.output(CELL_CODE)
    approve = out.get_by_role("button", name="Approve")
    approve.wait_for(timeout=60_000)
    card = out.locator("details.agentik-tool").first
    lab.wait(
        lambda: "waiting for your approval" in lab.text(card.locator(":scope > summary")),
        30,
        "the card to say it waits",
    )
    assert "running" not in lab.text(card.locator(":scope > summary"))
    lab.wait(lambda: "Waiting for your approval" in lab.text(out.locator(".agentik-status")), 30, "the status line")
    # The card is right above the line: no button to go to it. (A fixed pause: checking that
    # something does not show, over one re-render of the line.)
    go = out.locator(".agentik-goto")
    lab.stays(
        lambda: go.count() == 1 and not go.is_visible(), TICK_S + 0.5, "no Go to the approval with the card in view"
    )
    card.locator(":scope > summary").click()
    lab.wait(lambda: lab.text(code_block(card)) == CODE, 10, "the live card's code as code")
    lab.shot("small_things_waiting_card.png", at=approve)

    approve.click()
    lab.wait(lambda: "END-CODE" in lab.text(out), 60, "the turn to end")
    saved = out.locator(".jp-AgentikTranscript details.agentik-tool").first
    saved.wait_for(timeout=30_000)
    summary = lab.text(saved.locator(":scope > summary"))
    assert summary.startswith("✓ run_code(") and "waiting" not in summary, summary
    saved.locator(":scope > summary").click()
    lab.wait(lambda: lab.text(code_block(saved)) == CODE, 10, "the transcript's card showing the code as code")
    assert "\\n" not in lab.text(saved).split(summary, 1)[-1]
    lab.shot("small_things_code_card.png", at=saved)


def test_2_a_stopped_turn_reads_the_same_in_its_cell_and_the_sidebar(lab: Lab) -> None:
    lab.srv.push(Reply.text(LONG))
    run_cell(lab, CELL_LONG)
    out = lab.output(CELL_LONG)
    lab.wait(lambda: "word20" in lab.text(out), 60, "the long answer to stream")
    # The model holds while Stop is clicked: the button sits below the streaming text, which wraps a
    # line every ~0.3 s here, and beside a CPU hog a click whose press and release straddled a wrap
    # reached no button (the answer ran to its end).
    lab.srv.chunk_delay = HELD_CHUNK_DELAY
    out.get_by_role("button", name="Stop").click()
    lab.wait(lambda: "■ Stopped" in lab.text(out), 30, "the cell to say it stopped")
    lab.srv.chunk_delay = CHUNK_DELAY
    assert "word599" not in lab.text(out)

    lab.page.locator('.jp-SideBar [data-id="agentik-sessions"]').click()
    sidebar = lab.page.locator(".jp-AgentikSidebar")
    row = sidebar.locator("li.agentik-session-row").first
    row.wait_for(timeout=30_000)
    row.get_by_role("button", name="Run my code.").click()
    history = sidebar.locator(".agentik-history")
    lab.wait(lambda: "word20" in lab.text(history), 30, "the session's turns in the sidebar")
    stopped = history.locator(".agentik-stopped")
    lab.wait(lambda: stopped.count() == 1, 30, "the stopped turn's mark in the sidebar")
    assert lab.text(stopped.first).strip() == "■ Stopped"
    assert "Interrupted by the user" not in lab.text(history) and "⚠" not in lab.text(history)
    lab.shot("small_things_stopped_sidebar.png", at=stopped.first)
