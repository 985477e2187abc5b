"""A saved transcript's rejected edit is marked "rejected", not ✓ (JupyterLab's transcript renderer).

Headless Debian Chromium, no kernel run: the notebook of tests/browser/test_contrast.py, whose
saved turn holds an accepted and a rejected edit_cell card.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.test_contrast import CELL_SAVED, contrast_lab  # noqa: E402  (skips without chromium)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


def test_a_saved_rejected_edit_is_marked_rejected(tmp_path: Path) -> None:
    with contrast_lab(tmp_path, "light") as lab:
        transcript = lab.cell(CELL_SAVED).locator(".jp-AgentikTranscript").first
        # The renderer's node is on the page before its entries (Markdown renders asynchronously),
        # and its status line is drawn after them: the user reads the cards once it shows.
        lab.wait(lambda: transcript.locator(":scope > .agentik-status").count() == 1, 120, "the saved transcript")
        titles = [lab.text(s) for s in transcript.locator("details.agentik-tool > summary").all()]
        assert len(titles) == 2, titles
        accepted, rejected = titles
        assert accepted.startswith("✓ edit_cell("), accepted
        assert rejected.startswith("⊘ edit_cell(") and "· rejected" in rejected and "✓" not in rejected, rejected
        lab.shot("rejected_mark.png", at=transcript)
