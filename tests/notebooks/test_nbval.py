"""nbval over notebooks/: every example runs in a real kernel and reproduces its saved outputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.notebook_env import NOTEBOOKS, notebook_env

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("notebook", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_outputs_reproduce(notebook: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            str(Path(__file__).parents[1] / "nbval_sanitize.cfg"),
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.nbval_skip",
            "-q",
            "--no-header",
            "-o",
            "addopts=",
            str(NOTEBOOKS / notebook),
        ],
        cwd=tmp_path,
        env={**notebook_env(tmp_path / "nb.agentik.db", NOTEBOOKS / notebook), "PYTHONPATH": str(NOTEBOOKS.parent)},
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
