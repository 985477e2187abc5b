"""Which notebook the kernel runs, and where its sessions file goes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentik_jupyter.persistence import db_path_for, find_notebook_path, locate_db
from agentik_jupyter.persistence.paths import NOT_FOUND

NB = "/home/ana/projects/sales/Q3 report.ipynb"


@pytest.mark.parametrize(
    "user_ns, environ, expected, source",
    [
        ({}, {"JPY_SESSION_NAME": NB}, NB, "JPY_SESSION_NAME"),
        ({"__session__": NB}, {}, NB, "__session__"),
        ({"__vsc_ipynb_file__": NB}, {}, NB, "VS Code"),
        ({"__session__": "/other.ipynb"}, {"JPY_SESSION_NAME": NB}, NB, "JPY_SESSION_NAME"),
        ({"__session__": NB}, {"JPY_SESSION_NAME": "console-7f3a"}, NB, "__session__"),
        ({"__vsc_ipynb_file__": NB}, {"JPY_SESSION_NAME": "Untitled console"}, NB, "VS Code"),
        ({"__session__": "/tmp/UPPER.IPYNB"}, {}, "/tmp/UPPER.IPYNB", "__session__"),
    ],
)
def test_found(user_ns: dict, environ: dict, expected: str, source: str) -> None:
    path, how = find_notebook_path(user_ns, environ)
    assert path == Path(expected)
    assert source in how


@pytest.mark.parametrize(
    "user_ns, environ",
    [
        ({}, {}),
        ({}, {"JPY_SESSION_NAME": "console-1"}),
        ({"__session__": "a console"}, {"JPY_SESSION_NAME": ""}),
        ({"__session__": 42, "__vsc_ipynb_file__": None}, {}),
        ({"__vsc_ipynb_file__": "/x/script.py"}, {}),
    ],
)
def test_not_found(user_ns: dict, environ: dict) -> None:
    assert find_notebook_path(user_ns, environ) == (None, NOT_FOUND)


def test_relative_name_is_taken_in_the_kernels_folder(tmp_path: Path) -> None:
    path, _ = find_notebook_path({}, {"JPY_SESSION_NAME": "sub/nb.ipynb"}, cwd=tmp_path)
    assert path == tmp_path / "nb.ipynb"


def test_db_beside_the_notebook(tmp_path: Path) -> None:
    assert db_path_for(Path(NB), {}, tmp_path) == Path("/home/ana/projects/sales/Q3 report.agentik.db")


def test_db_fallback_is_the_working_directory(tmp_path: Path) -> None:
    assert db_path_for(None, {}, tmp_path) == tmp_path / "agentik.agentik.db"


@pytest.mark.parametrize("notebook", [Path(NB), None])
def test_env_override(tmp_path: Path, notebook: Path | None) -> None:
    assert db_path_for(notebook, {"AGENTIK_DB_PATH": "/data/all.db"}, tmp_path) == Path("/data/all.db")
    assert db_path_for(notebook, {"AGENTIK_DB_PATH": "rel/s.db"}, tmp_path) == tmp_path / "rel/s.db"
    assert db_path_for(notebook, {"AGENTIK_DB_PATH": "~/s.db"}, tmp_path) == Path.home() / "s.db"
    blank = db_path_for(notebook, {"AGENTIK_DB_PATH": "  "}, tmp_path)
    assert blank.name.endswith(".agentik.db")


def test_locate_db_tells_the_story(tmp_path: Path) -> None:
    found = locate_db({"__session__": str(tmp_path / "a.ipynb")}, {}, tmp_path)
    assert found.db_path == tmp_path / "a.agentik.db" and found.notebook_path == tmp_path / "a.ipynb"
    lost = locate_db({}, {}, tmp_path)
    assert lost.notebook_path is None and "working directory" in lost.describe()
    forced = locate_db({}, {"AGENTIK_DB_PATH": str(tmp_path / "x.db")}, tmp_path)
    assert forced.db_path == tmp_path / "x.db" and "AGENTIK_DB_PATH" in forced.source
