"""Notebook 7's header still says "Trusted" after the agent inserts a cell (headless Debian Chromium,
the fake LLM): the inserted cell is trusted like one the user inserts. Screenshot in
tests/artifacts/trusted_insert_notebook7.png.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.test_browser import Lab, notebook_page, run_cell  # noqa: E402  (skips without chromium)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "trusted_insert.ipynb"


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with notebook_page(
        tmp_path_factory,
        NOTEBOOK,
        ["%load_ext agentik_jupyter", "%%agent\nPropose a cell that sums the units."],
        artifact="trusted_insert_notebook7",
        url_path=f"/notebooks/{NOTEBOOK}",
        reset=False,
    ) as lab:
        yield lab


def test_notebook7_stays_trusted_when_the_agent_inserts_a_cell(notebook7: Lab) -> None:
    lab = notebook7
    trust = lab.page.locator(".jp-NotebookTrustedStatus")
    # a notebook the user trusts (a new file is not signed yet): its header's button, then Trust
    trust.click()
    lab.page.locator(".jp-Dialog").get_by_role("button", name="Trust").click()
    lab.wait(lambda: lab.text(trust).strip() == "Trusted", 30, "the header to say Trusted")
    run_cell(lab, 0)
    lab.srv.push(
        Reply.tool_calls([{"name": "insert_cell", "args": {"source": "units = sales['units'].sum()"}}]),
        Reply.text("Review the cell below. END-INSERT"),
    )
    run_cell(lab, 1)
    lab.wait(lambda: "END-INSERT" in lab.text(lab.output(1)), 60, "the proposing turn to end")
    proposed = lab.page.locator(".jp-Notebook .jp-Cell .cm-content").filter(has_text="Proposed by the agent")
    lab.wait(lambda: proposed.count() == 1, 30, "the proposed cell")
    assert lab.text(trust).strip() == "Trusted", lab.text(trust)
    lab.shot("trusted_insert_notebook7.png", at=trust)
