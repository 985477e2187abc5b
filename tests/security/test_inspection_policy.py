"""Inspection reads the user's data, not the process.

`inspect_variable` and `describe_dataframe` run without approval, so what they can reach
is what any model (or any text a model read) can read. They take a user variable and a
path of public attributes from it; modules, IPython's own objects, `_private` and dunder
attributes and the process environment are refused with a message that says what is
allowed. Each case below reached the environment or the shell on the code before the fix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from agentik_jupyter.errors import InspectionRefused
from agentik_jupyter.tools.context import make_context_tools

MARKER_NAME = "AGENTIK_POLICY_TEST_SECRET"
MARKER_VALUE = "policy-marker-5d1e9b"


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.setenv(MARKER_NAME, MARKER_VALUE)
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance(config=config)
    sh.run_cell(
        "import os\nimport os as operating_system\nimport pandas as pd\n"
        "sales = pd.DataFrame({'region': ['n', 's'], 'units': [3, 5]})\n"
        "class Holder:\n"
        "    def __init__(self):\n"
        "        self.env = os.environ\n"
        "        self.shell = get_ipython()\n"
        "        self.table = sales\n"
        "        self._secret = 'private'\n"
        "holder = Holder()\n"
        "env_alias = os.environ\n"
        "env_bytes = os.environb\n"
        "env_getter = os.environ.get\n"
        "ip = get_ipython()\n"
        "namespace = globals()\n"
        "config = {'depth': 3}\n",
        store_history=True,
    )
    yield sh
    InteractiveShell.clear_instance()


def tools(sh: InteractiveShell) -> dict[str, Callable[..., Any]]:
    return {t.name: t.execute for t in make_context_tools(sh)}


REFUSED = [
    "os",  # a module
    "os.environ",
    "operating_system.environ",
    "os.path",
    "pd",
    "get_ipython",
    "get_ipython.__self__.user_ns",
    "In",
    "Out",
    "_ih",
    "exit",
    "quit",
    "sales._data",  # a private attribute of a user variable
    "sales.__dict__",
    "sales.__class__",
    "holder._secret",
    "holder.env",  # os.environ reached through a user object
    "holder.shell",  # the shell reached through a user object
    "holder.shell.user_ns",
    "env_alias",  # os.environ under another name
    "env_bytes",
    "env_getter",  # a bound method of os.environ
    "ip",  # the shell, put in a variable by the user
    "ip.user_ns",
    "namespace",  # the kernel's namespace itself
    "config.__class__.__subclasses__",
]


@pytest.mark.parametrize("path", REFUSED)
def test_inspect_variable_refuses_what_is_not_user_data(shell: InteractiveShell, path: str) -> None:
    with pytest.raises(InspectionRefused) as info:
        tools(shell)["inspect_variable"](name=path)
    message = str(info.value)
    assert MARKER_VALUE not in message
    assert "user's own variables" in message and "public attributes" in message


@pytest.mark.parametrize(
    "path", ["os.environ", "holder.env", "env_alias", "get_ipython.__self__.user_ns", "sales._data"]
)
def test_describe_dataframe_refuses_the_same_paths(shell: InteractiveShell, path: str) -> None:
    with pytest.raises(InspectionRefused):
        tools(shell)["describe_dataframe"](name=path)


def test_refusal_names_the_step_and_the_reason(shell: InteractiveShell) -> None:
    inspect_variable = tools(shell)["inspect_variable"]
    with pytest.raises(InspectionRefused, match=r"'os' is a module"):
        inspect_variable(name="os.environ")
    with pytest.raises(InspectionRefused, match=r"'_data' in 'sales\._data' is a private attribute"):
        inspect_variable(name="sales._data")
    with pytest.raises(InspectionRefused, match=r"'holder\.env' is the process environment \(os\.environ\)"):
        inspect_variable(name="holder.env")
    with pytest.raises(InspectionRefused, match=r"'get_ipython' is part of IPython"):
        inspect_variable(name="get_ipython.__self__.user_ns")


def test_user_data_and_public_paths_still_work(shell: InteractiveShell) -> None:
    t = tools(shell)
    assert "pandas DataFrame 'sales'" in t["describe_dataframe"](name="sales").text
    assert "pandas DataFrame 'holder.table'" in t["describe_dataframe"](name="holder.table").text
    assert "units" in t["inspect_variable"](name="sales.columns").text
    assert "'depth': (int) 3" in t["inspect_variable"](name="config").text
    assert "(2, 2)" in t["inspect_variable"](name="sales.shape").text


def test_a_user_object_holding_the_environment_does_not_show_it(shell: InteractiveShell) -> None:
    """The object itself is user data; the environment inside it is shown as a tag, not its items."""
    shell.user_ns["bundle"] = {"env": os.environ, "n": 1}
    t = tools(shell)
    for name in ("holder", "bundle"):
        text = t["inspect_variable"](name=name).text
        assert MARKER_VALUE not in text and MARKER_NAME not in text, text


def test_a_users_own_variable_named_like_an_internal_is_data(shell: InteractiveShell) -> None:
    shell.run_cell("In = [1, 2, 3]", store_history=True)
    assert "length 3" in tools(shell)["inspect_variable"](name="In").text


def test_missing_names_still_get_suggestions(shell: InteractiveShell) -> None:
    with pytest.raises(NameError, match="did you mean 'sales'"):
        tools(shell)["inspect_variable"](name="sale")


def test_pandas_frames_describe_the_same_through_the_policy(shell: InteractiveShell) -> None:
    shell.user_ns["wide"] = pd.DataFrame({f"c{i}": [i] for i in range(3)})
    assert "1 rows × 3 columns" in tools(shell)["describe_dataframe"](name="wide").text
