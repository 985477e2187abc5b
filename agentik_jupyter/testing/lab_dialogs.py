"""Answers to the dialogs JupyterLab's collaboration shows on a loaded machine, as a user gives them."""

from __future__ import annotations

from typing import Any

LOADING = "taking some time to load"
"""jupyter-collaboration's "The document is taking some time to load" dialog."""


def continue_waiting(page: Any, timeout_ms: float) -> bool:
    """Answer the Loading dialog, if `page` (a Playwright page) shows it, with Continue waiting,
    and wait until it is gone; True when there was one. It comes when a room loads slowly (a loaded
    machine, a restarted server's YStore) and stays over every click until answered, even once the
    document is there. Playwright's timeout error when the dialog does not take the answer."""
    dialog = page.locator(".jp-Dialog").filter(has_text=LOADING)
    if not dialog.count():
        return False
    dialog.get_by_role("button", name="Continue waiting", exact=True).click(timeout=timeout_ms)
    dialog.wait_for(state="detached", timeout=timeout_ms)
    return True
