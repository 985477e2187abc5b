"""The soak's page: the notebook opened in JupyterLab in headless Chromium (Playwright), typed into, saved, closed.

The soak launches Debian's chromium itself, or connects to one already running (`cdp`: the tests'
shared browser). A page lives only as long as the step that opens it: without collaboration the
soak also saves through the contents API, and a page left open would hold a model older than the
file. With collaboration the user types only in pages (their shared document is the notebook).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from agentik_jupyter.testing.chromium import CHROMIUM, CHROMIUM_ARGS
from agentik_jupyter.testing.lab_dialogs import continue_waiting

from .world import SoakError, World

OPEN_MS = 90_000
SAVE_MS = 60_000


class Browser:
    """One Chromium for the whole run; `page()` opens the world's notebook in a fresh context."""

    def __init__(self, cdp: str | None = None) -> None:
        self._cdp = cdp
        self._stack = contextlib.ExitStack()
        self._browser: Any = None
        self.conflicts = 0
        """File Changed dialogs its pages answered (`Page.answer_dialogs`)."""

    def __enter__(self) -> Browser:
        from playwright.sync_api import sync_playwright

        playwright = self._stack.enter_context(sync_playwright())
        if self._cdp:
            self._browser = playwright.chromium.connect_over_cdp(self._cdp, timeout=OPEN_MS)
        else:
            self._browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            self._stack.callback(self._browser.close)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @contextlib.contextmanager
    def page(self, world: World) -> Iterator[Page]:
        context = self._browser.new_context(viewport={"width": 1200, "height": 900})
        page = Page(context, world)
        try:
            page.open()
            world.wait_for_page(OPEN_MS / 1000)  # (steps open a page before a turn: the shell is free)
            yield page
        finally:
            self.conflicts += page.conflicts
            context.close()


class Page:
    """The notebook in JupyterLab, as a user has it in a tab."""

    def __init__(self, context: Any, world: World) -> None:
        self.context = context
        self.page = context.new_page()
        self.world = world
        self.conflicts = 0
        """JupyterLab's "File Changed" dialogs this page answered (`answer_dialogs`)."""

    def open(self) -> None:
        """Open (or reopen) the notebook where it is now, and wait until its kernel is idle."""
        server = self.world.server
        if server is None:
            raise SoakError("no server to open the page on")
        try:
            self.page.goto(server.link(f"/lab/tree/{self.world.path}", reset=True), timeout=OPEN_MS)
            self.page.locator(".jp-Notebook .jp-Cell").nth(1).wait_for(timeout=OPEN_MS)
            self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=OPEN_MS)
        except Exception as exc:  # Playwright's timeout: the page never showed the notebook
            raise SoakError(f"the notebook did not open in the page: {exc}") from exc

    def type_into_users_cell(self, text: str, holds: str) -> None:
        """Type `text` at the end of the user's cell (the notebook's one raw cell: its editor always
        shows), wherever the agent's cells have put it, once the cell shows what the user typed
        before (`holds`): with collaboration a page just opened may get the shared document after
        its editor, and a caret put at the end before then is not at the end (the text went in the
        middle of the cell)."""
        editor = self.page.locator(".jp-Notebook .jp-RawCell").locator(".cm-content")
        self.answer_dialogs()
        editor.click()
        tail = holds.replace("\n", "")[-24:]  # (the editor's lines are elements: no newline in its text)
        try:
            self.page.wait_for_function(
                "([editor, tail]) => editor.textContent.endsWith(tail)",
                arg=[editor.element_handle(timeout=OPEN_MS), tail],
                timeout=SAVE_MS,
            )
        except Exception as exc:  # Playwright's timeout
            shown = editor.text_content(timeout=OPEN_MS) or ""
            raise SoakError(
                f"the page never showed the user's cell as the file holds it: the file's cell ends with"
                f" {tail!r}, the page's with {shown[-80:]!r} ({len(shown)} characters): {exc}"
            ) from exc
        self.page.keyboard.press("Control+End")
        self.page.keyboard.type(text)
        self.page.keyboard.press("Escape")

    def select_last_cell(self) -> None:
        """Click the last cell: the agent's cells go below the active one, under everything."""
        self.answer_dialogs()
        self.page.locator(".jp-Notebook .jp-Cell").last.locator(".jp-InputPrompt").click()
        self.page.keyboard.press("Escape")

    def add_cell(self, text: str) -> None:
        """A new code cell below the last one, holding `text` (command mode's B, then typing)."""
        self.select_last_cell()
        count = self.page.locator(".jp-Notebook .jp-Cell").count()
        self.page.keyboard.press("b")
        self.page.locator(".jp-Notebook .jp-Cell").nth(count).wait_for(timeout=OPEN_MS)
        self.page.keyboard.press("Enter")
        self.page.keyboard.type(text)
        self.page.keyboard.press("Escape")

    def cells_holding(self, text: str) -> int:
        return int(self.page.locator(".jp-Notebook .jp-Cell").filter(has_text=text).count())

    def answer_dialogs(self) -> None:
        """Answer the dialogs collaboration shows under load, as the user would: "taking some time
        to load" with Continue waiting (`continue_waiting`), and "File Changed"
        (`answer_file_changed`). One look for any dialog first: this runs in every poll."""
        if not self.page.locator(".jp-Dialog").count():
            return
        try:
            continue_waiting(self.page, OPEN_MS)
        except Exception as exc:  # Playwright's timeout: the dialog stayed
            raise SoakError(f"the Loading dialog did not take Continue waiting: {exc}") from exc
        self.answer_file_changed()

    def answer_file_changed(self) -> None:
        """Answer JupyterLab's "File Changed" dialog, if it shows, with Overwrite, as the user would
        with collaboration on: the page holds the shared document the server saves anyway. Under load
        the dialog can come at a save when the server's own autosave changed the file's hash just
        before and the page had not heard of it yet (jupyter-collaboration's save race); it covers
        the page's buttons until answered. Whatever it did to the file, the soak's checks read it.
        Without collaboration the dialog is left alone: there it would be a real conflict."""
        dialog = self.page.locator(".jp-Dialog").filter(has_text="File Changed")
        if not self.world.collaborative or not dialog.count():
            return
        try:
            dialog.get_by_role("button", name="Overwrite", exact=True).click(timeout=OPEN_MS)
            dialog.wait_for(state="detached", timeout=OPEN_MS)
        except Exception as exc:  # Playwright's timeout: the dialog stayed
            raise SoakError(f"JupyterLab's File Changed dialog did not take Overwrite: {exc}") from exc
        self.conflicts += 1

    def save(self, saved: Callable[[], bool]) -> None:
        """File › Save (Ctrl+S), and wait until the file on disk is `saved`."""
        self.page.keyboard.press("Control+s")
        end = time.monotonic() + SAVE_MS / 1000
        while not saved():
            self.answer_dialogs()
            if time.monotonic() > end:
                raise SoakError("the page's save never reached the file")
            time.sleep(0.1)

    def reopen(self) -> None:
        """Close the tab without its unload prompts (as a closed browser or a lost connection
        leaves it) and open the notebook again in a new one."""
        self.page.close(run_before_unload=False)
        self.page = self.context.new_page()
        self.open()


def decide(pages: list[Page], holding: str, button: str, ended: Callable[[], bool]) -> Page | None:
    """Wait for the agent's diff on the cell holding `holding` in any of `pages` (the kernel asks one
    of them) and press `button` (Accept, Reject) there; None when the turn `ended` without one (its
    edit shown in its tool card instead)."""
    end = time.monotonic() + OPEN_MS / 1000
    while True:
        for page in pages:
            page.answer_dialogs()
            diff = page.page.locator(".jp-Notebook .jp-Cell").filter(has_text=holding).locator(".agentik-proposal")
            pressed = diff.get_by_role("button", name=button, exact=True)
            if pressed.count():
                try:
                    pressed.click(timeout=OPEN_MS)
                    diff.wait_for(state="detached", timeout=OPEN_MS)
                except Exception as exc:  # Playwright's timeout: the click did not take
                    raise SoakError(f"{button} on the cell holding {holding!r} did not take: {exc}") from exc
                return page
        if ended():
            return None
        if time.monotonic() > end:
            raise SoakError(f"no diff on the cell holding {holding!r}, and the turn goes on")
        time.sleep(0.1)
