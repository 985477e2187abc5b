"""The tools an outside agent (Claude Code, Codex, Cursor...) calls over MCP; the names are the contract.

`list_notebooks` and `read_notebook` are answered by the server (its sessions and the saved file).
The others cross to the notebook's live kernel over the kernel link the send route uses, to the
`agentik.tools` comm target (kernel/remote_tools.py), where our own tool registry, approval gate
and limits serve them as they serve our agent's calls. A refusal (no live kernel, the agent not
loaded, bad arguments, a denied run) is a tool error a model can act on, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from jupyter_core.utils import ensure_async
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ImageContent, TextContent

from agentik_jupyter._version import __version__
from agentik_jupyter.notebook.document import NotebookDoc, cells_from_json
from agentik_jupyter.notebook.edits import ACCEPTED, APPLIED, REJECTED
from agentik_jupyter.notebook.reading import overview
from agentik_jupyter.server.kernel_link import KernelGone, KernelLink, KernelLinks
from agentik_jupyter.server.turns import LINKS_SETTING
from agentik_jupyter.tools.vision import MAX_IMAGES_PER_RESULT, RASTER_TYPES, fit_image

log = logging.getLogger(__name__)

TARGET = "agentik.tools"
"""The kernel's comm target (kernel/remote_tools.py)."""
PROGRESS_EVERY_S = 2.0
INSTRUCTIONS = (
    "Work on the user's live Jupyter notebooks: list_notebooks first, then read and inspect before you "
    "change anything. run_code runs in the notebook's kernel after the user approves it in the notebook."
)
NO_EXTENSION = (
    "The notebook's kernel has not loaded the agent: ask the user to run %load_ext agentik_jupyter in the "
    "notebook, then call again."
)
DIED = (
    "The notebook's kernel died or was restarted during the call: no result came back and its variables are "
    "gone. Jupyter restarts a dead kernel: call list_notebooks until it is live again, then ask the user to "
    "run the notebook's cells again (the agent too: %load_ext agentik_jupyter) before you call."
)

Content = TextContent | ImageContent


class NoLiveAgent(ToolError):
    """The notebook has no live kernel, or its kernel has not loaded the agent."""


def _notebook_path(notebook: str) -> str:
    path = str(notebook or "").strip().strip("/")
    if not path.endswith(".ipynb") or ".." in path.split("/"):
        raise ToolError(f"{notebook!r} is not a notebook path: give one list_notebooks shows (e.g. 'analysis.ipynb')")
    return path


class Notebooks:
    """What the tools need of the Jupyter server: its sessions, kernels and files."""

    def __init__(self, web_settings: dict[str, Any]) -> None:
        self.settings = web_settings

    async def open_ones(self) -> list[dict[str, Any]]:
        kernels = self.settings["kernel_manager"]
        listed = []
        for s in await ensure_async(self.settings["session_manager"].list_sessions()):
            if s.get("type") not in (None, "notebook") or not str(s.get("path") or "").endswith(".ipynb"):
                continue
            kernel = s.get("kernel") or {}
            live = bool(kernel.get("id")) and kernel["id"] in kernels
            if live:
                try:
                    live = bool(await ensure_async(kernels.get_kernel(kernel["id"]).is_alive()))
                except Exception:
                    live = False
            listed.append({"path": str(s["path"]).strip("/"), "kernel": "live" if live else "not running"})
        return listed

    async def link(self, notebook: str) -> KernelLink:
        """The link to the notebook's live kernel, or a tool error that says what to do."""
        path = _notebook_path(notebook)
        kernel_id = next(
            (
                s["kernel"]["id"]
                for s in await ensure_async(self.settings["session_manager"].list_sessions())
                if str(s.get("path") or "").strip("/") == path and s.get("kernel")
            ),
            None,
        )
        if kernel_id is None:
            raise NoLiveAgent(f"{path} is not open with a live kernel: call list_notebooks for the open ones")
        links: KernelLinks = self.settings.setdefault(LINKS_SETTING, KernelLinks())
        try:
            link = await links.get(self.settings["kernel_manager"], kernel_id)
        except Exception:
            raise NoLiveAgent(f"{path}'s kernel does not answer (dead, or still starting); try again later") from None
        if not await link.alive():
            raise NoLiveAgent(f"{path}'s kernel is not running; ask the user to start it")
        return link

    async def read(self, notebook: str) -> dict[str, Any]:
        path = _notebook_path(notebook)
        contents = self.settings["contents_manager"]
        try:
            model = await ensure_async(contents.get(path, content=True, type="notebook"))
        except Exception:
            raise ToolError(f"No notebook {path} in the server's folder: call list_notebooks") from None
        return dict(model["content"])

    async def call(self, ctx: Context, notebook: str, tool: str, args: dict[str, Any]) -> list[Content]:
        """Run `tool` in the notebook's kernel; progress while it runs, cancelled when the client cancels."""
        link = await self.link(notebook)
        comm_id, queue = link.open(TARGET, {"tool": tool, "args": args, "client": client_name(ctx)})
        started = time.monotonic()
        answered = False
        try:
            while True:
                try:
                    kind, data = await asyncio.wait_for(link.next(queue), PROGRESS_EVERY_S)
                except TimeoutError:
                    waited = time.monotonic() - started
                    await ctx.report_progress(waited, None, f"{tool} running in the kernel for {waited:.0f} s")
                    continue
                except KernelGone:
                    raise ToolError(DIED) from None
                if kind == "comm_close":
                    answered = True
                    raise NoLiveAgent(NO_EXTENSION)
                if kind in ("died", "closed"):
                    answered = True
                    raise ToolError(DIED)
                event = data.get("event")
                if event == "refused":
                    answered = True
                    raise ToolError(str(data.get("message") or "refused"))
                if event == "result":
                    answered = True
                    if data.get("error"):
                        raise ToolError(str(data["error"]))
                    return _contents(data)
        except asyncio.CancelledError:
            if tool == "run_code":  # code that holds the kernel hears only Jupyter's Interrupt
                await self._interrupt(link)
            raise
        finally:
            link.close(comm_id, tell_kernel=not answered)  # an unanswered call (cancelled) stops in the kernel

    async def _interrupt(self, link: KernelLink) -> None:
        try:
            await ensure_async(self.settings["kernel_manager"].interrupt_kernel(link.kernel_id))
        except Exception:
            log.warning("agentik: could not interrupt kernel %s for a cancelled MCP call", link.kernel_id)


def client_name(ctx: Context) -> str:
    """The name the client gave in its `initialize` (e.g. "claude-code"), or "" when it gave none."""
    try:
        info = ctx.session.client_params.client_info
    except Exception:
        return ""
    return str(getattr(info, "name", "") or "")


def _contents(data: dict[str, Any]) -> list[Content]:
    out: list[Content] = [TextContent(text=str(data.get("text") or ""))]
    for image in (data.get("images") or [])[:MAX_IMAGES_PER_RESULT]:
        out.append(ImageContent(data=str(image["data"]), mime_type=str(image["mime"])))
    return out


def with_status(answer: list[Content]) -> list[Content]:
    """An edit's answer with its status first: accepted, rejected, or pending (not decided in time, or
    shown only as a diff for the user to apply by hand)."""
    text = answer[0].text if answer and isinstance(answer[0], TextContent) else ""
    status = "pending"
    if text.startswith((ACCEPTED, "The user accepted", APPLIED)):  # (Auto: applied at once, Rewind takes it back)
        status = "accepted"
    elif text.startswith(REJECTED):
        status = "rejected"
    elif text.startswith("Refused"):
        status = "refused"
    return [TextContent(text=f"status: {status}\n{text}"), *answer[1:]]


def notebook_contents(path: str, nb: dict[str, Any]) -> list[Content]:
    """The notebook as our read_notebook tool shows it (sources and outputs bounded), its plots as images."""
    cells = cells_from_json(nb)
    text = overview(NotebookDoc(path=path, origin="saved", cells=cells))
    images: list[Content] = []
    for cell in cells:
        for output in cell.outputs:
            data = output.get("data") or {}
            mime = next((m for m in RASTER_TYPES if m in data), None)
            if mime is None or len(images) >= MAX_IMAGES_PER_RESULT:
                continue
            raw = data[mime]
            fitted = fit_image("".join(raw) if isinstance(raw, list) else str(raw))
            if fitted is not None:
                images.append(ImageContent(data=fitted.data, mime_type=fitted.mime))
    return [TextContent(text=text), *images]


def make_server(web_settings: dict[str, Any]) -> MCPServer:
    """The MCP server of one Jupyter server; its tools reach that server's notebooks."""
    notebooks = Notebooks(web_settings)
    mcp: MCPServer = MCPServer(name="agentik-jupyter", version=__version__, instructions=INSTRUCTIONS)

    @mcp.tool()
    async def list_notebooks() -> str:
        """The notebooks open in Jupyter (their paths, for the other tools) and whether each one's kernel runs."""
        listed = await notebooks.open_ones()
        if not listed:
            return "No notebook is open: ask the user to open one in JupyterLab."
        return "\n".join(f"{n['path']} (kernel {n['kernel']})" for n in listed)

    @mcp.tool()
    async def read_notebook(
        notebook: str, ctx: Context, cell_id: str | None = None, start: int | None = None, end: int | None = None
    ) -> list[Content]:
        """The notebook's cells: ids, sources and outputs bounded, plots as images. Live from the page
        when the notebook's kernel runs the agent (then edit_cell may change the cells read), else
        as last saved. Read a cell before you propose an edit to it.

        Args:
            notebook: the notebook's path, as list_notebooks gives it
            cell_id: one cell's id (from the overview) to read in full
            start: first cell index of a range (0-based)
            end: last cell index of a range (default: to the end)
        """
        path = _notebook_path(notebook)
        args: dict[str, Any] = {"images": True}
        args.update({k: v for k, v in (("cell_id", cell_id), ("start", start), ("end", end)) if v is not None})
        try:
            return await notebooks.call(ctx, path, "read_notebook", args)
        except NoLiveAgent:
            return notebook_contents(path, await notebooks.read(path))

    @mcp.tool()
    async def edit_cell(notebook: str, cell_id: str, new_source: str, ctx: Context) -> list[Content]:
        """Propose new source for a cell you have read (read_notebook): the user sees a diff on the cell
        and accepts or rejects it. The answer's first line is the status: accepted, rejected or pending.

        Args:
            notebook: the notebook's path, as list_notebooks gives it
            cell_id: the cell's id, as read_notebook shows it
            new_source: the cell's complete new source
        """
        answer = await notebooks.call(ctx, notebook, "edit_cell", {"cell_id": cell_id, "new_source": new_source})
        return with_status(answer)

    @mcp.tool()
    async def insert_cell(notebook: str, source: str, ctx: Context) -> list[Content]:
        """Propose a new code cell in the notebook, marked as proposed; the user reviews and runs it.

        Args:
            notebook: the notebook's path, as list_notebooks gives it
            source: the code of the new cell
        """
        return await notebooks.call(ctx, notebook, "insert_cell", {"source": source})

    @mcp.tool()
    async def list_variables(notebook: str, ctx: Context) -> list[Content]:
        """The user's variables in the notebook's live kernel, with type and shape or length.

        Args:
            notebook: the notebook's path, as list_notebooks gives it
        """
        return await notebooks.call(ctx, notebook, "list_variables", {})

    @mcp.tool()
    async def inspect_variable(notebook: str, name: str, ctx: Context) -> list[Content]:
        """Look at one variable in the notebook's kernel: type, size and a bounded view.

        Args:
            notebook: the notebook's path, as list_notebooks gives it
            name: the variable's name, optionally with attributes (e.g. "model.coef_")
        """
        return await notebooks.call(ctx, notebook, "inspect_variable", {"name": name})

    @mcp.tool()
    async def describe_dataframe(
        notebook: str, name: str, ctx: Context, columns: list[str] | None = None
    ) -> list[Content]:
        """Profile a DataFrame (pandas, polars, lazy frames by their own engine), bounded for any size.

        Args:
            notebook: the notebook's path, as list_notebooks gives it
            name: the DataFrame's variable name (or attribute path)
            columns: column names to profile (default: the first 40)
        """
        args: dict[str, Any] = {"name": name}
        if columns:
            args["columns"] = columns
        return await notebooks.call(ctx, notebook, "describe_dataframe", args)

    @mcp.tool()
    async def run_code(notebook: str, code: str, ctx: Context) -> list[Content]:
        """Run Python in the notebook's kernel, sharing the user's variables, once the user approves it
        in the notebook. No time limit; cancelling the call interrupts it.

        Args:
            notebook: the notebook's path, as list_notebooks gives it
            code: Python source; a final expression's value is returned
        """
        return await notebooks.call(ctx, notebook, "run_code", {"code": code})

    @mcp.tool()
    async def rewind(notebook: str, ctx: Context, calls: int = 1) -> list[Content]:
        """Take back your latest calls in this notebook: the variables your run_code changed come back,
        and the calls are marked rewound in your session.

        Args:
            notebook: the notebook's path, as list_notebooks gives it
            calls: how many of your latest calls to take back (default 1)
        """
        return await notebooks.call(ctx, notebook, "rewind", {"calls": calls})

    return mcp
