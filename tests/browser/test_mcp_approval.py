"""An outside agent's run_code over MCP waits for the user in JupyterLab: the approval card shows in
the notebook's chat panel, where our agent's cards show; Approve runs the code and the MCP client
gets its output, Deny refuses it. JupyterLab + headless Debian Chromium + the official MCP client
over streamable HTTP, against the page's own Jupyter server.

Screenshots in tests/artifacts/mcp_approval*.png.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import Lab, notebook_page, run_cell  # noqa: E402  (skips without chromium)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from mcp_types import CallToolResult  # noqa: E402

from tests.mcp_support import connected, text_of  # noqa: E402

NOTEBOOK = "mcp_approval.ipynb"
CELL_LOAD, CELL_PANEL, CELL_CHECK = range(3)
SOURCES = ["%load_ext agentik_jupyter", "%agent panel", "print('shared:', shared)"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact="jupyterlab-mcp-approval", url_path=f"/lab/tree/{NOTEBOOK}"
    ) as lab:
        yield lab


class OutsideCall:
    """An MCP client's calls (run_code by default), in a thread of its own while the test works the page."""

    def __init__(self, lab: Lab, code: str = "", *, calls: list[tuple[str, dict[str, Any]]] | None = None) -> None:
        self.results: list[CallToolResult] = []
        self.failed: BaseException | None = None
        wanted = calls or [("run_code", {"code": code})]
        self.thread = threading.Thread(target=lambda: asyncio.run(self._call(lab, wanted)), daemon=True)
        self.thread.start()

    @property
    def result(self) -> CallToolResult | None:
        return self.results[-1] if self.results else None

    async def _call(self, lab: Lab, calls: list[tuple[str, dict[str, Any]]]) -> None:
        try:
            async with connected(lab.server) as client:
                for name, args in calls:
                    args = {"notebook": lab.server.path(NOTEBOOK), **args}
                    if name == "edit_cell":  # the id read_notebook showed for cell [2]
                        found = re.search(r"\[2\] id=(\S+)", "\n".join(map(text_of, self.results)))
                        args["cell_id"] = found.group(1) if found else "?"
                    self.results.append(await client.call_tool(name, args))
        except BaseException as exc:
            self.failed = exc

    def text(self) -> str:
        assert self.result is not None, self.failed
        return text_of(self.result)


def panel(lab: Lab) -> Any:
    return lab.output(CELL_PANEL)


def test_1_approve_on_the_page_runs_the_outside_agent_s_code(lab: Lab) -> None:
    run_cell(lab, CELL_LOAD)
    run_cell(lab, CELL_PANEL)
    lab.wait(lambda: "Agent chat" in lab.text(panel(lab)), 60, "the chat panel")
    call = OutsideCall(lab, "shared = 'FROM-CLAUDE'\nprint('RAN-OUTSIDE')")
    approve = panel(lab).get_by_role("button", name="Approve")
    lab.wait(lambda: approve.count() == 1 and approve.is_visible(), 90, "the approval card in the panel")
    card = lab.text(panel(lab))
    assert "claude-code (an outside agent, over MCP) wants to run this code" in card
    assert "shared = 'FROM-CLAUDE'" in card
    assert call.result is None  # the call waits for the user
    waits = "◷ Waiting for your approval to run run_code (claude-code)…"  # the client by its `initialize`
    lab.wait(lambda: waits in lab.text(panel(lab)), 30, "the panel's status line naming the client")
    lab.shot("mcp_approval.png", at=approve)
    approve.click()
    call.thread.join(90)
    assert call.result is not None and not call.result.is_error, call.text()
    assert "RAN-OUTSIDE" in call.text()
    lab.wait(lambda: "RAN-OUTSIDE" in lab.text(panel(lab)), 30, "the call's tool card in the panel")
    lab.shot("mcp_approval_card.png", at=panel(lab))
    run_cell(lab, CELL_CHECK)
    lab.wait(lambda: "shared: FROM-CLAUDE" in lab.text(lab.output(CELL_CHECK)), 30, "the variable in the notebook")


def test_2_deny_on_the_page_refuses_it(lab: Lab) -> None:
    call = OutsideCall(lab, "shared = 'DENIED-CHANGE'")
    deny = panel(lab).get_by_role("button", name="Deny")
    lab.wait(lambda: deny.count() == 1 and deny.is_visible(), 90, "the second approval card")
    lab.shot("mcp_approval_deny.png", at=deny)
    deny.click()
    call.thread.join(90)
    assert call.result is not None and call.result.is_error
    assert "The user did not approve running 'run_code'" in call.text()
    run_cell(lab, CELL_CHECK)
    lab.wait(lambda: "shared: FROM-CLAUDE" in lab.text(lab.output(CELL_CHECK)), 30, "the variable unchanged")


def test_3_an_edit_shows_as_a_diff_on_the_cell_and_returns_accepted(lab: Lab) -> None:
    new_source = "print('shared is', shared)"
    call = OutsideCall(lab, calls=[("read_notebook", {}), ("edit_cell", {"new_source": new_source})])
    proposal = lab.cell(CELL_CHECK).locator(".agentik-proposal")
    lab.wait(lambda: proposal.count() == 1 and proposal.is_visible(), 90, "the diff on the cell")
    assert "print('shared is', shared)" in lab.text(proposal)
    assert "claude-code proposes this change" in lab.text(proposal)  # the client by its name, not "The agent"
    assert len(call.results) == 1  # read; the edit waits for the user
    waits = "◷ edit_cell (claude-code): waiting for your answer on"
    lab.wait(lambda: waits in lab.text(panel(lab)), 30, "the panel's status line saying what the client waits for")
    lab.shot("mcp_approval_edit.png", at=proposal)
    proposal.get_by_role("button", name="Accept", exact=True).click()
    call.thread.join(90)
    assert call.result is not None and not call.result.is_error, call.text()
    assert call.text().startswith("status: accepted\nThe user accepted the edit")
    lab.wait(lambda: new_source in lab.text(lab.cell(CELL_CHECK)), 30, "the new source in the cell")


def test_4_insert_cell_proposes_a_cell_the_user_runs(lab: Lab) -> None:
    cells = lab.page.locator(".jp-Notebook .jp-Cell")
    before = cells.count()
    call = OutsideCall(lab, calls=[("insert_cell", {"source": "print('FROM-INSERT')"})])
    call.thread.join(90)
    assert call.result is not None and not call.result.is_error, call.text()
    lab.wait(lambda: cells.count() == before + 1, 30, "the proposed cell")
    assert "FROM-INSERT" in lab.text(lab.page.locator(".jp-Notebook"))


def test_5_the_client_is_listed_in_the_sessions_sidebar(lab: Lab) -> None:
    lab.page.locator('.jp-SideBar [data-id="agentik-sessions"]').click()
    rows = lab.page.locator(".jp-AgentikSidebar li.agentik-session-row")
    lab.wait(lambda: any("claude-code" in lab.text(r) for r in rows.all()), 30, "the client's session in the sidebar")
    lab.shot("mcp_approval_sidebar.png")
