"""Re-execute notebooks/ with the demo model and save their outputs (what nbval compares).

Run after changing anything that shows in a notebook's output:
    .venv/bin/python scripts/refresh_notebooks.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.notebook_env import NOTEBOOKS, notebook_env  # noqa: E402


def main() -> int:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        with tempfile.TemporaryDirectory() as tmp:
            env = notebook_env(Path(tmp) / "nb.agentik.db", path)
            saved = dict(os.environ)
            os.environ.clear()
            os.environ.update(env)
            try:
                nb = nbformat.read(path, as_version=4)
                NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
            finally:
                os.environ.clear()
                os.environ.update(saved)
            nbformat.write(nb, path)
            print(f"refreshed {path.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
