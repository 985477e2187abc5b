"""Notebook-context tools on real objects: an in-process IPython shell, then a real kernel."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from agentik_jupyter.core.orchestrator import Orchestrator
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.notebook.cells import PROPOSAL_LINE
from agentik_jupyter.notebook.tools import insert_cell_tool
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.context import (
    CodeExecutionError,
    make_context_tools,
    register_context_tools,
    summarize_variables,
    variables_of,
)
from agentik_jupyter.tools.dataframes import BUDGET_CHARS, MAX_COLUMNS
from agentik_jupyter.tools.inspection import INSPECT_BUDGET_CHARS
from agentik_jupyter.tools.registry import ToolRegistry, definition_from_function
from agentik_jupyter.types import ChatMessage, ToolOutput

BIG_ROWS = 10_000_000
WIDE_COLUMNS = 500


def fresh_shell() -> InteractiveShell:
    """A new global shell (display() publishes through the global one), history in memory."""
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    return InteractiveShell.instance(config=config)


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    yield fresh_shell()
    InteractiveShell.clear_instance()


def tools_of(sh: InteractiveShell) -> dict[str, Any]:
    return {t.name: t.execute for t in make_context_tools(sh)}


def run(sh: InteractiveShell, code: str) -> None:
    sh.run_cell(code, store_history=True)


@pytest.fixture(scope="module")
def big_frame() -> pd.DataFrame:
    """10M rows × 500 columns that share two numpy arrays (160 MB, not 40 GB)."""
    ints = np.arange(BIG_ROWS, dtype=np.int64)
    floats = ints.astype(np.float64)
    floats[::7] = np.nan
    columns = {f"i{k}": ints for k in range(WIDE_COLUMNS // 2)}
    columns.update({f"f{k}": floats for k in range(WIDE_COLUMNS // 2)})
    return pd.DataFrame(columns, copy=False)


def mixed_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [31.0, np.nan, 45.0, 22.0, np.nan],
            "city": ["Paris", "Lyon", None, "Paris", "Nice"],
            "active": [True, False, True, True, False],
            "joined": pd.to_datetime(["2020-01-01", None, "2021-06-01", "2022-02-02", "2023-03-03"]),
            "tier": pd.Categorical(["a", "b", "a", "a", "c"]),
            "<b>score</b>": [1, 2, 3, 4, 5],
        }
    )


# ---- list_variables / summarize_variables ----


def test_list_variables_shows_only_user_data(shell: InteractiveShell) -> None:
    run(
        shell,
        "import numpy as np\nimport os\nx = 3\nname = 'abc'\narr = np.zeros((4, 5))\n"
        "def helper(): pass\nclass Thing: pass\n_private = 1\nd = {'a': 1}\n1 + 1",
    )
    out = tools_of(shell)["list_variables"]()
    names = [line.split(":")[0].strip() for line in out.text.splitlines()[1:]]
    assert names == ["x", "name", "arr", "d"]
    assert "(4, 5)" in out.text and "len=1" in out.text and "len=3" in out.text
    for internal in ("In", "Out", "_", "_i1", "exit", "quit", "get_ipython", "np", "helper", "Thing"):
        assert internal not in names
    assert "<table>" in out.display["text/html"]


def test_list_variables_on_an_empty_namespace(shell: InteractiveShell) -> None:
    assert "No user variables" in tools_of(shell)["list_variables"]().text


def test_summarize_variables_is_cheap_and_never_reprs(big_frame: pd.DataFrame) -> None:
    class Explosive:
        def __repr__(self) -> str:
            raise AssertionError("repr must not be called")

        def __len__(self) -> int:
            raise AssertionError("len of an unknown type must not be called")

    ns = {"big": big_frame, "boom": Explosive(), "np": np, "_hidden": 1, "In": []}
    ns.update({f"v{i}": i for i in range(100)})
    started = time.perf_counter()
    summary = summarize_variables(ns, limit=50)
    assert time.perf_counter() - started < 0.5
    assert len(summary) == 50 and summary[-1].name == "v99"
    everything = {s.name: s for s in summarize_variables(ns, limit=1_000)}
    assert everything["big"].shape == f"({BIG_ROWS}, {WIDE_COLUMNS})" and everything["big"].type == "pandas.DataFrame"
    assert everything["boom"].shape is None
    assert not {"np", "_hidden", "In"} & set(everything)


def test_variables_of_uses_the_shells_hidden_names(shell: InteractiveShell) -> None:
    run(shell, "In = 'mine'\nrows = [1, 2]")
    names = [v.name for v in variables_of(shell)]
    assert names == ["In", "rows"]  # a user's own `In` is data; IPython's is not


# ---- inspect_variable ----


def test_inspect_numpy_array_summary(shell: InteractiveShell) -> None:
    shell.user_ns["arr"] = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    text = tools_of(shell)["inspect_variable"](name="arr").text
    assert "float64" in text and "(2, 3)" in text
    assert "min 1" in text and "max 6" in text and "mean 3.8" in text and "NaN 1" in text


def test_inspect_huge_array_is_sampled_and_quick(shell: InteractiveShell) -> None:
    shell.user_ns["huge"] = np.arange(30_000_000, dtype=np.float32)
    started = time.perf_counter()
    text = tools_of(shell)["inspect_variable"](name="huge").text
    assert time.perf_counter() - started < 2.0
    assert "sampled" in text and len(text) <= INSPECT_BUDGET_CHARS and "..." in text


def test_inspect_containers_show_first_items(shell: InteractiveShell) -> None:
    shell.user_ns["d"] = {f"key{i}": list(range(i)) for i in range(100)}
    shell.user_ns["items"] = list(range(10_000))
    tools = tools_of(shell)
    d_text = tools["inspect_variable"](name="d").text
    assert "length 100" in d_text and "'key0'" in d_text and "'key19'" in d_text and "'key20'" not in d_text
    assert "80 more" in d_text
    l_text = tools["inspect_variable"](name="items").text
    assert "length 10,000" in l_text and "[19] 19" in l_text and "9,980 more" in l_text
    assert max(len(d_text), len(l_text)) <= INSPECT_BUDGET_CHARS


def test_inspect_other_objects_and_attribute_paths(shell: InteractiveShell) -> None:
    run(
        shell,
        "class Model:\n    def __init__(self):\n        self.coef_ = [0.5, 2.0]\n        self.name = 'x' * 10000\n"
        "m = Model()\ntext = 'hello ' * 5000",
    )
    tools = tools_of(shell)
    m_text = tools["inspect_variable"](name="m").text
    assert "attributes: coef_, name" in m_text and len(m_text) <= INSPECT_BUDGET_CHARS
    assert "[0.5, 2.0]" in tools["inspect_variable"](name="m.coef_").text
    s_text = tools["inspect_variable"](name="text").text
    assert "length 30,000" in s_text and len(s_text) < 2_200


def test_inspect_missing_name_suggests_close_matches(shell: InteractiveShell) -> None:
    shell.user_ns["df"] = mixed_frame()
    inspect_variable = tools_of(shell)["inspect_variable"]
    with pytest.raises(NameError, match=r"no variable named 'dff'; did you mean 'df'\?"):
        inspect_variable(name="dff")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        inspect_variable(name="df.nope")


# ---- describe_dataframe ----


def test_describe_mixed_pandas_frame(shell: InteractiveShell) -> None:
    shell.user_ns["df"] = mixed_frame()
    out = tools_of(shell)["describe_dataframe"](name="df")
    text = out.text
    assert "5 rows × 6 columns" in text
    for col, dtype in [("age", "float64"), ("active", "bool"), ("joined", "datetime64"), ("tier", "category")]:
        assert f"{col}: {dtype}" in text
    assert "age: float64; 2 nulls (40.0%); min 22, max 45" in text
    assert "city:" in text and "top 'Paris' (2)" in text
    assert "first 5 rows" in text
    html = out.display["text/html"]
    assert "<table" in html and "&lt;b&gt;score&lt;/b&gt;" in html and "<b>score</b>" not in html


def test_describe_10m_by_500_frame_stays_within_budget(shell: InteractiveShell, big_frame: pd.DataFrame) -> None:
    shell.user_ns["big"] = big_frame
    shell.user_ns["small"] = big_frame.iloc[:100].copy()
    shell.user_ns["tiny"] = mixed_frame()
    describe = tools_of(shell)["describe_dataframe"]
    started = time.perf_counter()
    big = describe(name="big")
    elapsed = time.perf_counter() - started
    small, tiny = describe(name="small"), describe(name="tiny")
    assert elapsed < 5.0, f"describe took {elapsed:.2f}s"
    assert len(big.text) <= BUDGET_CHARS
    assert 0.5 < len(big.text) / len(small.text) < 2  # same width: same cost, whatever the length
    assert len(big.text) < 10 * len(tiny.text)
    assert f"{MAX_COLUMNS} of {WIDE_COLUMNS:,} profiled" in big.text and "more columns" in big.text
    assert "random sample of 100,000 rows" in big.text and "random sample" not in small.text
    assert len(big.display["text/html"]) < 30_000


def test_describe_selected_columns_and_unknown_ones(shell: InteractiveShell, big_frame: pd.DataFrame) -> None:
    shell.user_ns["big"] = big_frame
    describe = tools_of(shell)["describe_dataframe"]
    text = describe(name="big", columns=["f200", "i7"]).text
    assert "2 of 500 profiled" in text and "  f200: float64" in text and "  i7: int64" in text
    estimated = float(re.search(r"f200: float64; ≈([\d.]+)% null \(sample\)", text).group(1))
    assert abs(estimated - 100 / 7) < 1  # every 7th value is NaN
    with pytest.raises(KeyError, match="no column.*'f2000'.*did you mean"):
        describe(name="big", columns=["f2000"])


def test_describe_rejects_non_frames_and_describes_series(shell: InteractiveShell) -> None:
    shell.user_ns["x"] = [1, 2]
    shell.user_ns["s"] = pd.Series([1.5, None, 3.0], name="price")
    describe = tools_of(shell)["describe_dataframe"]
    with pytest.raises(TypeError, match="not a DataFrame; use inspect_variable"):
        describe(name="x")
    assert "pandas Series 's'" in describe(name="s").text and "price: float64; 1 nulls" in describe(name="s").text


def test_describe_polars_frames(shell: InteractiveShell) -> None:
    pl = pytest.importorskip("polars")
    sh = shell
    series = pl.Series("n", np.arange(BIG_ROWS, dtype=np.int64))
    sh.user_ns["big"] = pl.DataFrame([series.alias(f"c{k}") for k in range(WIDE_COLUMNS)])
    sh.user_ns["small"] = pl.DataFrame(
        {"age": [31.0, None, 45.0], "city": ["Paris", None, "Paris"], "ok": [True, False, True]}
    )
    sh.user_ns["lazy"] = sh.user_ns["small"].lazy()
    describe = tools_of(sh)["describe_dataframe"]
    small = describe(name="small")
    assert "3 rows × 3 columns" in small.text and "age: Float64; 1 nulls (33.3%)" in small.text
    assert "top 'Paris' (2)" in small.text and "<table" in small.display["text/html"]
    started = time.perf_counter()
    big = describe(name="big")
    assert time.perf_counter() - started < 5.0
    assert len(big.text) <= BUDGET_CHARS and f"{MAX_COLUMNS} of {WIDE_COLUMNS} profiled" in big.text
    assert "not collected" in describe(name="lazy").text


def test_tools_never_import_pandas_or_polars() -> None:
    code = (
        "import sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "from agentik_jupyter.tools.context import make_context_tools\n"
        "sh = InteractiveShell.instance(); sh.user_ns.update(d={'a': [1]}, n=3)\n"
        "t = {x.name: x.execute for x in make_context_tools(sh)}\n"
        "t['list_variables'](); t['inspect_variable'](name='d')\n"
        "try:\n    t['describe_dataframe'](name='d')\nexcept TypeError:\n    pass\n"
        "print(sorted(m for m in ('pandas', 'polars', 'numpy', 'matplotlib') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# ---- get_cell_history ----


def test_cell_history_has_inputs_outputs_and_errors(shell: InteractiveShell) -> None:
    tools = tools_of(shell)  # hooks post_run_cell before the cells run
    run(shell, "a = 40")
    run(shell, "a + 2")
    run(shell, "1 / 0")
    run(shell, "%%agent\nwhat is a?")
    text = tools["get_cell_history"](last_n=5).text
    assert text.index("In [1]:") < text.index("In [2]:") < text.index("In [3]:")
    assert "Out[2]: 42" in text and "ZeroDivisionError: division by zero" in text
    assert "what is a?" not in text
    assert "In [1]" not in tools["get_cell_history"](last_n=2).text


def test_cell_history_is_bounded(shell: InteractiveShell) -> None:
    tools = tools_of(shell)
    for i in range(40):
        run(shell, f"v{i} = '{'x' * 5_000}'\n'{'y' * 5_000}'")
    text = tools["get_cell_history"](last_n=1_000).text
    assert len(text) <= 8_000 and "In [40]:" in text and "In [1]:" not in text


# ---- run_code ----


async def test_run_code_returns_output_and_final_value(shell: InteractiveShell) -> None:
    shell.user_ns["x"] = 20
    before = shell.execution_count
    out = await tools_of(shell)["run_code"](
        code="print('hello')\nimport sys\nprint('warn', file=sys.stderr)\ny = x * 2\ny + 2"
    )
    assert "stdout:\nhello" in out.text and "stderr:\nwarn" in out.text and "result (int):\n42" in out.text
    assert shell.user_ns["y"] == 40 and shell.execution_count == before
    assert "hello" in out.display["text/html"]


async def test_run_code_runs_on_the_loop_thread_with_await_and_magics(shell: InteractiveShell) -> None:
    out = await tools_of(shell)["run_code"](
        code="import asyncio, threading\nawait asyncio.sleep(0)\nt = %time 5\nthreading.current_thread().name"
    )
    assert threading.current_thread().name in out.text and shell.user_ns["t"] == 5


async def test_run_code_exception_is_an_error_with_a_short_traceback(shell: InteractiveShell) -> None:
    code = "def ratio(a, b):\n    return a / b\nprint('started')\nratio(1, 0)"
    with pytest.raises(CodeExecutionError) as info:
        await tools_of(shell)["run_code"](code=code)
    message = str(info.value)
    assert message.startswith("the code raised ZeroDivisionError: division by zero")
    assert "Traceback" in message and "return a / b" in message and "in ratio" in message
    assert "stdout before the error:\nstarted" in message
    assert "execution.py" not in message and len(message) < 6_000


async def test_run_code_syntax_error_and_system_exit(shell: InteractiveShell) -> None:
    run_code = tools_of(shell)["run_code"]
    with pytest.raises(CodeExecutionError, match=r"SyntaxError: .*line 2"):
        await run_code(code="x = 1\nif x\n")
    with pytest.raises(CodeExecutionError, match="SystemExit"):
        await run_code(code="raise SystemExit(3)")


async def test_run_code_returns_figures_as_png_and_closes_them(shell: InteractiveShell) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    out = await tools_of(shell)["run_code"](
        code="import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 3, 2])\nax.set_title('Sales')\n"
        "plt.figure()\nplt.plot([0, 1])\nNone"
    )
    png = out.display["image/png"]
    import base64

    assert base64.b64decode(png).startswith(b"\x89PNG")
    assert out.display["text/html"].count("<img") == 2
    assert "Figure 1" in out.text and "Sales" in out.text and png not in out.text
    assert plt.get_fignums() == []


async def test_run_code_captures_display_calls(shell: InteractiveShell) -> None:
    out = await tools_of(shell)["run_code"](
        code="from IPython.display import display, HTML\ndisplay(HTML('<i>hi</i>'))"
    )
    assert "displayed:" in out.text and "<i>hi</i>" in out.display["text/html"]


async def test_run_code_error_reaches_the_model_through_the_orchestrator(shell: InteractiveShell) -> None:
    registry = ToolRegistry()
    register_context_tools(registry, shell)
    registry.set_policy("run_code", "auto")
    transport = ScriptedTransport([Step.call("run_code", {"code": "undefined_name + 1"}), Step.say("fixed")])
    chat = ChatStore()
    outcome = await Orchestrator(transport, registry, chat, AgentStore()).run([ChatMessage(role="user", content="go")])
    result = next(m.tool_result for m in chat.messages if m.role == "tool")
    assert outcome.reason == "complete" and result.result is None
    assert "NameError: name 'undefined_name' is not defined" in result.error and "Traceback" in result.error


# ---- insert_cell and registration ----


def test_insert_cell_proposes_the_source(shell: InteractiveShell) -> None:
    out = asyncio.run(insert_cell_tool(shell).execute(source="df.plot()"))
    assert isinstance(out, ToolOutput) and "```python\ndf.plot()\n```" == out.display["text/markdown"]
    assert shell.rl_next_input == f"{PROPOSAL_LINE}\ndf.plot()"  # the cell says it is an unrun proposal
    with pytest.raises(ValueError, match="empty"):
        asyncio.run(insert_cell_tool(shell).execute(source="  "))


def test_register_context_tools_keeps_policies_and_user_tools(shell: InteractiveShell) -> None:
    registry = ToolRegistry()
    names = [t.name for t in register_context_tools(registry, shell)]
    assert names == ["list_variables", "inspect_variable", "describe_dataframe", "get_cell_history", "run_code"]
    assert registry.get("run_code").policy == "ask" and registry.get("list_variables").policy == "auto"
    registry.set_policy("run_code", "auto")

    def list_variables() -> str:
        """My own."""
        return "mine"

    registry.add(definition_from_function(list_variables), replace=True)
    again = register_context_tools(registry, shell)
    assert registry.get("run_code").policy == "auto"
    assert registry.get("list_variables").execute() == "mine" and len(again) == 4


# ---- in a real kernel ----


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def kernel_run(kc: Any, code: str, timeout: float = 60, ok: bool = True) -> tuple[str, dict[str, Any]]:
    """Execute `code`; return its stdout and the execute_reply content (an error fails unless ok=False)."""
    chunks: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            chunks.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            chunks.append("\n".join(msg["content"]["traceback"]))

    reply = kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    assert (reply["content"]["status"] == "ok") == ok, "".join(chunks)
    return "".join(chunks), reply["content"]


def test_tools_in_a_real_kernel(kernel: Any) -> None:
    kernel_run(
        kernel,
        """
import numpy as np, pandas as pd, polars as pl
%matplotlib inline
from agentik_jupyter.tools.context import make_context_tools, variables_of
tools = {t.name: t.execute for t in make_context_tools(get_ipython())}
ints = np.arange(10_000_000)
big = pd.DataFrame({f"c{k}": ints for k in range(500)}, copy=False)
df = pd.DataFrame({"age": [31.0, None, 45.0], "city": ["Paris", None, "Lyon"]})
arr = np.linspace(0, 1, 11)
cfg = {"alpha": 0.1, "layers": [64, 32]}
pdf = pl.DataFrame({"x": [1, None, 3]})
""",
    )
    kernel_run(kernel, "1 / 0", ok=False)
    out, _ = kernel_run(
        kernel,
        """
import json, threading
results = {
    "list": tools["list_variables"]().text,
    "arr": tools["inspect_variable"](name="arr").text,
    "cfg": tools["inspect_variable"](name="cfg").text,
    "df": tools["describe_dataframe"](name="df").text,
    "big": tools["describe_dataframe"](name="big").text,
    "pdf": tools["describe_dataframe"](name="pdf").text,
    "history": tools["get_cell_history"](last_n=3).text,
    "vars": [v.name for v in variables_of(get_ipython())],
}
before = get_ipython().execution_count
ran = await tools["run_code"](code="import matplotlib.pyplot as plt\\nplt.plot([1, 2]); plt.show()\\nprint('ok')\\n"
                                    "threading.current_thread() is threading.main_thread()")
results["run"] = ran.text
results["png"] = "image/png" in ran.display or "<img" in ran.display["text/html"]
results["count_same"] = get_ipython().execution_count == before
print(json.dumps(results))
""",
    )
    results = json.loads(out.strip().splitlines()[-1])
    assert results["vars"] == ["tools", "ints", "big", "df", "arr", "cfg", "pdf"]
    assert "big: pandas.DataFrame (10000000, 500)" in results["list"] and "np" not in results["list"].split()
    assert "mean 0.5" in results["arr"] and "'layers': (list len=2)" in results["cfg"]
    assert "age: float64; 1 nulls" in results["df"]
    assert len(results["big"]) <= BUDGET_CHARS and "40 of 500 profiled" in results["big"]
    assert "x: Int64; 1 nulls" in results["pdf"]
    assert "ZeroDivisionError" in results["history"]
    assert "stdout:\nok" in results["run"] and "result (bool):\nTrue" in results["run"]
    assert results["png"] and results["count_same"]


def test_insert_cell_reaches_the_frontend_as_a_payload(kernel: Any) -> None:
    _, reply = kernel_run(
        kernel,
        """
from agentik_jupyter.notebook.tools import insert_cell_tool
insert = insert_cell_tool(get_ipython()).execute
await insert(source="a = 1")
await insert(source="b = 2")
""",
    )
    payloads = [p for p in reply["payload"] if p["source"] == "set_next_input"]
    assert (
        len(payloads) == 1
        and payloads[0]["text"] == f"{PROPOSAL_LINE}\na = 1\n\nb = 2"
        and payloads[0]["replace"] is False
    )


def test_user_tools_defined_in_the_kernel_appear_and_are_replaced(kernel: Any) -> None:
    kernel_run(
        kernel,
        """
from agentik_jupyter import tool
from agentik_jupyter.tools.registry import default_registry

@tool
def revenue(region: str) -> str:
    '''Revenue of a region.'''
    return region
""",
    )
    kernel_run(
        kernel,
        """
@tool
def revenue(region: str, year: int = 2024) -> str:
    '''Revenue of a region in a year.'''
    return f"{region} {year}"
""",
    )
    out, _ = kernel_run(
        kernel,
        """
d = default_registry.get("revenue")
print(d.description, [p.key for p in d.parameters], d.execute(region="EU"), sep="|")
""",
    )
    assert out.strip() == "Revenue of a region in a year.|['region', 'year']|EU 2024"


def test_running_the_orchestrator_on_the_kernel_loop_keeps_cells_responsive(kernel: Any) -> None:
    """A background turn waits for approval while other cells run; a later cell approves it."""
    kernel_run(
        kernel,
        """
import asyncio
from agentik_jupyter.tools.approval import ApprovalGate
from agentik_jupyter.tools.context import register_context_tools
from agentik_jupyter.core.orchestrator import Orchestrator
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.types import ChatMessage

pending = []
registry = ToolRegistry()
register_context_tools(registry, get_ipython())
transport = ScriptedTransport([Step.call("run_code", {"code": "approved_value = 7 * 6"}), Step.say("done")])
chat = ChatStore()
orch = Orchestrator(transport, registry, chat, AgentStore(), approver=ApprovalGate(present=pending.append))
turn = asyncio.get_running_loop().create_task(orch.run([ChatMessage(role="user", content="go")]))
""",
    )
    out, _ = kernel_run(
        kernel, "await asyncio.sleep(0.2)\nprint(len(pending), turn.done(), 'approved_value' in globals())"
    )
    assert out.split() == ["1", "False", "False"]
    out, _ = kernel_run(
        kernel, "pending[0].approve()\nawait asyncio.wait_for(turn, 10)\nprint(turn.result().reason, approved_value)"
    )
    assert out.split() == ["complete", "42"]
