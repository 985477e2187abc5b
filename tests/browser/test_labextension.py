"""The JupyterLab extension is built and installed where this environment's JupyterLab finds it.

`make test` builds it (scripts/build-labextension.sh); without it a saved notebook shows
the plain HTML transcript and there is no sessions sidebar, so fail loudly here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from jupyter_core.paths import jupyter_path

NAME = "agentik-jupyter"
HOW_TO_BUILD = "build it with `make test` or `bash scripts/build-labextension.sh .venv`"


def installed_extension() -> Path:
    for labextensions in jupyter_path("labextensions"):
        candidate = Path(labextensions) / NAME
        if (candidate / "package.json").is_file():
            return candidate
    raise AssertionError(
        f"{NAME} is not in any labextensions directory {jupyter_path('labextensions')}: {HOW_TO_BUILD}"
    )


def test_built_extension_is_installed() -> None:
    ext = installed_extension()
    meta = json.loads((ext / "package.json").read_text())
    assert meta["name"] == NAME
    build = meta["jupyterlab"].get("_build")
    assert build, f"{ext}/package.json has no jupyterlab._build: not a built extension; {HOW_TO_BUILD}"
    assert (ext / build["load"]).is_file(), f"{ext / build['load']} is missing; {HOW_TO_BUILD}"
    assert {"extension", "mimeExtension", "style"} <= build.keys(), build


def test_jupyterlab_lists_it_enabled() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [line for line in (listing.stdout + listing.stderr).splitlines() if NAME in line]
    assert lines, f"`jupyter labextension list` does not show {NAME}: {HOW_TO_BUILD}\n{listing.stderr}"
    assert "enabled" in lines[0] and "OK" in lines[0], lines[0]


def test_the_versions_agree() -> None:
    """The kernel asks ipywidgets for LiveText at `^{__version__}`, and the extension registers it
    at its VERSION: if the two parted, the answer would stream into a widget error."""
    import re
    import tomllib

    import agentik_jupyter

    root = Path(__file__).resolve().parents[2]
    package = json.loads((root / "labextension" / "package.json").read_text())["version"]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    widget = re.search(
        r"export const VERSION = '([^']+)'", (root / "labextension" / "src" / "livetext_widget.ts").read_text()
    )
    assert widget, "livetext_widget.ts no longer states its VERSION"
    assert {agentik_jupyter.__version__, package, project, widget.group(1)} == {package}
