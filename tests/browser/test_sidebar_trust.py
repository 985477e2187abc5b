"""The sessions sidebar and a shipped sessions file, in real JupyterLab and headless Chromium.

A project ships `trust.agentik.db` whose conversation ids hold a newline and Python that
would create a file. The sidebar never lists those rows (it says how many it hides), and
"Continue here" asks the kernel over the control comm instead of running `%agent resume ID`:
no click creates the file. Without the extension loaded in the kernel the sidebar says so and
offers the fixed `%load_ext agentik_jupyter`; a normal "Continue here" resumes over the comm
and the active session's row is marked. Deleting the active session from the sidebar: the
next `%%agent` cell starts a new session by itself and says so, and the new row is marked.

Screenshots go to the module's tmp dir (printed) and tests/artifacts/.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.test_browser import Lab, browser_lab, lab_server, write_code_cells
from tests.browser.test_sidebar import rows, run_cell, sidebar

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from agentik_jupyter.notebook.attachments import ATTACHED  # noqa: E402
from agentik_jupyter.persistence import SessionDB, SessionReader  # noqa: E402
from agentik_jupyter.testing import Reply  # noqa: E402
from agentik_jupyter.types import AssistantMessage, UserMessage  # noqa: E402
from tests.kernel_support import AGENT_EXPR  # noqa: E402
from tests.shared_servers import shared_llm  # noqa: E402

NOTEBOOK = "trust.ipynb"
DB = "trust.agentik.db"
CELL_READY, CELL_WHICH, CELL_ASK, CELL_LOAD = range(4)
CELL_SOURCES = [
    "print('kernel ready')",
    f"print('CURRENT', {AGENT_EXPR}.session.conversation_id)",
    "%%agent\nA question after the delete",
    "%load_ext agentik_jupyter",
]


class Trust:
    def __init__(self, lab: Lab, tmp: Path, marker: Path, good: str) -> None:
        self.lab, self.tmp, self.marker, self.good = lab, tmp, marker, good

    def shot(self, name: str) -> Path:
        path = self.tmp / name
        self.lab.page.screenshot(path=str(path), timeout=10_000)
        self.lab.shot(name)
        print(f"screenshot: {path}")
        return path


def shipped_db(path: Path, marker: Path) -> str:
    with SessionDB(path) as db:
        good = db.create_conversation("Normal session")
        # a question as %agent fix stores it: what the model needs is attached below the user's line
        question = f"A normal question{ATTACHED}%agent fix (for the model only):\nTraceback in /tmp/ipykernel_4242/1.py"
        turn = db.begin_turn(good.id, UserMessage(content=question))
        db.append(good.id, turn, AssistantMessage(content="A normal answer"))
    conn = sqlite3.connect(path)
    with conn:
        later = time.time() + 60
        conn.execute(
            "INSERT INTO conversation (id, title, is_temporal, created_at, updated_at) VALUES (?, ?, 0, ?, ?)",
            (f"conv_evil\nopen({str(marker)!r}, 'w').close()", "Hostile session", later, later),
        )
    conn.close()
    return good.id


@pytest.fixture(scope="module")
def trust(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trust]:
    tmp = tmp_path_factory.mktemp("browser_sidebar_trust")
    root, home = tmp / "root", tmp / "home"
    root.mkdir()
    marker = tmp / "pwned"
    write_code_cells(root / NOTEBOOK, CELL_SOURCES)
    good = shipped_db(root / DB, marker)
    with (
        shared_llm() as srv,
        lab_server(root, home, srv, artifact="jupyterlab_sidebar_trust") as server,
        browser_lab(srv, server, artifact="jupyterlab_sidebar_trust", height=1000, levels=("error",)) as lab,
    ):
        yield Trust(lab, tmp, marker, good)


def note(lab: Lab) -> str:
    return lab.text(sidebar(lab).locator(".agentik-sidebar-note"))


def active_ids(lab: Lab) -> list[str]:
    marked = sidebar(lab).locator("li.agentik-session-row.agentik-active")
    return [marked.nth(i).get_attribute("data-session-id") for i in range(marked.count())]


def current(lab: Lab) -> str:
    run_cell(lab, CELL_WHICH)
    return lab.text(lab.output(CELL_WHICH))


def test_1_continue_here_without_the_extension_offers_to_load_it(trust: Trust) -> None:
    lab = trust.lab
    lab.page.goto(lab.server.link(f"/lab/tree/{NOTEBOOK}", reset=True), timeout=30_000)
    lab.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=45_000)
    run_cell(lab, CELL_READY)  # (the kernel has started: Continue here has a kernel to ask)
    lab.page.locator('.jp-SideBar [data-id="agentik-sessions"]').click()
    normal = rows(lab).filter(has_text="Normal session")
    lab.wait(lambda: normal.count() == 1, 15, "the normal session in the sidebar")
    normal.get_by_role("button", name="Continue here").click()
    lab.wait(lambda: "not loaded" in note(lab), 10, "the sidebar to say the extension is not loaded")
    load = sidebar(lab).get_by_role("button", name="Load it (%load_ext agentik_jupyter)")
    load.click()
    lab.wait(lambda: "next %%agent cell continues “Normal session”" in note(lab), 20, "the resume over the comm")
    lab.wait(lambda: active_ids(lab) == [trust.good], 5, "the active row marked")
    assert "active" in lab.text(sidebar(lab).locator("li.agentik-active .agentik-active-label"))
    assert f"CURRENT {trust.good}" in current(lab)
    trust.shot("sidebar_trust_active.png")


def test_2_a_hostile_id_from_the_file_runs_no_code(trust: Trust) -> None:
    lab = trust.lab
    run_cell(lab, CELL_LOAD)  # (loaded already by test 1; the hostile text would need %agent)
    for i in range(rows(lab).count()):  # every Continue here the sidebar offers
        row = rows(lab).nth(i)
        title = lab.text(row.locator(".agentik-session-title"))
        row.get_by_role("button", name="Continue here").click()
        lab.wait(lambda: f"continues “{title}”" in note(lab) or f"continue “{title}”" in note(lab), 15, "the answer")
    lab.stays(lambda: not trust.marker.exists(), 1.0, "no code from the sessions file to run in the kernel")
    assert "Hostile session" not in lab.text(sidebar(lab))
    lab.wait(lambda: "malformed ids and are not shown" in lab.text(sidebar(lab)), 10, "the hidden-rows note")
    assert f"CURRENT {trust.good}" in current(lab)
    trust.shot("sidebar_trust_hidden.png")


def test_2b_the_history_shows_the_users_question_without_what_was_attached(trust: Trust) -> None:
    lab = trust.lab
    rows(lab).filter(has_text="Normal session").get_by_role("button", name="Normal session").click()
    history = sidebar(lab).locator(".agentik-history")
    lab.wait(lambda: "A normal answer" in lab.text(history), 15, "the session's history")
    text = lab.text(history)
    assert "A normal question" in text
    assert "Attached by" not in text and "/tmp/ipykernel_" not in text, text
    sidebar(lab).get_by_role("button", name="‹ All sessions").click()
    lab.wait(lambda: rows(lab).filter(has_text="Normal session").count() == 1, 15, "the list again")


def test_3_deleting_the_active_session_then_asking_starts_a_new_one(trust: Trust) -> None:
    lab = trust.lab
    target = rows(lab).filter(has_text="Normal session")
    target.get_by_role("button", name="Delete").click()
    confirm = sidebar(lab).locator(".agentik-confirm")
    assert "its next turn starts a new session" in lab.text(confirm)
    confirm.get_by_role("button", name="Delete session").click()
    lab.wait(lambda: rows(lab).count() == 0, 10, "the deleted session to go")
    assert SessionReader(lab.server.root / DB).list_conversations()[0] == []
    lab.srv.push(Reply.text("A fresh answer. END-FRESH"))
    run_cell(lab, CELL_ASK)
    output = lab.output(CELL_ASK)
    lab.wait(lambda: "END-FRESH" in lab.text(output), 20, "the answer in a new session")
    notice = f"The session {trust.good} was deleted; this turn starts a new session."
    lab.wait(lambda: notice in lab.text(output), 10, "the notice in the turn's transcript")
    assert "Could not write the session file" not in lab.text(output)
    lab.wait(lambda: rows(lab).count() == 1, 10, "the new session in the sidebar")
    new_id = rows(lab).first.get_attribute("data-session-id")
    assert new_id != trust.good
    lab.wait(lambda: active_ids(lab) == [new_id], 10, "the new session marked active")
    trust.shot("sidebar_trust_new_session.png")
