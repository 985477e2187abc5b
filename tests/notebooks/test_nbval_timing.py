"""A `%%agent --wait` notebook saved with a slow model passes nbval with a fast one, and back.

A live view is built only for a turn that lasts `LIVE_AFTER_S`; the cell's outputs must not
depend on that (nbval compares their number and their text/plain, and ignores display
updates). The notebook is executed and saved with nbclient, then checked with `pytest --nbval`
in a real kernel, each against the fake provider answering the same text at the other speed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply

from tests.kernel_support import NotebookKernel, kernel_env

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]
ANSWER = "The frame has **three** columns and no missing values."
SLOW_S = 0.4  # the model thinks this long first: the live view is built


def reply(slow: bool) -> Reply:
    return Reply.text(ANSWER, chunks=6, first_byte_after=SLOW_S if slow else None)


def saved(tmp_path: Path, slow: bool) -> Path:
    """The notebook run by nbclient and written as `jupyter execute` writes it."""
    path = tmp_path / "turn.ipynb"
    with FakeLLMServer() as llm:
        llm.push(reply(slow))
        nk = NotebookKernel(kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "saved.agentik.db")), tmp_path)
        try:
            nk.run("%load_ext agentik_jupyter")
            nk.run("%%agent --wait\nDescribe the frame.")
            path.write_text(nk.saved())
        finally:
            nk.close()
    return path


def nbval(path: Path, slow: bool, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    with FakeLLMServer() as llm:
        llm.push(reply(slow))
        env = kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "check.agentik.db"), PYTHONPATH=str(ROOT))
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--nbval",
                "--nbval-current-env",
                "-p",
                "no:cacheprovider",
                "-p",
                "tests.nbval_skip",
                "-q",
                "--no-header",
                "-o",
                "addopts=",
                str(path),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=200,
        )


@pytest.mark.parametrize("saved_slow", [True, False], ids=["saved-slow-checked-fast", "saved-fast-checked-slow"])
def test_the_outputs_do_not_depend_on_the_models_speed(tmp_path: Path, saved_slow: bool) -> None:
    path = saved(tmp_path, slow=saved_slow)
    outputs = nbformat.read(path, as_version=4).cells[1].outputs
    widget = "application/vnd.jupyter.widget-view+json"
    assert [o.output_type for o in outputs] == ["display_data", "display_data"] and widget in outputs[0].data
    result = nbval(path, slow=not saved_slow, tmp_path=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "2 passed" in result.stdout
