"""The JupyterLab extensions installed with the test extra agree with the JupyterLab installed.

jupyter-collaboration's line must match JupyterLab's (4.x wants @jupyter/ydoc 3, JupyterLab 4.6
ships 4): a mismatch shows as red X's in `jupyter labextension list`, a failed plugin in the
browser console and an unusable Notebook 7. Read from this venv, as a developer would see it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)


def test_jupyter_labextension_list_shows_no_error() -> None:
    jupyter = Path(sys.executable).parent / "jupyter"
    listed = subprocess.run(
        [str(jupyter), "labextension", "list"], capture_output=True, text=True, timeout=100, check=False
    )
    shown = listed.stdout + listed.stderr
    assert listed.returncode == 0, shown
    assert "agentik-jupyter" in shown and "enabled" in shown, shown
    assert "not compatible" not in shown and " X" not in shown, shown
