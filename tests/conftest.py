"""Shared fixtures and the suite's run settings; the fake LLM server fixtures come from the public pytest plugin."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

pytest.register_assert_rewrite("agentik_jupyter.testing.pytest_plugin")  # (imported below, before pytest would)

from tests.parallel import ModuleOrGroupScheduling, slow_first  # noqa: E402
from tests.shared_servers import POOL  # noqa: E402

pytest_plugins = ["agentik_jupyter.testing.pytest_plugin"]

# Each test process (each xdist worker) keeps what Jupyter writes for the user, such as the
# project-file trust store, in its own folder: workers never rewrite each other's files, and a
# run never touches the real user's.
os.environ.setdefault(
    "JUPYTER_DATA_DIR", tempfile.mkdtemp(prefix=f"agentik-tests-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow_first(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole modules (or `xdist_group` groups) per worker under `--dist loadgroup`."""
    if config.getvalue("dist") == "loadgroup":
        return ModuleOrGroupScheduling(config, log)
    return None


@pytest.fixture(scope="session", autouse=True)
def shared_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The browser modules' shared JupyterLab servers, fake LLM and Chromium (started on first use)
    serve the process's base temp folder; all of them stop when the process's tests end."""
    POOL.start(tmp_path_factory.getbasetemp())
    yield
    POOL.close()
