"""Our MCP endpoint beside Datalayer's jupyter-mcp-server, on the same notebook and the same kernel.

One real Jupyter Server with our extension (and jupyter-collaboration, whose document API
jupyter-mcp-server edits notebooks through); one notebook open in it, its kernel started by the
server. Both MCP servers are started as an MCP client starts them, over stdio: ours as
`agentik-jupyter mcp --url …` (the token from `JUPYTER_TOKEN`), theirs as `jupyter-mcp-server start`
pointed at the same notebook and the kernel's id. jupyter-mcp-server lives in a venv of its own
(`make bench` makes it: `JMS_VENV`), never in the test extra: it brings Jupyter server extensions
(jupyter-server-nbmodel, its own) that every test server would load.

Per side: the tools offered; the bytes a model gets (the tool result's content as JSON) for a
cell with a matplotlib plot and for looking at a 1,000,000-row DataFrame, and whether a plot came
as base64 text; the median time of looking at that frame and of a small `run_code` (`x + 1`). The
kernel sets AGENTIK_APPROVE=auto, so our run_code asks no one and both sides time the same work.
jupyter-mcp-server has no inspect_variable: an agent looks at a variable with `execute_code("df")`.
Its execute_code answers on a poll (every `progress_interval` / 5 s, at most 1 s; the default
interval is 5): `run_code_poll_02_s` times it at its fastest poll.
"""

from __future__ import annotations

import base64
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
import nbformat
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult, ImageContent, Implementation, TextContent

from agentik_jupyter.testing import FakeLLMServer

from .server_turns import ServerKernel, _jupyter

JMS_VERSION = "2.2.4"
JMS_VENV = Path(__file__).resolve().parent.parent / ".venv" / "jupyter-mcp-server"
NOTEBOOK = "compare.ipynb"
ROWS = 1_000_000
REPEATS = 7
DPIS = (100, 200)
SETUP = (
    "%load_ext agentik_jupyter\n"
    "import numpy as np, pandas as pd\n"
    "rng = np.random.default_rng(0)\n"
    f"df = pd.DataFrame({{'price': rng.normal(100, 15, {ROWS}), 'units': rng.integers(0, 50, {ROWS}),"
    f" 'region': rng.choice(['north', 'south', 'east', 'west'], {ROWS})}})\n"
    "x = 41"
)


def _plot_png(dpi: int) -> str:
    """A plot as a notebook shows one: matplotlib's default figure (6.4 x 4.8 in), a line, at `dpi`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot(range(200), [((i * 37) % 101) / 10 for i in range(200)])
    ax.set_title("units by day")
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=dpi)
    plt.close(fig)
    return base64.b64encode(out.getvalue()).decode("ascii")


def _write_notebook(path: Path) -> list[str]:
    """The notebook both sides read: a plot cell at 100 dpi (matplotlib's default) and one at 200 (a
    retina figure, `%config InlineBackend.figure_format = 'retina'`), with their saved outputs; their ids."""
    nb = nbformat.v4.new_notebook()
    plots = []
    for dpi in DPIS:
        cell = nbformat.v4.new_code_cell(f"plt.plot(days, units)  # {dpi} dpi")
        data = {"image/png": _plot_png(dpi), "text/plain": "<Figure>"}
        cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
        plots.append(cell)
    nb.cells = [*plots, nbformat.v4.new_code_cell("df.describe()")]
    nbformat.write(nb, path)
    return [str(cell["id"]) for cell in plots]


def _pixels(data: str) -> str:
    from PIL import Image  # (matplotlib's dependency)

    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        return f"{image.width}x{image.height}"


def _size(result: CallToolResult) -> dict[str, Any]:
    """What the model's context gets: the content as JSON, its images, base64 left in the text."""
    content = [c.model_dump(mode="json", exclude_none=True) for c in result.content]
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    return {
        "bytes": len(json.dumps(content)),
        "images": sum(isinstance(c, ImageContent) for c in result.content),
        "image_bytes": sum(len(c.data) for c in result.content if isinstance(c, ImageContent)),
        "image_px": [_pixels(c.data) for c in result.content if isinstance(c, ImageContent)],
        "base64_in_text": "iVBORw0KGgo" in text,
        "error": result.is_error,
    }


async def _median_s(client: Client, tool: str, args: dict[str, Any]) -> float:
    times = []
    for _ in range(REPEATS + 1):  # (the first is a warm-up)
        started = time.perf_counter()
        result = await client.call_tool(tool, args)
        times.append(time.perf_counter() - started)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")
    return round(statistics.median(times[1:]), 4)


async def _ours(params: StdioServerParameters, cell_ids: list[str]) -> dict[str, Any]:
    async with Client(params, client_info=Implementation(name="bench", version="1")) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        nb = {"notebook": NOTEBOOK}
        plots = {
            f"{dpi}_dpi": await client.call_tool("read_notebook", {**nb, "cell_id": i})
            for dpi, i in zip(DPIS, cell_ids)
        }
        whole = await client.call_tool("read_notebook", nb)
        inspected = await client.call_tool("inspect_variable", {**nb, "name": "df"})
        described = await client.call_tool("describe_dataframe", {**nb, "name": "df"})
        return {
            "tools": tools,
            "plot_cell": {dpi: _size(result) for dpi, result in plots.items()},
            "read_notebook": _size(whole),
            "frame": {"inspect_variable": _size(inspected), "describe_dataframe": _size(described)},
            "inspect_s": await _median_s(client, "inspect_variable", {**nb, "name": "df"}),
            "run_code_s": await _median_s(client, "run_code", {**nb, "code": "x + 1"}),
        }


async def _theirs(params: StdioServerParameters) -> dict[str, Any]:
    async with Client(params, client_info=Implementation(name="bench", version="1")) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        plots = {
            f"{dpi}_dpi": await client.call_tool("read_cell", {"cell_index": i, "include_outputs": True})
            for i, dpi in enumerate(DPIS)
        }
        whole = await client.call_tool("read_notebook", {"notebook_name": "default"})
        shown = await client.call_tool("execute_code", {"code": "df"})
        described = await client.call_tool("execute_code", {"code": "df.describe()"})
        return {
            "tools": tools,
            "plot_cell": {dpi: _size(result) for dpi, result in plots.items()},
            "read_notebook": _size(whole),
            "frame": {"execute_code(df)": _size(shown), "execute_code(df.describe())": _size(described)},
            "inspect_s": await _median_s(client, "execute_code", {"code": "df"}),
            "run_code_s": await _median_s(client, "execute_code", {"code": "x + 1"}),
            # it looks for the result every progress_interval / 5 s, at most 1 s (default interval 5):
            # 1, the shortest it takes, polls every 0.2 s
            "run_code_poll_02_s": await _median_s(client, "execute_code", {"code": "x + 1", "progress_interval": 1}),
        }


async def mcp_compare() -> dict[str, Any]:
    jms = JMS_VENV / "bin" / "jupyter-mcp-server"
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as llm, _jupyter(llm, Path(tmp)) as (url, token, root):
        kernel = ServerKernel(url, token, root, Path(tmp), NOTEBOOK)
        try:
            cell_ids = _write_notebook(root / NOTEBOOK)
            kernel.run(SETUP, timeout=300)
            sessions = httpx2.get(f"{url}/api/sessions", headers={"Authorization": f"token {token}"}).json()
            kernel_id = next(s["kernel"]["id"] for s in sessions if s["path"] == NOTEBOOK)
            base = {"PATH": os.environ.get("PATH", ""), "HOME": tmp, "JUPYTER_TOKEN": token}
            ours = StdioServerParameters(
                command=sys.executable,
                args=["-m", "agentik_jupyter.server.mcp_bridge", "mcp", "--url", url],
                env={**base, "JUPYTER_RUNTIME_DIR": str(Path(tmp) / "runtime")},
            )
            results: dict[str, Any] = {"rows": ROWS, "ours": await _ours(ours, cell_ids)}
            if not jms.exists():
                results["jupyter_mcp_server"] = {"skipped": f"not installed at {jms} (make bench installs it)"}
                return results
            theirs = StdioServerParameters(
                command=str(jms),
                args=["start", "--transport", "stdio", "--start-new-code-sandbox", "false"],
                env={**base, "JUPYTER_URL": url, "DOCUMENT_ID": NOTEBOOK, "CODE_SANDBOX_ID": kernel_id},
            )
            results["jupyter_mcp_server"] = {"version": JMS_VERSION, **await _theirs(theirs)}
            for figure in ("inspect_s", "run_code_s"):
                results[figure.replace("_s", "_ratio")] = round(
                    results["ours"][figure] / results["jupyter_mcp_server"][figure], 2
                )
            for dpi in DPIS:
                ours_bytes = results["ours"]["plot_cell"][f"{dpi}_dpi"]["bytes"]
                theirs_bytes = results["jupyter_mcp_server"]["plot_cell"][f"{dpi}_dpi"]["bytes"]
                results[f"plot_{dpi}_dpi_bytes_ratio"] = round(ours_bytes / theirs_bytes, 3)
            return results
        finally:
            kernel.close()
