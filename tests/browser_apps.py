"""The two frontends a browser walk runs in: JupyterLab and Notebook 7, one server and page each.

The same prebuilt lab extension serves both; what differs is the URL a notebook opens at, how
the user reaches the left area (JupyterLab's side bar tab vs Notebook 7's View > Left Sidebar
menu) and how an unsaved change shows. A walk module takes `app_page` (parametrized over
`APPS`) and names its screenshots with `shot` so each app's land side by side in tests/artifacts/.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)

APPS = ("jupyterlab", "notebook7")
SIDEBAR = ".jp-AgentikSidebar"
IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle'], .jp-NotebookKernelStatus:has-text('Idle')"
"""The kernel shown idle: JupyterLab's execution indicator, Notebook 7's kernel status."""


def url_path(app: str, notebook: str) -> str:
    """Where `notebook` opens in `app` (JupyterLab gets ?reset: no workspace from an earlier run)."""
    return f"/lab/tree/{notebook}" if app == "jupyterlab" else f"/notebooks/{notebook}"


def reset(app: str) -> bool:
    return app == "jupyterlab"


def app_page_fixture(notebook: str, sources: list[str], name: str) -> Any:
    """A module's `app_page` fixture: `notebook` of these code cells open in JupyterLab, then in
    Notebook 7 (module-scoped, parametrized over APPS), artifacts named `<app>-<name>`; a module
    takes it with `app_page = app_page_fixture(NOTEBOOK, SOURCES, "rewind")`."""

    @pytest.fixture(scope="module", params=APPS)
    def app_page(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
        app = str(request.param)
        with notebook_page(
            tmp_path_factory,
            notebook,
            sources,
            artifact=f"{app}-{name}",
            url_path=url_path(app, notebook),
            reset=reset(app),
        ) as lab:
            lab.app = app  # type: ignore[attr-defined]
            assert is_notebook7(lab) == (app == "notebook7")
            yield lab

    return app_page


def server_api(lab: Lab, path: str, method: str = "GET") -> Any:
    """The Jupyter server's REST API as the page's user (its token): `path` (/api/sessions,
    /api/contents/x.ipynb, ...) in the module's folder; JSON back."""
    request = urllib.request.Request(
        f"{lab.server.url}{lab.server.at(path)}?token={lab.server.token}",
        method=method,
        data=b"{}" if method == "POST" else None,
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read() or b"null")


def app_of(lab: Lab) -> str:
    return str(lab.app)


def shot(lab: Lab, name: str, at: Any = None) -> None:
    """tests/artifacts/<app>_<name>: the same step's screenshot in both apps, side by side."""
    lab.shot(f"{app_of(lab)}_{name}", at=at)


def is_notebook7(lab: Lab) -> bool:
    """Notebook 7 has no JupyterLab shell: a check that the walk really runs where it says."""
    return lab.page.locator(".jp-LabShell").count() == 0


def open_sessions_sidebar(lab: Lab) -> Any:
    """Show the "Agent sessions" panel the way a user does in this app, and return it."""
    page = lab.page
    if app_of(lab) == "jupyterlab":
        page.locator('.jp-SideBar [data-id="agentik-sessions"]').click()
    else:
        page.get_by_role("menuitem", name="View").click()
        page.locator(".lm-Menu-item", has_text="Left Sidebar").click()  # (a submenu item has no role)
        page.get_by_role("menuitem", name="Show Agent sessions").click()
    sidebar = page.locator(SIDEBAR)
    lab.wait(lambda: sidebar.is_visible(), 10, "the Agent sessions panel")
    return sidebar


# The app's own "Leave site?" hook, asked as the browser asks it when the page is closed: it sets
# the event's returnValue to its warning when there are unsaved changes (Chromium shows the
# dialog only after a user gesture, so the event is dispatched here and its answer caught).
LEAVE_WARNING = """() => {
  const event = new Event('beforeunload', { cancelable: true });
  let warning = null;
  Object.defineProperty(event, 'returnValue', { get: () => warning, set: value => { warning = value; } });
  window.dispatchEvent(event);
  return warning;
}"""


def unsaved_changes(lab: Lab) -> bool:
    """Whether the app holds unsaved changes, as the user learns it: JupyterLab marks the tab;
    Notebook 7's only sign is the warning when the page is left."""
    page = lab.page
    if app_of(lab) == "jupyterlab":
        return page.locator(".lm-TabBar-tab.jp-mod-dirty").count() > 0
    return bool(page.evaluate(LEAVE_WARNING))


def restart_from_the_menu(lab: Lab) -> None:
    """Kernel > Restart Kernel…, then Restart in the dialog that asks: the page restarts the kernel
    itself, as a user does, so it knows of the new kernel before the next cell runs."""
    lab.page.get_by_role("menuitem", name="Kernel", exact=True).click()
    lab.page.locator(".lm-Menu-item", has_text="Restart Kernel…").first.click()
    dialog = lab.page.locator(".jp-Dialog")
    dialog.locator(".jp-Dialog-button.jp-mod-accept").click(timeout=60_000)
    dialog.wait_for(state="detached", timeout=60_000)
