"""The same notebook in two pages, in JupyterLab and Notebook 7, without and with real-time collaboration.

Headless Debian Chromium + the fake LLM + a real kernel; two pages (two tabs, or two
collaborators) hold the same notebook and its kernel. The turn runs in the first page: it reads
the live notebook, proposes an edit, then inserts a cell. Only the page that asked shows the
diff; Accept changes the cell once, in both pages and on disk; the inserted cell appears exactly
once in both pages and on disk, with its `agentik-proposal` tag; no tool fails, no page errors.
Without collaboration the second page follows the saved file; with jupyter-collaboration the
change goes into the shared document once.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.browser.test_browser import (  # noqa: E402  (skips the module when chromium is missing)
    Lab,
    lab_server,
    save_artifact,
    tool_messages,
    write_code_cells,
)
from tests.browser.test_notebook import PROPOSAL, run_cell
from tests.browser_apps import APPS, url_path

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from playwright import sync_api  # noqa: E402

from agentik_jupyter.notebook.cells import PROPOSAL_LINE  # noqa: E402
from agentik_jupyter.testing import Reply  # noqa: E402
from tests.shared_servers import new_context, shared_llm  # noqa: E402

NOTEBOOK = "two_pages.ipynb"
CELL_LOAD, CELL_DATA, CELL_ASK = range(3)
SOURCES = ["%load_ext agentik_jupyter", "rate = 1", "%%agent\nLook at my notebook."]
EDITED = "rate = 2  # from the agent"
INSERTED = "print('SUM', rate * 21)"
# Notebook 7.6 itself logs this while a page loads, with the agentik extension disabled too
# (tests/browser/test_notebook7.py): not an error of ours.
NOTEBOOK7_LOAD_ERROR = "Cannot read properties of undefined (reading 'schema')"


@contextlib.contextmanager
def two_pages(tmp: Path, app: str, collaborative: bool) -> Iterator[tuple[Lab, Lab]]:
    """One server, one browser, two pages on NOTEBOOK; the second opens once the first has its kernel."""
    root, home = tmp / "root", tmp / "home"
    root.mkdir()
    write_code_cells(root / NOTEBOOK, SOURCES)
    name = f"two-pages-{app}-{'collab' if collaborative else 'plain'}"
    with contextlib.ExitStack() as stack:
        srv = stack.enter_context(shared_llm())
        server = stack.enter_context(lab_server(root, home, srv, artifact=name, app=app, collaborative=collaborative))
        playwright = stack.enter_context(sync_api.sync_playwright())
        browser, context = new_context(playwright, viewport={"width": 1280, "height": 1000})
        stack.callback(browser.close)
        stack.callback(context.close)
        labs = []
        for which in ("a", "b"):
            page = context.new_page()
            page.set_default_timeout(15_000)
            lab = Lab(srv, server, page)
            lab.app = app  # type: ignore[attr-defined]
            page.on("pageerror", lambda e, lab=lab: lab.console.append(f"pageerror: {e}"))
            page.on(
                "console", lambda m, lab=lab: lab.console.append(f"{m.type}: {m.text}") if m.type == "error" else None
            )
            stack.callback(
                lambda lab=lab, which=which: save_artifact(f"{name}-{which}-console.log", "\n".join(lab.console))
            )
            labs.append(lab)
        a, b = labs
        link = server.link(url_path(app, NOTEBOOK), reset=app == "jupyterlab")
        a.page.goto(link, timeout=30_000)
        a.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)
        run_cell(a, CELL_LOAD)  # the kernel runs: the second page joins it
        b.page.goto(link, timeout=30_000)
        b.page.locator(".jp-Notebook .jp-Cell").nth(CELL_ASK).wait_for(timeout=45_000)
        a.wait(lambda: kernel_idle(b), 45, "the second page to connect to the notebook's kernel")
        yield a, b


def kernel_idle(lab: Lab) -> bool:
    """The page's kernel connection is up (its status says Idle), so it sees the kernel's requests."""
    return bool(
        lab.page.evaluate(
            "() => !!document.querySelector('.jp-Notebook') && "
            "[...document.querySelectorAll('.jp-Toolbar-kernelStatus, .jp-KernelStatus, .jp-Notebook-ExecutionIndicator')]"
            ".some(e => /idle/i.test(e.getAttribute('data-status') || e.textContent || ''))"
        )
    )


def sources(lab: Lab) -> list[str]:
    """Every cell's source as the page shows it."""
    return list(
        lab.page.evaluate(
            "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].map("
            "c => c.querySelector('.cm-content')?.innerText ?? '')"
        )
    )


def on_disk(root: Path) -> Any:
    try:
        return nbformat.read(root / NOTEBOOK, as_version=4)
    except Exception:  # (written at this moment)
        return None


def count_on_disk(root: Path, text: str) -> int:
    nb = on_disk(root)
    return -1 if nb is None else sum(text in c.source for c in nb.cells)


def shot(lab: Lab, name: str) -> None:
    lab.shot(name)


@pytest.mark.xdist_group("alone")  # (collaboration: the server's shared presence of every page)
@pytest.mark.parametrize("collaborative", [False, True], ids=["plain", "collaboration"])
@pytest.mark.parametrize("app", APPS)
def test_two_pages_edit_and_insert_land_once(tmp_path: Path, app: str, collaborative: bool) -> None:
    if collaborative and importlib.util.find_spec("jupyter_server_ydoc") is None:
        pytest.skip("jupyter-collaboration (a test dependency: pip install -e '.[test]') is not installed")
    with two_pages(tmp_path, app, collaborative) as (a, b):
        root = a.server.root
        read: list[Any] = []  # the notebook as read once readable (collaboration may be saving it)
        a.wait(lambda: read.append(on_disk(root)) or read[-1] is not None, 30, "the notebook file readable")
        target = read[-1].cells[CELL_DATA].id
        tag = f"{app}_{'collab' if collaborative else 'plain'}"

        # The turn, run in page a: read the live notebook, then propose an edit.
        a.srv.push(
            Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
            Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": target, "new_source": EDITED}}]),
            Reply.text("Changed. END-EDIT"),
        )
        run_cell(a, CELL_ASK)
        diff_a = a.cell(CELL_DATA).locator(PROPOSAL)
        a.wait(lambda: diff_a.count() == 1 and diff_a.is_visible(), 45, "the diff in the page that asked")
        assert "+ " + EDITED in a.text(diff_a)
        assert b.page.locator(PROPOSAL).count() == 0  # one page answers: the other shows no second diff
        a.shot(f"two_pages_{tag}_diff.png", at=diff_a)
        diff_a.get_by_role("button", name="Accept", exact=True).click()
        a.wait(lambda: "END-EDIT" in a.text(a.output(CELL_ASK)), 45, "the answer after Accept")
        told = [m["content"] for m in tool_messages(a)]
        assert "live document in the editor" in told[0], told[0]
        assert "now holds the new source (not run)" in told[-1], told[-1]
        assert a.page.locator(PROPOSAL).count() == 0
        a.wait(lambda: sources(a).count(EDITED) == 1, 10, "the edit in the page that asked")
        b.wait(lambda: sources(b).count(EDITED) == 1, 30, "the edit in the other page")
        a.wait(lambda: count_on_disk(root, EDITED) == 1, 30, "the edit on disk")
        assert "rate = 1" not in sources(a) and "rate = 1" not in sources(b)

        # The same page asks for a new cell: it appears once, in both pages and on disk, tagged.
        a.srv.push(
            Reply.tool_calls([{"name": "insert_cell", "args": {"source": INSERTED}}]),
            Reply.text("Review the new cell. END-INSERT"),
        )
        run_cell(a, CELL_ASK)
        a.wait(lambda: "END-INSERT" in a.text(a.output(CELL_ASK)), 45, "the answer after the insert")
        proposed = f"{PROPOSAL_LINE}\n{INSERTED}"
        a.wait(lambda: sources(a).count(proposed) == 1, 10, "the inserted cell in the page that asked")
        b.wait(lambda: sources(b).count(proposed) == 1, 30, "the inserted cell in the other page")
        a.wait(lambda: count_on_disk(root, INSERTED) == 1, 30, "the inserted cell on disk")
        saved = [c for c in on_disk(root).cells if INSERTED in c.source][0]
        assert "agentik-proposal" in saved.metadata.get("tags", [])
        assert saved.metadata.get("agentik") == {"proposal": True}
        assert sources(a).count(proposed) == 1 and sources(b).count(proposed) == 1  # still once
        for lab in (a, b):  # (Shift+Enter on the last cell adds an empty one)
            assert len([text for text in sources(lab) if text.strip()]) == len(SOURCES) + 1, sources(lab)
        a.shot(f"two_pages_{tag}_a.png")
        b.shot(f"two_pages_{tag}_b.png")

        # Nothing errors: no failed tool in the turn's card, no page error in either page.
        for lab in (a, b):
            assert "✗" not in lab.text(lab.page.locator(".jp-Notebook"))
            errors = [line for line in lab.console if line.startswith("pageerror")]
            assert not [e for e in errors if not (app == "notebook7" and NOTEBOOK7_LOAD_ERROR in e)], lab.console
        assert not any("error" in m["content"].lower()[:80] for m in tool_messages(a)), tool_messages(a)
