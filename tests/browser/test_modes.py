"""Modes in JupyterLab and Notebook 7: the panel's picker, an Auto turn and its Rewind, and the plan card.

Headless Debian Chromium + the fake LLM. The user picks Auto beside the panel's Send: in-kernel code
runs with no card and the panel's Rewind takes it back; the sessions sidebar says the session is in
Auto. Then a `%%agent --mode plan` cell shows the
plan's card: Edit, tick "in Auto", Run the plan; the card ticks the steps, and the notebook keeps the card
ticked. Another plan is rejected. The open sidebar follows the session's mode as `%agent mode` and the
picker change it, and draws the session's plan ticked and its rewound turns as the panel marks them, not as errors.
Steps run in file order on one server, kernel and page per app.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_browser import Lab  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import PROPOSAL, run_cell, source
from tests.browser_apps import app_page_fixture, shot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "modes_demo.ipynb"
CELL_LOAD, CELL_DATA, CELL_PANEL, CELL_PLAN, CELL_REJECT, CELL_CHECK, CELL_MODE = range(7)
SOURCES = [
    "%load_ext agentik_jupyter",
    "import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})",
    "%agent panel",
    "%%agent --mode plan\nMake a total and double it.",
    "%%agent --mode plan\nClean up everything.",
    "print('CHECK', df['x'].tolist(), 'new_var' in globals(), globals().get('total'))",
    "%agent mode plan",
]
REWIND_NOW = re.compile(r"^\W*Rewind now$")
LATEST = re.compile(r"^Take back the latest turn")
# an element's text colour, and the theme's error colour as the same element would paint it
COLOURS = """node => {
    const probe = document.createElement('span');
    probe.style.color = 'var(--jp-error-color1)';
    node.parentElement.appendChild(probe);
    const error = getComputedStyle(probe).color;
    probe.remove();
    return [getComputedStyle(node).color, error];
}"""


app_page = app_page_fixture(NOTEBOOK, SOURCES, "modes")


def check(lab: Lab) -> str:
    """Run the check cell; what it printed."""
    run_cell(lab, CELL_CHECK)
    output = lab.output(CELL_CHECK)
    lab.wait(lambda: "CHECK" in lab.text(output), 30, "the check cell's printout")
    return lab.text(output)


def test_auto_picked_beside_send_runs_in_kernel_code_without_a_card_and_rewinds(app_page: Lab) -> None:
    lab = app_page
    lab.srv.push(
        Reply.tool_calls([{"name": "run_code", "args": {"code": "df['x'] = 0\nnew_var = 41"}}]),
        Reply.text("Zeroed x. END-AUTO"),
    )
    run_cell(lab, CELL_LOAD)
    lab.console.clear()  # Notebook 7.6 logs an error of its own while the page loads; only ours count
    run_cell(lab, CELL_DATA)
    run_cell(lab, CELL_PANEL)
    panel = lab.output(CELL_PANEL)
    box = panel.get_by_placeholder("Ask the agent")
    box.wait_for(timeout=30_000)
    lab.wait(lambda: "Mode: Agent" in lab.text(panel), 20, "the mode in the status line")
    picker = panel.locator(".agentik-mode-picker select")
    picker.select_option(label="Auto")
    lab.wait(lambda: "Mode: Auto" in lab.text(panel), 20, "the status line to say Auto")
    shot(lab, "modes_picker.png", at=picker)
    box.fill("Zero x and keep 41.")
    panel.get_by_role("button", name="Send").click()
    lab.wait(lambda: "END-AUTO" in lab.text(panel), 60, "the Auto turn to end")
    assert panel.get_by_role("button", name="Approve").count() == 0  # no card: Rewind takes it back
    assert "CHECK [0, 0, 0] True None" in check(lab)
    lab.wait(lambda: panel.get_by_role("button", name="Stop").is_disabled(), 15, "the panel to be idle")
    panel.get_by_title(LATEST).click()
    lab.wait(lambda: "Rewind would take back turn 1" in lab.text(panel), 20, "the preview")
    panel.get_by_role("button", name=REWIND_NOW).click()
    lab.wait(lambda: "Rewound turn 1" in lab.text(panel), 20, "the rewind's outcome")
    assert "CHECK [1, 2, 3] False None" in check(lab)
    shot(lab, "modes_auto_rewound.png", at=panel)
    assert not [line for line in lab.console if line.startswith("pageerror")], lab.console


def test_the_sessions_sidebar_says_the_sessions_mode(app_page: Lab) -> None:
    lab = app_page
    if lab.app != "jupyterlab":  # type: ignore[attr-defined]
        pytest.skip("the sessions sidebar is JupyterLab's left panel")
    lab.page.locator('.jp-SideBar [data-id="agentik-sessions"]').click()
    meta = lab.page.locator(".jp-AgentikSidebar .agentik-session-meta")
    lab.wait(lambda: meta.count() == 1 and "Auto · " in lab.text(meta.first), 30, "the session's mode in the sidebar")
    shot(lab, "modes_sidebar.png", at=meta.first)
    lab.page.locator('.jp-SideBar [data-id="agentik-sessions"]').click()  # (closed again)


def test_the_plan_card_runs_the_edited_plan_in_auto_and_ticks_the_steps(app_page: Lab) -> None:
    lab = app_page
    lab.srv.push(
        Reply.tool_calls([{"name": "propose_plan", "args": {"steps": ["Make total", "Double it"]}}]),
        Reply.tool_calls(
            [
                {"name": "run_code", "args": {"code": "total = 21"}},
                {"name": "plan_step", "args": {"step": 1, "status": "done"}},
            ]
        ),
        Reply.tool_calls(
            [
                {"name": "run_code", "args": {"code": "total = total * 2"}},
                {"name": "plan_step", "args": {"step": 2, "status": "done"}},
                {"name": "plan_step", "args": {"step": 3, "status": "failed", "note": "no printer"}},
            ]
        ),
        # a model that thinks a while before its last words: the live card is on screen meanwhile
        Reply.text("Total is 42. END-PLAN", first_byte_after=6),
    )
    run_cell(lab, CELL_PLAN)
    output = lab.output(CELL_PLAN)
    run = output.get_by_role("button", name="Run the plan")
    run.wait_for(state="visible", timeout=60_000)
    card = output.locator(".agentik-plan")
    assert "Make total" in lab.text(card) and "nothing runs until you run it" in lab.text(card)
    assert "· Plan" in lab.text(output)  # the cell's header says the turn's mode
    shot(lab, "modes_plan_card.png", at=card)
    output.get_by_role("button", name="Edit").click()
    editor = card.locator("textarea")
    editor.wait_for(state="visible", timeout=20_000)
    editor.fill("Make total\nDouble it\nPrint it")
    card.locator("input[type=checkbox]").check()
    run.click()
    lab.wait(lambda: "✗ Print it" in lab.text(card), 60, "the card to tick the steps")  # (the last tick)
    ticked = lab.text(card)
    assert "✓ Make total" in ticked and "✗ Print it" in ticked and "Running the plan in Auto, as edited" in ticked
    assert output.get_by_role("button", name="Approve").count() == 0  # in Auto: no card for in-kernel code
    shot(lab, "modes_plan_ticked.png", at=card)
    lab.wait(lambda: "END-PLAN" in lab.text(output), 60, "the plan's turn to end")
    lab.wait(lambda: output.locator(".jp-AgentikTranscript").count() == 1, 30, "the transcript")
    assert "You · Auto" in lab.text(output.locator(".jp-AgentikTranscript .agentik-who").first)  # as it ran
    saved = output.locator(".jp-AgentikTranscript .agentik-plan")  # the notebook keeps the card, ticked
    steps = [lab.text(step) for step in saved.locator("li.agentik-step").all()]
    assert steps == ["✓ Make total", "✓ Double it", "✗ Print it — no printer"], steps
    assert "Running the plan in Auto, as edited" in lab.text(saved)
    shot(lab, "modes_plan_saved.png", at=saved)
    assert "CHECK [1, 2, 3] False 42" in check(lab)


def test_a_rejected_plan_runs_nothing(app_page: Lab) -> None:
    lab = app_page
    lab.srv.push(
        Reply.tool_calls([{"name": "propose_plan", "args": {"steps": ["Delete everything"]}}]),
        Reply.text("Fine: what would you like instead? END-REJECT"),
    )
    run_cell(lab, CELL_REJECT)
    output = lab.output(CELL_REJECT)
    reject = output.get_by_role("button", name="Reject")
    reject.wait_for(state="visible", timeout=60_000)
    reject.click()
    lab.wait(lambda: "END-REJECT" in lab.text(output), 60, "the answer after the rejection")
    after = lab.srv.requests[-1]
    told = [str(m.get("content")) for m in after.messages if m.get("role") == "tool"]
    assert told and "rejected the plan" in told[-1]
    assert "run_code" not in {t["function"]["name"] for t in after.body["tools"]}  # still planning
    assert "Fine: what would you like instead?" in lab.text(output)
    assert not [line for line in lab.console if line.startswith("pageerror")], lab.console


EDITED = "import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3, 4]})  # from the agent"


def edit_responder(request: Any) -> Reply:
    """The model in Auto: read the notebook, edit the data cell, then answer."""
    last = request.messages[-1]
    if last.get("role") == "user":
        return Reply.tool_calls([{"name": "read_notebook", "args": {}}])
    told = str(last.get("content", ""))
    if "id=" in told and "In [" in told:
        cell_id = re.findall(r"id=(\S+) code", told)[CELL_DATA]
        return Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": cell_id, "new_source": EDITED}}])
    return Reply.text("Edited the data cell. END-EDIT")


def test_in_auto_an_edit_lands_without_accept_marked_as_the_agents_and_rewinds(app_page: Lab) -> None:
    lab = app_page
    lab.srv.set_responder(edit_responder)
    panel = lab.output(CELL_PANEL)
    assert "Mode: Auto" in lab.text(panel)
    panel.get_by_placeholder("Ask the agent").fill("Add a fourth row to the data cell.")
    panel.get_by_role("button", name="Send").click()
    lab.wait(lambda: "END-EDIT" in lab.text(panel), 60, "the edit turn to end")
    assert source(lab, CELL_DATA) == EDITED
    mark = lab.cell(CELL_DATA).locator(".agentik-auto-edit")
    assert mark.is_visible() and "Changed by the agent (Auto mode)" in lab.text(mark)
    assert lab.cell(CELL_DATA).locator(PROPOSAL).count() == 0  # no diff waited for Accept
    shot(lab, "modes_auto_edit.png", at=lab.cell(CELL_DATA))
    lab.wait(lambda: panel.get_by_role("button", name="Stop").is_disabled(), 15, "the panel to be idle")
    panel.get_by_title(LATEST).click()
    lab.wait(lambda: "Rewind would take back turn" in lab.text(panel), 20, "the preview")
    panel.get_by_role("button", name=REWIND_NOW).click()
    lab.wait(lambda: source(lab, CELL_DATA) == SOURCES[CELL_DATA], 20, "the edit taken back")
    lab.wait(lambda: mark.count() == 0, 10, "the mark to go with the edit")
    lab.srv.set_responder(None)
    assert not [line for line in lab.console if line.startswith("pageerror")], lab.console


def test_the_open_sidebar_follows_the_sessions_mode_and_shows_its_plan_ticked(app_page: Lab) -> None:
    lab = app_page
    if lab.app != "jupyterlab":  # type: ignore[attr-defined]
        pytest.skip("the sessions sidebar is JupyterLab's left panel")
    tab = lab.page.locator('.jp-SideBar [data-id="agentik-sessions"]')
    tab.click()
    meta = lab.page.locator(".jp-AgentikSidebar .agentik-session-meta")
    lab.wait(lambda: meta.count() == 1 and "Auto · " in lab.text(meta.first), 30, "the session's mode in the sidebar")
    run_cell(lab, CELL_MODE)  # no reload, no click on Refresh: the sidebar follows
    lab.wait(lambda: "Plan · " in lab.text(meta.first), 30, "the sidebar to say Plan after %agent mode plan")
    lab.output(CELL_PANEL).locator(".agentik-mode-picker select").select_option(label="Ask")
    lab.wait(lambda: "Ask · " in lab.text(meta.first), 30, "the sidebar to say Ask after the picker")
    shot(lab, "modes_sidebar_follows.png", at=meta.first)
    lab.page.locator(".jp-AgentikSidebar .agentik-session").first.click()
    plans = lab.page.locator(".jp-AgentikSidebar .agentik-plan")
    lab.wait(lambda: plans.count() == 2, 30, "the session's two plans")
    steps = [lab.text(step) for step in plans.first.locator("li.agentik-step").all()]
    assert steps == ["✓ Make total", "✓ Double it", "✗ Print it — no printer"], steps
    assert "Plan rejected: nothing ran" in lab.text(plans.nth(1))
    shot(lab, "modes_sidebar_plan.png", at=plans.first)
    # the turns the user rewound read as the panel shows them: a grey mark, not a failure
    rewound = lab.page.locator(".jp-AgentikSidebar .agentik-rewound")
    lab.wait(lambda: rewound.count() >= 1, 30, "the rewound turns' marks")
    marks = [lab.text(mark) for mark in rewound.all()]
    assert marks[0].startswith("↶ Rewound turn 1"), marks
    errors = lab.page.locator(".jp-AgentikSidebar .agentik-error").filter(has_text="Rewound turn")
    assert errors.count() == 0, [lab.text(e) for e in errors.all()]
    colour, error_colour = rewound.first.evaluate(COLOURS)
    assert colour != error_colour, (colour, error_colour)
    shot(lab, "modes_sidebar_rewound.png", at=rewound.first)
    lab.page.locator(".jp-AgentikSidebar .agentik-back").click()
    tab.click()  # (closed again)
