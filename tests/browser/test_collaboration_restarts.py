"""With jupyter-collaboration, a notebook reopened after server restarts shows what its file holds, and typing goes where the user types.

A real JupyterLab with collaboration and its SQLite YStore, restarted on the same address between
rounds; in each round a fresh page (a new browser context in the shared Chromium) opens the
notebook, the user types at the end of their raw cell and saves. The room of a restarted server
is loaded from the YStore's history: the page must show the whole text, and the next words must
land at its end in the file.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser import save_artifact  # noqa: E402  (skips the module when chromium is missing)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

from playwright import sync_api  # noqa: E402

from agentik_jupyter.testing.jupyter_server import jupyter  # noqa: E402
from agentik_jupyter.testing.lab_dialogs import continue_waiting  # noqa: E402
from tests.shared_servers import new_context  # noqa: E402

NOTEBOOK = "restarts.ipynb"
OPEN_MS = 90_000
SAVE_S = 30.0
WORDS = ("-one", "-two", "-three")


def users_text(root: Path) -> str:
    """The user's cell as the file holds it; "" while the server is writing the file (it writes in
    place, so a read can see it empty or cut short)."""
    try:
        source = json.loads((root / NOTEBOOK).read_text())["cells"][0]["source"]
    except json.JSONDecodeError:
        return ""
    return source if isinstance(source, str) else "".join(source)


@pytest.fixture
def playwright() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        yield p


def test_a_page_after_server_restarts_shows_the_file_and_types_at_its_end(
    tmp_path_factory: pytest.TempPathFactory, playwright: Any
) -> None:
    base = tmp_path_factory.mktemp("collaboration-restarts")
    root, home = base / "root", base / "home"
    root.mkdir()
    home.mkdir()
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [{"cell_type": "raw", "id": "user", "metadata": {}, "source": "start"}],
    }
    (root / NOTEBOOK).write_text(json.dumps(notebook))
    token, port, expected = secrets.token_hex(8), None, "start"
    for word in (*WORDS, None):
        with jupyter(root, home, app="lab", collaborative=True, timeout=120, port=port, token=token) as server:
            port = int(server.url.rsplit(":", 1)[1])
            browser, context = new_context(playwright, viewport={"width": 1200, "height": 900})
            try:
                page = context.new_page()
                page.goto(server.link(f"/lab/tree/{NOTEBOOK}", reset=True), timeout=OPEN_MS)
                editor = page.locator(".jp-Notebook .jp-RawCell .cm-content")
                try:
                    page.wait_for_function(
                        "([editor, text]) => editor.textContent === text",
                        arg=[editor.element_handle(timeout=OPEN_MS), expected],
                        timeout=OPEN_MS,
                    )
                except sync_api.Error:
                    save_artifact("collaboration-restarts.log", server.log())
                    shown = editor.text_content()
                    pytest.fail(f"after a restart the page shows {shown!r}; the file holds {users_text(root)!r}")
                if word is None:
                    break
                # as a user does: type once the notebook's kernel is ready (its first save is done by then)
                page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=OPEN_MS)
                page.wait_for_selector(".jp-mod-current.jp-mod-dirty", state="detached", timeout=OPEN_MS)
                continue_waiting(page, OPEN_MS)
                editor.click()
                page.keyboard.press("Control+End")
                page.keyboard.type(word)
                page.keyboard.press("Escape")
                page.keyboard.press("Control+s")
                expected += word
                deadline = time.monotonic() + SAVE_S
                while users_text(root) != expected:
                    assert time.monotonic() < deadline, f"the file holds {users_text(root)!r}, not {expected!r}"
                    time.sleep(0.1)
            finally:
                context.close()
                browser.close()
