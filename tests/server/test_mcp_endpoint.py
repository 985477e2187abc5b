"""The MCP endpoint at /agentik/mcp, with the official MCP client over streamable HTTP, against a
real Jupyter server and notebooks whose kernels it started: the tools, what they return, and the
refusals an outside agent can act on (never a traceback)."""

from __future__ import annotations

import base64
import io
import os
import sys
from collections.abc import Iterator
from typing import Any

import httpx2
import nbformat
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import ImageContent, Implementation

from tests.jupyter_servers import server_fixtures, start_notebook_session
from tests.mcp_support import connected, live_notebook, text_of

pytestmark = pytest.mark.timeout(240)

llm, server = server_fixtures()

CONTRACT = {
    "list_notebooks",
    "read_notebook",
    "list_variables",
    "inspect_variable",
    "describe_dataframe",
    "run_code",
    "rewind",
    "edit_cell",
    "insert_cell",
}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}


@pytest.fixture(scope="module")
def notebook(server: Any) -> Iterator[Any]:
    """analysis.ipynb open with a live kernel that loaded the agent, a frame `df` in it."""
    frame = "import pandas as pd\ndf = pd.DataFrame({'price': [1.5, 2.5, 4.0], 'city': ['a', 'b', 'c']})"
    with live_notebook(server, "analysis.ipynb", frame) as kernel:
        yield kernel


async def test_the_tools_are_listed_with_their_contract_names(server: Any) -> None:
    async with connected(server) as client:
        tools = await client.list_tools()
    names = {tool.name for tool in tools.tools}
    assert names == CONTRACT
    run_code = next(tool for tool in tools.tools if tool.name == "run_code")
    assert set(run_code.input_schema["required"]) == {"notebook", "code"}


@pytest.mark.parametrize("token", ["", "wrong-token"])
def test_no_token_or_a_wrong_one_is_refused_with_a_json_rpc_error(server: Any, token: str) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"token {token}"
    r = httpx2.post(f"{server.url}/agentik/mcp", json=INIT, headers=headers, timeout=30)
    assert r.status_code == 403
    error = r.json()["error"]
    assert "Not logged in to the Jupyter server" in error["message"]
    assert "Traceback" not in r.text and server.token not in r.text


async def test_the_mcp_client_fails_clearly_without_the_token(server: Any) -> None:
    with pytest.raises(BaseException) as failed:
        async with connected(server, token="wrong-token") as client:
            await client.list_tools()
    assert "403" in repr(failed.value) or "Not logged in" in repr(failed.value)


def test_a_page_of_another_site_is_refused(server: Any) -> None:
    """DNS rebinding: a page elsewhere that reaches 127.0.0.1 carries its own Origin."""
    headers = {
        "Authorization": f"token {server.token}",
        "Origin": "http://evil.example",
        "Accept": "application/json, text/event-stream",
    }
    r = httpx2.post(f"{server.url}/agentik/mcp", json=INIT, headers=headers, timeout=30)
    assert r.status_code == 403
    assert "another site" in r.json()["error"]["message"]


async def test_list_notebooks_shows_the_open_notebook_and_its_live_kernel(server: Any, notebook: Any) -> None:
    async with connected(server) as client:
        result = await client.call_tool("list_notebooks", {})
    assert not result.is_error
    assert f"{server.path('analysis.ipynb')} (kernel live)" in text_of(result)


async def test_an_unknown_notebook_is_a_tool_error_naming_the_way_out(server: Any, notebook: Any) -> None:
    async with connected(server) as client:
        result = await client.call_tool("list_variables", {"notebook": "nowhere.ipynb"})
        bad_path = await client.call_tool("inspect_variable", {"notebook": "../etc/passwd", "name": "x"})
    assert result.is_error
    assert "nowhere.ipynb is not open with a live kernel: call list_notebooks" in text_of(result)
    assert bad_path.is_error and "is not a notebook path" in text_of(bad_path)
    assert "Traceback" not in text_of(result) + text_of(bad_path)


async def test_a_kernel_without_the_agent_and_a_dead_kernel_are_tool_errors(server: Any) -> None:
    plain = start_notebook_session(server, server.path("plain.ipynb"))
    async with connected(server) as client:
        result = await client.call_tool("list_variables", {"notebook": server.path("plain.ipynb")})
        assert result.is_error
        assert "%load_ext agentik_jupyter" in text_of(result)
        httpx2.delete(
            f"{server.url}/api/kernels/{plain['kernel']['id']}",
            headers={"Authorization": f"token {server.token}"},
            timeout=60,
        ).raise_for_status()
        dead = await client.call_tool("list_variables", {"notebook": server.path("plain.ipynb")})
    assert dead.is_error
    assert "is not open with a live kernel" in text_of(dead)


async def test_the_reading_tools_answer_from_the_live_kernel(server: Any, notebook: Any) -> None:
    path = server.path("analysis.ipynb")
    async with connected(server) as client:
        variables = await client.call_tool("list_variables", {"notebook": path})
        inspected = await client.call_tool("inspect_variable", {"notebook": path, "name": "df"})
        described = await client.call_tool("describe_dataframe", {"notebook": path, "name": "df"})
        missing = await client.call_tool("inspect_variable", {"notebook": path, "name": "nothing_here"})
    assert not variables.is_error and "df" in text_of(variables) and "DataFrame" in text_of(variables)
    assert not inspected.is_error and "price" in text_of(inspected)
    assert not described.is_error and "city" in text_of(described) and "price" in text_of(described)
    assert missing.is_error and "nothing_here" in text_of(missing)


async def test_read_notebook_of_an_open_notebook_reads_through_its_kernel(server: Any, notebook: Any) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("df.describe()")]
    nbformat.write(nb, server.root / server.path("analysis.ipynb"))
    async with connected(server) as client:
        result = await client.call_tool("read_notebook", {"notebook": server.path("analysis.ipynb")})
        stale = await client.call_tool(
            "edit_cell", {"notebook": server.path("analysis.ipynb"), "cell_id": "no-such-cell", "new_source": "1"}
        )
    assert not result.is_error, text_of(result)
    assert "df.describe()" in text_of(result) and "1 cells" in text_of(result)
    assert stale.is_error and "read cell 'no-such-cell' with read_notebook" in text_of(stale)


def _big_plot_png() -> str:
    """A 2000×1500 PNG, as a plot at a high dpi saves it."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (2000, 1500), (40, 90, 160)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


async def test_read_notebook_gives_a_plot_as_an_image_sized_down(server: Any) -> None:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("plt.plot(x, y)")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": _big_plot_png(), "text/plain": "<Figure>"}),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# Prices"), cell]
    nbformat.write(nb, server.root / "plot.ipynb")
    async with connected(server) as client:
        result = await client.call_tool("read_notebook", {"notebook": server.path("plot.ipynb")})
    assert not result.is_error
    text = text_of(result)
    assert "plt.plot(x, y)" in text and "# Prices" in text
    assert "iVBOR" not in text  # never base64 in the text
    images = [c for c in result.content if isinstance(c, ImageContent)]
    assert len(images) == 1
    raw = base64.b64decode(images[0].data)
    assert len(raw) <= 200_000
    from PIL import Image

    with Image.open(io.BytesIO(raw)) as shown:
        assert max(shown.size) <= 768


def test_the_server_s_own_pages_may_call_it(server: Any) -> None:
    headers = {
        "Authorization": f"token {server.token}",
        "Origin": server.url,
        "Accept": "application/json, text/event-stream",
    }
    r = httpx2.post(f"{server.url}/agentik/mcp", json=INIT, headers=headers, timeout=30)
    assert r.status_code == 200, r.text


async def test_the_stdio_bridge_finds_the_running_server_and_relays(server: Any, notebook: Any) -> None:
    """`agentik-jupyter mcp` as Claude Code starts it: no address given, the server found as
    `jupyter server list` finds it (its runtime folder), the token never on the command line."""
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(server.log_path.parent / "runtime")}
    bridge = StdioServerParameters(
        command=sys.executable, args=["-m", "agentik_jupyter.server.mcp_bridge", "mcp"], env=env
    )
    async with Client(bridge, client_info=Implementation(name="codex", version="1.0")) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("inspect_variable", {"notebook": server.path("analysis.ipynb"), "name": "df"})
    assert names == CONTRACT
    assert not result.is_error and "price" in text_of(result)


def test_the_bridge_says_when_no_server_runs(tmp_path: Any) -> None:
    import subprocess

    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "agentik_jupyter.server.mcp_bridge", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "no running Jupyter server found" in done.stderr


def test_an_edit_s_status_comes_first() -> None:
    from mcp_types import TextContent

    from agentik_jupyter.notebook.edits import OUTCOMES
    from agentik_jupyter.server.mcp_tools import with_status

    def status(outcome: str) -> str:
        return with_status([TextContent(text=OUTCOMES[outcome].format(id="c1"))])[0].text.split("\n")[0]

    assert status("accepted") == status("accepted_and_run") == "status: accepted"
    assert status("applied") == "status: accepted"  # Auto applied it at once (Rewind takes it back)
    assert status("rejected") == "status: rejected"
    assert status("stale") == status("missing") == "status: refused"
