"""A real browser test: JupyterLab + headless Debian Chromium (Python Playwright) + the fake LLM.

The flow a data scientist goes through, clicked and typed in the real UI:

1. open a notebook (``%load_ext``, a DataFrame, a background ``%%agent`` cell, ``%agent panel``)
   and run its cells with Shift+Enter;
2. watch the cell's answer stream in (partial text first, then all of it);
3. in the chat panel, type a follow-up and press Send, then another and press Enter;
4. ask for a long answer and press Stop: the text stops growing and the status says Stopped;
5. approval: the model calls ``run_code`` (policy "ask"), the card shows the exact code,
   Approve runs it in the kernel, the tool card and the final answer follow; Deny sends a
   denial back to the model, which answers; and the same in a ``%%agent`` cell's own view,
   followed by one more approval from the panel;
6. a background ``%%agent`` cell whose model calls ``insert_cell`` twice: both cells appear
   at once, in order, right below the asking cell, and are not run;
7. Enter pressed right after typing over a slow kernel link sends all of
   the text;
8. a saved notebook opened without running it: the JupyterLab extension draws each turn's
   transcript (question, Markdown answer, tool cards) and no HTML from the payload runs;
9. the "Agent sessions" sidebar lists the sessions in the notebook's ``.agentik.db``, and a
   click shows one's history, a page at a time ("Show older").

Screenshots land in ``tests/artifacts/`` (git-ignored). The browser is never downloaded:
``/usr/bin/chromium`` (``scripts/ensure-chromium.sh``) or the module is skipped.

The steps share one JupyterLab, kernel and page (module fixture) and run in file order.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing.chromium import CHROMIUM  # noqa: E402

if not CHROMIUM.exists():
    pytest.skip(
        "browser test needs Debian chromium at /usr/bin/chromium (scripts/ensure-chromium.sh installs it)",
        allow_module_level=True,
    )

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

import httpx2  # noqa: E402
import nbformat  # noqa: E402
from playwright import sync_api  # noqa: E402

from agentik_jupyter.notebook.cells import PROPOSAL_LINE  # noqa: E402
from agentik_jupyter.persistence import SessionDB  # noqa: E402
from agentik_jupyter.testing import FakeLLMServer, Reply  # noqa: E402
from agentik_jupyter.types import (  # noqa: E402
    AssistantMessage,
    ToolCall,
    ToolCallRecord,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from tests.jupyter_servers import RunningServer  # noqa: E402
from tests.shared_servers import (  # noqa: E402
    IGNORED_ENV,
    POOL,
    ServerConfig,
    disabled_extensions,
    module_view,
    new_context,
    shared_llm,
    theme_settings,
    user_settings,
)

ARTIFACTS = Path(__file__).parents[1] / "artifacts"
OUR_EXTENSION = "agentik-jupyter"
CHUNK_DELAY = 0.05  # seconds between streamed chunks (one word each): slow enough to watch
HELD_CHUNK_DELAY = 5.0
"""The pace while a button below a streaming answer is clicked: the text holds still under the click."""
NOTEBOOK = "browser_demo.ipynb"
WIDGET_ERROR = "Error displaying widget"

(
    CELL_LOAD,
    CELL_DATA,
    CELL_AGENT,
    CELL_PANEL,
    CELL_APPROVE,
    CELL_LONG,
    CELL_RUN_ALL,
    CELL_MOVE_TOOL,
    CELL_SLOW,
    CELL_PROPOSE,
) = (0, 1, 2, 3, 4, 5, 6, 9, 10, 11)
RUN_ALL_QUESTIONS = [f"Background question {n}." for n in (1, 2, 3)]
CELL_SOURCES = [
    "%load_ext agentik_jupyter",
    "import pandas as pd\n"
    "sales = pd.DataFrame({'region': ['north', 'south', 'east'], 'units': [1, 2, 3]})\nsales.shape",
    "%%agent\nSummarise the sales data in one paragraph.",
    "%agent panel",
    "%%agent\nAdd up the units by running code.",
    "%%agent\nWrite a long answer about the sales.",
    *(f"%%agent\n{q}" for q in RUN_ALL_QUESTIONS),
    "%agent mcp trust",  # the project mcp.json the approval-card step writes beside the notebook
    # a slow link to the kernel (a remote hub, a loaded machine): each text-box update takes 0.3 s
    "import time\nfrom ipywidgets import Text\n_set_state = Text.set_state\n"
    "Text.set_state = lambda self, state: (time.sleep(0.3), _set_state(self, state))[1]",
    "%%agent\nPropose cells that double the units and plot them.",
]


def words(prefix: str, n: int, end: str) -> str:
    return " ".join([prefix, *(f"w{i}" for i in range(n)), end])


FIRST_ANSWER = words("Streaming answer:", 40, "END-FIRST")
SEND_QUESTION = "Follow-up typed in the panel"
SEND_ANSWER = words("Panel answer:", 12, "END-SEND")
ENTER_QUESTION = "Another follow-up, sent with Enter"
ENTER_ANSWER = words("Enter answer:", 12, "END-ENTER")
LONG_QUESTION = "Write a very long essay."
LONG_ANSWER = words("Long essay:", 600, "END-LONG")
APPROVE_QUESTION = "What is the total of units? Run code."
APPROVE_CODE = "total = int(sales['units'].sum())\nprint('TOTAL', total)"
APPROVE_ANSWER = "The total is **6** units. END-APPROVED"
DENY_QUESTION = "Delete my files."
DENY_CODE = "import shutil\nshutil.rmtree('/definitely/not/here')"
DENY_ANSWER = "Understood, I did not run it. END-DENIED"
CELL_CODE = "print('FROM CELL', len(sales))"
CELL_ANSWER = "The frame has 3 rows. END-CELL"
AFTER_CELL_QUESTION = "One more from the panel."
AFTER_CELL_CODE = "print('AFTER CELL', sales['units'].max())"
AFTER_CELL_ANSWER = "The max is 3. END-AFTER"
PROPOSED_CELLS = ["sales['double'] = sales['units'] * 2\nsales", "sales.plot.bar(x='region', y='double')"]
PROPOSE_ANSWER = "Run the two new cells when you are ready. END-PROPOSE"
TYPED_QUESTION = "typed key by key then Enter"
TYPED_ANSWER = "Got all of it. END-TYPED"

QUICKSTART = Path(__file__).parents[2] / "notebooks" / "quickstart.ipynb"
SAVED_NOTEBOOK = "saved_transcripts.ipynb"
HISTORY_NOTEBOOK = "with_history.ipynb"
TRANSCRIPT_MIME = "application/vnd.agentik.transcript+json"
TRANSCRIPT = ".jp-Notebook .jp-AgentikTranscript"
PWNED = "window.__agentik_pwned"
# A tampered notebook: every string of the payload tries to inject HTML or script.
HOSTILE_QUESTION = 'Is <b>this</b> bold? <script>window.__agentik_pwned = "question"</script>'
HOSTILE_ANSWER = (
    "Rendered **Markdown** END-HOSTILE <img src=x onerror=\"window.__agentik_pwned = 'answer'\">"
    " <script>window.__agentik_pwned = 'script'</script> ![pixel](http://127.0.0.1:9/pixel.png)"
)
HOSTILE_TRANSCRIPT = {
    "version": 1,
    "title": None,
    "status": "complete",
    "usage": {"input_tokens": 10, "output_tokens": 5},
    "elapsed_s": 0.25,
    "entries": [
        {"role": "user", "content": HOSTILE_QUESTION},
        {
            "role": "tool",
            "id": "call_x",
            "name": "inspect_variable",
            "args": {"name": "<i>x</i>"},
            "result": "<script>window.__agentik_pwned = 'result'</script>",
            "truncated": 0,
            "error": None,
            "duration_ms": 3.0,
            "display": {
                "text/html": "<table><tr><td>cell-ok</td></tr></table>"
                "<img src=x onerror=\"window.__agentik_pwned = 'display'\">"
            },
        },
        {"role": "assistant", "content": HOSTILE_ANSWER},
        {"role": "error", "message": "<b>not bold</b> error text"},
    ],
}
HISTORY_TURNS = 30  # two audit rows each: more than one page (50 rows) of history


# ---------------------------------------------------------------- fixtures


@dataclass
class Lab:
    srv: FakeLLMServer
    server: RunningServer
    page: Any  # playwright Page
    console: list[str] = field(default_factory=list)

    def cell(self, index: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def output(self, index: int) -> Any:
        return self.cell(index).locator(".jp-Cell-outputArea").first

    @property
    def panel(self) -> Any:
        return self.output(CELL_PANEL)

    def text(self, locator: Any) -> str:
        return str(locator.inner_text(timeout=5_000))

    def shot(self, name: str, at: Any = None) -> Path:
        """Screenshot the window (JupyterLab scrolls inside it), `at` scrolled into view first."""
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        if at is not None:
            at.scroll_into_view_if_needed(timeout=5_000)
        self.page.screenshot(path=str(path), timeout=10_000)
        return path

    def wait(self, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
        """`wait_until`; when it times out, the failure says what the page showed (its notebook's
        text, the console's errors) and a screenshot is saved as tests/artifacts/failed-<test>.png."""
        try:
            return wait_until(predicate, timeout, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.seen()}") from None

    def stays(self, predicate: Callable[[], Any], seconds: float, what: str) -> None:
        """Check that something the user would notice does not happen: `predicate` holds for the
        whole of `seconds`, failing at the first moment it does not (with what the page showed)."""
        deadline = time.monotonic() + seconds
        while True:
            if not predicate():
                raise AssertionError(f"{what} did not hold\n{self.seen()}")
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)

    def seen(self) -> str:
        """What the page showed, for a failure message: the screenshot's path, the notebook's last
        lines of text, the console's last errors."""
        name = os.environ.get("PYTEST_CURRENT_TEST", "failed").split(" ")[0]
        name = re.sub(r"[^\w.-]+", "_", name.split("::")[-1])[:80]
        parts = []
        try:
            parts.append(f"screenshot: {self.shot(f'failed-{name}.png')}")
        except Exception as exc:
            parts.append(f"(no screenshot: {exc})")
        try:
            text = str(self.page.locator("body").inner_text(timeout=2_000))
            parts.append("the page's text ends:\n" + text[-1500:])
        except Exception as exc:
            parts.append(f"(no page text: {exc})")
        if self.console:
            parts.append("console:\n" + "\n".join(self.console[-10:]))
        return "\n".join(parts)

    def no_widget_errors(self) -> None:
        body = self.text(self.page.locator(".jp-Notebook"))
        assert WIDGET_ERROR not in body, body[-2000:]


def choose_the_kernel_if_asked(lab: Lab) -> None:
    """A Shift+Enter before the notebook's session has its kernel (a loaded machine, the page just
    opened) makes JupyterLab and Notebook 7 ask which kernel to start ("Select Kernel", modal: it
    takes every click). Answer as a user would: when the server already runs a kernel for the
    notebook (the page is still connecting to it), Cancel and keep it; Select would start another
    and shut that one down, and under collaboration the page then lost its next cells' runs (a run
    beside a CPU hog: a cell's `[*]` went back to `[ ]`). With no kernel, Select the one proposed."""
    dialog = lab.page.locator(".jp-Dialog", has_text="Select Kernel")
    if dialog.count():
        button = ".jp-Dialog-button.jp-mod-reject" if notebook_has_a_kernel(lab) else ".jp-Dialog-button.jp-mod-accept"
        dialog.first.locator(button).click()
        dialog.first.wait_for(state="detached", timeout=10_000)


def notebook_has_a_kernel(lab: Lab) -> bool:
    """Whether the server runs a kernel for the notebook the page shows (its URL ends with the session's path)."""
    shown = urllib.parse.unquote(urllib.parse.urlparse(lab.page.url).path)
    sessions = httpx2.get(
        f"{lab.server.url}/api/sessions", headers={"Authorization": f"token {lab.server.token}"}, timeout=30
    ).json()
    return any(session.get("kernel") and shown.endswith("/" + session["path"]) for session in sessions)


# Every distinct text a cell's part shows, as the page renders it (a MutationObserver): a state
# that lasts less than a poll (a partial answer on a fast stream, the [*] of a quick cell) is kept.
WATCH = """([key, index, selector]) => {
  const seen = [];
  const read = () => {
    const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
    const part = cell && cell.querySelector(selector);
    const text = part ? part.textContent : null;
    if (text !== null && seen[seen.length - 1] !== text) seen.push(text);
  };
  read();
  const observer = new MutationObserver(read);
  observer.observe(document.body, {childList: true, subtree: true, characterData: true});
  (window.__agentik_watched ||= {})[key] = {seen, observer};
}"""


@dataclass
class Watch:
    """What `watch` saw of one cell's part; `stop()` ends the watching."""

    lab: Lab
    key: str

    def seen(self) -> list[str]:
        return list(self.lab.page.evaluate("key => window.__agentik_watched[key].seen", self.key))

    def stop(self) -> None:
        self.lab.page.evaluate(
            "key => { const w = window.__agentik_watched?.[key]; if (w) w.observer.disconnect(); }", self.key
        )


def watch(lab: Lab, index: int, selector: str) -> Watch:
    """Start recording every text cell `index`'s `selector` part shows (see WATCH)."""
    key = f"{index}:{selector}:{time.monotonic_ns()}"
    lab.page.evaluate(WATCH, [key, index, selector])
    return Watch(lab, key)


RAN = re.compile(r"\[\d+\]")
"""A cell's prompt once it has run: `[3]:` (`[*]:` while it runs or waits its turn, `[ ]:` never run)."""


def run_cell(lab: Lab, index: int, *, timeout: float = 120) -> None:
    """Select the cell (command mode) and Shift+Enter it, as a user does; return once it has run.

    The app takes the press when the notebook has its kernel: the prompt turns to `[*]` (or, seen
    too late, to a new count). Only a press it did not take (the kernel not connected yet, a dialog
    in the way, the cell re-drawn under the click) is made again: pressing again while the cell waits
    its turn on a loaded machine would run it twice. Then the cell has run when its prompt shows
    a count again; `timeout` is only the failure bound.
    """
    deadline = time.monotonic() + timeout
    prompt = lab.cell(index).locator(".jp-InputArea-prompt")
    while True:
        choose_the_kernel_if_asked(lab)
        watched = None
        try:
            prompt.scroll_into_view_if_needed(timeout=10_000)
            watched = watch(lab, index, ".jp-InputArea-prompt")  # its first text: the prompt before the press
            prompt.click(timeout=10_000)
            lab.page.keyboard.press("Shift+Enter")
            wait_until(lambda: len(watched.seen()) > 1, 20, f"cell {index} to start")
            break
        except (AssertionError, sync_api.Error) as exc:
            if time.monotonic() > deadline:
                dialog = lab.page.locator(".jp-Dialog")
                if dialog.count():
                    raise AssertionError(f"a dialog is in the way: {lab.text(dialog.first)!r}") from exc
                raise
        finally:
            if watched is not None:
                watched.stop()
    lab.wait(lambda: RAN.search(lab.text(prompt)), max(deadline - time.monotonic(), 30), f"cell {index} to have run")


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll `predicate` until it returns something truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = predicate()
        except AssertionError:
            raise
        except Exception as exc:  # a locator detached while the widget re-rendered
            last = exc
        if last and not isinstance(last, Exception):
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def write_saved_notebooks(root: Path) -> None:
    """The quickstart with its saved outputs plus one tampered transcript; an empty notebook
    whose sessions file holds two sessions, one longer than a page."""
    shutil.copy(QUICKSTART, root / SAVED_NOTEBOOK)
    nb = nbformat.read(root / SAVED_NOTEBOOK, as_version=4)
    hostile = nbformat.v4.new_code_cell("%%agent --wait\nA tampered transcript")
    hostile.outputs = [
        nbformat.v4.new_output("display_data", data={"text/plain": "tampered", TRANSCRIPT_MIME: HOSTILE_TRANSCRIPT})
    ]
    nb.cells.append(hostile)
    nbformat.write(nb, root / SAVED_NOTEBOOK)

    empty = nbformat.v4.new_notebook()
    empty.metadata["kernelspec"] = nb.metadata["kernelspec"]
    empty.cells = [nbformat.v4.new_code_cell("%load_ext agentik_jupyter")]
    nbformat.write(empty, root / HISTORY_NOTEBOOK)
    with SessionDB(root / HISTORY_NOTEBOOK.replace(".ipynb", ".agentik.db")) as db:
        long = db.create_conversation("Long sales session")
        for i in range(HISTORY_TURNS):
            turn = db.begin_turn(long.id, UserMessage(content=f"History question {i}"))
            db.append(long.id, turn, AssistantMessage(content=f"History answer {i} with *emphasis*."))
        turn = db.begin_turn(long.id, UserMessage(content="Describe <b>sales</b>"))
        call = ToolCall(id="call_h1", name="describe_dataframe", args={"name": "sales"})
        db.append(long.id, turn, ToolCallRecord(call=call))
        db.append(
            long.id,
            turn,
            ToolResultRecord(
                result=ToolResult(
                    tool_call_id=call.id, name=call.name, result="sales: 100 rows x 3 columns", duration_ms=12.0
                )
            ),
        )
        db.append(
            long.id,
            turn,
            AssistantMessage(
                content="The frame has **100 rows**. END-HISTORY <img src=x onerror=\"window.__agentik_pwned = 'history'\">"
            ),
        )
        short = db.create_conversation("Short session")
        db.begin_turn(short.id, UserMessage(content="Only question"))


def write_code_cells(path: Path, sources: list[str]) -> None:
    """A notebook of these code cells, not run, with the kernel JupyterLab starts for it."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, path)


def write_notebook(root: Path) -> None:
    write_code_cells(root / NOTEBOOK, CELL_SOURCES)


@contextlib.contextmanager
def lab_server(
    root: Path,
    home: Path,
    srv: FakeLLMServer,
    *,
    artifact: str,
    app: str = "jupyterlab",
    collaborative: bool = False,
    extension: bool = True,
    disabled: tuple[str, ...] = (),
    theme: str | None = None,
    settings: dict[str, Any] | None = None,
    **env: str,
) -> Iterator[RunningServer]:
    """JupyterLab (and Notebook 7) serving `root` for pages of `app` ("jupyterlab", "notebook7"),
    talking to the fake LLM `srv` (the process's shared one: `shared_llm()`), its log saved as
    tests/artifacts/<artifact>.log. Real-time collaboration (jupyter-collaboration) is off unless
    `collaborative`; our lab extension is disabled unless `extension`, and so are the plugins in
    `disabled` ("agentik-jupyter:goto"); `theme` is JupyterLab's theme setting, `settings` other
    user settings by plugin ("@jupyterlab/toc-extension/registry": {...}).

    The server is shared by every module of the test process with the same configuration
    (tests/shared_servers.py): `root` must come from `tmp_path_factory`, and `home` is not used.
    The kernel must ask before run_code and must not wait in the cell: any AGENTIK_* the test
    runner has (AGENTIK_APPROVE=auto, AGENTIK_WAIT=1 for nbval...) is left out of its environment.
    """
    if srv is not POOL.llm():
        raise RuntimeError("a browser module's fake LLM is the shared one: take it from shared_llm()")
    kept = tuple(sorted((k, v) for k, v in env.items() if k not in IGNORED_ENV and k != "AGENTIK_APPROVAL_TIMEOUT"))
    saved = tuple(sorted((plugin, json.dumps(value)) for plugin, value in (settings or {}).items()))
    off = tuple(sorted({*disabled, *(() if extension else (OUR_EXTENSION,))}))
    config = ServerConfig(app=app, collaborative=collaborative, disabled=off, theme=theme, settings=saved, env=kept)

    def prepare(home: Path) -> None:
        quiet_lab_settings(home)
        if off:
            disabled_extensions(home, off)
        if theme is not None:
            theme_settings(home, theme)
        for plugin, text in saved:
            user_settings(home, plugin, text)

    with module_view(root, config, prepare, save=lambda log: save_artifact(f"{artifact}.log", log)) as server:
        yield server


@contextlib.contextmanager
def browser_lab(
    srv: FakeLLMServer,
    server: RunningServer,
    *,
    artifact: str,
    height: int = 1100,
    width: int = 1280,
    levels: tuple[str, ...] = ("error", "warning"),
) -> Iterator[Lab]:
    """A page of its own (a fresh browser context) in the process's shared headless Chromium, on
    `server`; console lines of `levels` and page errors are kept in `lab.console` and saved as
    tests/artifacts/<artifact>-console.log."""
    with contextlib.ExitStack() as stack:
        playwright = stack.enter_context(sync_api.sync_playwright())
        browser, context = new_context(playwright, viewport={"width": width, "height": height})
        stack.callback(browser.close)
        stack.callback(context.close)
        page = context.new_page()
        page.set_default_timeout(15_000)
        lab = Lab(srv, server, page)
        stack.callback(lambda: save_artifact(f"{artifact}-console.log", "\n".join(lab.console) + "\n"))
        page.on("console", lambda m: lab.console.append(f"{m.type}: {m.text}") if m.type in levels else None)
        page.on("pageerror", lambda e: lab.console.append(f"pageerror: {e}"))
        yield lab


@contextlib.contextmanager
def notebook_page(
    tmp_path_factory: pytest.TempPathFactory,
    notebook: str,
    sources: list[str],
    *,
    artifact: str,
    url_path: str,
    reset: bool = True,
    chunk_delay: float = 0.0,
    disabled: tuple[str, ...] = (),
) -> Iterator[Lab]:
    """`notebook` of these code cells opened at `url_path` (JupyterLab's or Notebook 7's, the path
    relative to the module's folder), the fake LLM behind it, approvals waiting up to 120 s,
    sessions beside the notebook; the lab plugins in `disabled` switched off."""
    tmp = tmp_path_factory.mktemp(artifact)
    root = tmp / "root"
    root.mkdir()
    write_code_cells(root / notebook, sources)
    with (
        shared_llm(chunk_delay=chunk_delay) as srv,
        lab_server(root, tmp / "home", srv, artifact=artifact, app=app_at(url_path), disabled=disabled) as server,
        browser_lab(srv, server, artifact=artifact) as lab,
    ):
        lab.page.goto(server.link(url_path, reset=reset), timeout=30_000)
        lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)
        yield lab


def app_at(url_path: str) -> str:
    """Which app a page at `url_path` is: Notebook 7's pages are under /notebooks/ and /tree."""
    return "notebook7" if url_path.startswith(("/notebooks/", "/tree")) else "jupyterlab"


def quiet_lab_settings(home: Path) -> None:
    """No "get notified about Jupyter news?" toast over the screenshots (user settings in the temp HOME)."""
    settings = home / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("browser")
    root, home = tmp / "root", tmp / "home"
    root.mkdir()
    write_notebook(root)
    write_saved_notebooks(root)
    (ARTIFACTS / "failed.png").unlink(missing_ok=True)  # from an earlier run
    with (
        shared_llm(chunk_delay=CHUNK_DELAY) as srv,
        lab_server(root, home, srv, artifact="jupyterlab") as server,
        browser_lab(srv, server, artifact="jupyterlab", height=1300) as lab,
    ):  # 120 s: a lost click never hangs
        yield lab


def save_artifact(name: str, text: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / name).write_text(text)


def panel_idle(lab: Lab) -> None:
    """The panel's Stop button is disabled again (no turn running)."""
    lab.wait(lambda: lab.panel.get_by_role("button", name="Stop").is_disabled(), 60, "the panel to be idle")


def panel_send(lab: Lab, text: str, *, enter: bool = False) -> None:
    panel_idle(lab)
    box = lab.panel.get_by_placeholder("Ask the agent")
    box.click()
    if enter:
        box.fill(text)  # one input event, like a paste (typing key by key races: see test_8)
        box.press("Enter")
    else:
        box.fill(text)
        lab.panel.get_by_role("button", name="Send").click()


def last_user_text(lab: Lab) -> str:
    request = lab.srv.last_request
    return request.last_user_text() if request else ""


def tool_messages(lab: Lab) -> list[dict[str, Any]]:
    """The tool results the model was sent in the last request (OpenAI wire format)."""
    request = lab.srv.last_request
    assert request is not None and isinstance(request.body, dict)
    return [m for m in request.body.get("messages", []) if m.get("role") == "tool"]


def prompt(lab: Lab, index: int) -> str:
    return lab.text(lab.cell(index).locator(".jp-InputArea-prompt"))


# ---------------------------------------------------------------- the flow


def test_1_cell_answer_streams(lab: Lab) -> None:
    lab.srv.push(Reply.text(FIRST_ANSWER))
    page = lab.page
    page.goto(lab.server.link(f"/lab/tree/{NOTEBOOK}", reset=True), timeout=30_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=45_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=30_000)
    shown = watch(lab, CELL_AGENT, ".jp-Cell-outputArea")  # every text it shows, however short-lived
    run_cell(lab, CELL_LOAD)
    for _ in range(CELL_PANEL):  # run the next three cells; the fifth stays for later
        page.keyboard.press("Shift+Enter")
    out = lab.output(CELL_AGENT)

    lab.wait(lambda: "Streaming answer:" in lab.text(out), 90, "the streamed answer in the %%agent cell")
    lab.shot("streaming.png", at=out)
    # read the text inside the wait: the live view is swapped in place for the saved transcript
    # when the turn ends, and between the two the output area is briefly empty
    full = lab.wait(lambda: (t := lab.text(out)) and "END-FIRST" in t and t, 90, "the full answer in the %%agent cell")
    seen = shown.seen()
    shown.stop()
    partial = [t for t in seen if "Streaming answer:" in t and "END-FIRST" not in t]
    assert partial, f"the answer never showed in part, only: {seen}"
    assert len(full) > len(partial[0])
    for word in FIRST_ANSWER.split():
        assert word in full
    lab.wait(lambda: "✓ Done" in lab.text(out), 60, "the cell's status to say Done")
    assert lab.srv.requests[0].last_user_text().strip() == CELL_SOURCES[CELL_AGENT].split("\n", 1)[1]
    # the DataFrame made it into the context the model was sent
    assert "sales" in json.dumps(lab.srv.requests[0].body)
    lab.wait(lambda: lab.panel.get_by_placeholder("Ask the agent").is_visible(), 60, "the chat panel")
    lab.no_widget_errors()
    lab.shot("streamed.png", at=lab.output(CELL_AGENT))


def test_2_panel_send_button(lab: Lab) -> None:
    lab.srv.push(Reply.text(SEND_ANSWER))
    panel_send(lab, SEND_QUESTION)
    lab.wait(lambda: "END-SEND" in lab.text(lab.panel), 60, "the panel's answer after Send")
    assert last_user_text(lab) == SEND_QUESTION
    text = lab.text(lab.panel)
    assert SEND_QUESTION in text and "Streaming answer:" in text  # the whole conversation is there
    assert lab.panel.get_by_placeholder("Ask the agent").input_value() == ""  # the box was cleared
    panel_idle(lab)


def test_3_panel_enter_sends(lab: Lab) -> None:
    lab.srv.push(Reply.text(ENTER_ANSWER))
    panel_send(lab, ENTER_QUESTION, enter=True)
    lab.wait(lambda: "END-ENTER" in lab.text(lab.panel), 60, "the panel's answer after Enter")
    assert last_user_text(lab) == ENTER_QUESTION  # all of the typed text, not a stale prefix
    panel_idle(lab)
    lab.wait(lambda: "✓ Done" in lab.text(lab.panel.locator(".agentik-status")), 5, "Done in the panel")
    lab.no_widget_errors()
    lab.shot("panel.png", at=lab.panel.get_by_role("button", name="Send"))


def test_3b_cell_right_after_a_panel_answer_starts_at_once_and_stops(lab: Lab) -> None:
    """After a panel turn sent with Enter (widget messages on a kernel subshell), a new `%%agent`
    cell's long answer starts with no other cell run after it, and its Stop stops it long before
    the answer's end. The bug this walks parked the cell's request until the next cell ran (~20 s);
    how fast a turn starts and stops is measured by bench (first words, stop_latency), not here:
    on a loaded machine a page's second is not the kernel's."""
    lab.srv.push(Reply.text(ENTER_ANSWER), Reply.text(LONG_ANSWER))
    panel_send(lab, "Quick follow-up with Enter", enter=True)
    lab.wait(lambda: lab.text(lab.panel).count("END-ENTER") >= 2, 60, "the panel's answer")
    out = lab.output(CELL_LONG)
    lab.cell(CELL_LONG).locator(".jp-InputArea-prompt").click()
    lab.page.keyboard.press("Shift+Enter")
    lab.wait(lambda: "Long essay: w0" in lab.text(out), 15, "the long answer to start, no other cell run")
    lab.srv.chunk_delay = HELD_CHUNK_DELAY  # (Stop sits below the text: a line that wraps under the click moves it)
    stop = out.get_by_role("button", name="Stop")
    stop.click()
    lab.wait(lambda: "Stopped" in lab.text(out), 10, "the cell to say Stopped (the answer streams for 30 s)")
    lab.srv.chunk_delay = CHUNK_DELAY
    # the turn ended: its Rewind (drawn once the kernel said it can be rewound) comes last
    rewind = out.get_by_role("button", name=re.compile(r"^\W*Rewind$"))
    lab.wait(lambda: rewind.count() and rewind.is_visible(), 30, "the stopped turn's Rewind")
    before = lab.text(out)
    assert "END-LONG" not in before
    lab.stays(lambda: lab.text(out) == before, 1.0, "the stopped cell's text to stay as it was")
    lab.no_widget_errors()


def test_3c_run_all_over_three_background_cells(lab: Lab) -> None:
    """Three background `%%agent` cells run back to back all answer, in order."""
    first = len(lab.srv.requests)
    lab.cell(CELL_RUN_ALL).locator(".jp-InputArea-prompt").click()
    for _ in RUN_ALL_QUESTIONS:
        lab.page.keyboard.press("Shift+Enter")
    for n, question in enumerate(RUN_ALL_QUESTIONS):
        out = lab.output(CELL_RUN_ALL + n)
        lab.wait(
            lambda: (t := lab.text(out)) and f"Echo: {question}" in t and "✓ Done" in t,
            20,
            f"the answer to {question!r} in its own cell",
        )
        assert "already running" not in lab.text(out)
    asked = [r.last_user_text().strip() for r in lab.srv.requests[first:]]
    assert asked == RUN_ALL_QUESTIONS
    lab.shot("run_all.png", at=lab.output(CELL_RUN_ALL + 2))


MOVE_SOURCE = "reports/q3.csv"
MOVE_DESTINATION = "/somewhere/else/entirely/" + "deep/" * 30 + "q3-copy.csv"
FILES_SERVER = Path(__file__).parents[1] / "mcp_servers" / "files_server.py"
MOVE_TOOL = "files__move_file"


def test_3d_approval_card_shows_every_argument(lab: Lab) -> None:
    """An MCP tool's two arguments are both on its approval card (the long one wrapped).

    A project mcp.json beside the notebook names a real stdio MCP server; the cell trusts it
    (`%agent mcp trust`), the model calls its `move_file(source, destination)`, and the card
    in JupyterLab shows both arguments in full before Approve sends the call to the server.
    """
    config = {"mcpServers": {"files": {"command": sys.executable, "args": [str(FILES_SERVER)]}}}
    (lab.server.root / "mcp.json").write_text(json.dumps(config))
    out = lab.output(CELL_MOVE_TOOL)
    lab.cell(CELL_MOVE_TOOL).locator(".jp-InputArea-prompt").click()
    lab.page.keyboard.press("Shift+Enter")
    lab.wait(lambda: "files (stdio, policy ask): ready, 1 tool" in lab.text(out), 30, "the trusted MCP server")
    args = {"source": MOVE_SOURCE, "destination": MOVE_DESTINATION}
    lab.srv.push(Reply.tool_calls([{"name": MOVE_TOOL, "args": args}]), Reply.text("Moved. END-MOVE"))
    panel_send(lab, "Move the Q3 report.")
    approve = lab.panel.get_by_role("button", name="Approve")
    approve.wait_for(state="visible", timeout=60_000)
    question = lab.panel.locator(".widget-html", has_text="Approve?").last
    assert MOVE_TOOL in lab.text(question)
    shown = {name: question.locator(".agentik-arg", has_text=f"{name}:") for name in args}
    for name, value in args.items():
        arg = shown[name]
        assert arg.count() == 1 and arg.is_visible(), name
        assert value in lab.text(arg).replace("\n", ""), name  # whole, not cut
        pre = arg.locator("pre")  # wrapped: nothing sits off to the right of the box
        assert pre.evaluate("el => el.scrollWidth <= el.clientWidth"), f"{name} overflows its box"
    lab.shot("approval_two_args.png", at=approve)
    approve.click()
    lab.wait(lambda: "END-MOVE" in lab.text(lab.panel), 60, "the answer after Approve")
    results = json.dumps(tool_messages(lab))
    assert f"dry run: would move {MOVE_SOURCE} to {MOVE_DESTINATION}" in results  # the MCP server answered
    panel_idle(lab)


def answer_under(text: str, question: str) -> str:
    """What the panel shows after the last `question`; nothing while the question is not shown."""
    _, asked, after = text.rpartition(question)
    return after if asked else ""


def test_4_stop_a_long_answer(lab: Lab) -> None:
    lab.srv.push(Reply.text(LONG_ANSWER))
    panel_send(lab, LONG_QUESTION)
    panel = lab.panel
    streaming = " ".join(LONG_ANSWER.split()[:14])  # "Long essay: w0 ... w11"
    # under its own question: an earlier stopped cell turn (3b) in the history holds the same words,
    # and until the question is shown rpartition would search the whole panel
    lab.wait(lambda: streaming in answer_under(lab.text(panel), LONG_QUESTION), 60, "the long answer to stream")
    stop = panel.get_by_role("button", name="Stop")
    assert stop.is_enabled()
    stop.click()
    clicked = time.monotonic()
    lab.wait(lambda: "Stopped" in lab.text(panel.locator(".agentik-status")), 5, "the status to say Stopped")
    assert time.monotonic() - clicked < 3
    mark = panel.locator(".agentik-stopped")
    lab.wait(
        lambda: mark.count() and lab.text(mark.last).strip() == "■ Stopped", 5, "the Stopped mark under the answer"
    )
    before = len(lab.text(panel))
    lab.stays(
        lambda: len(lab.text(panel)) == before, 1.0, f"the answer to stop growing after Stop ({before} characters)"
    )
    assert "END-LONG" not in lab.text(panel)
    assert stop.is_disabled()
    lab.shot("stopped.png", at=lab.panel.get_by_role("button", name="Send"))


def test_5_approve_run_code_in_panel(lab: Lab) -> None:
    lab.srv.push(Reply.tool_calls([{"name": "run_code", "args": {"code": APPROVE_CODE}}]), Reply.text(APPROVE_ANSWER))
    panel_send(lab, APPROVE_QUESTION)
    panel = lab.panel
    approve = panel.get_by_role("button", name="Approve")
    approve.wait_for(state="visible", timeout=60_000)
    code = panel.locator("code.language-python").last
    assert code.inner_text() == APPROVE_CODE  # exactly the code that will run
    assert "Approve?" in lab.text(panel)
    assert panel.get_by_role("button", name="Deny").is_visible()
    lab.shot("approval.png", at=approve)
    approve.click()
    lab.wait(lambda: "END-APPROVED" in lab.text(panel), 60, "the answer after Approve")
    text = lab.text(panel)
    assert "✓ Approved" in text
    assert "✓ run_code(" in text  # the tool card's title
    results = tool_messages(lab)
    assert results and "TOTAL 6" in json.dumps(results[-1])  # it really ran in the kernel
    title = panel.get_by_text("✓ run_code(", exact=False).last
    title.click()  # expand the card
    lab.wait(lambda: "TOTAL 6" in lab.text(panel), 5, "the tool card's result when expanded")
    # Markdown in the answer is rendered, not shown raw
    assert panel.locator("strong", has_text="6").count() >= 1
    panel_idle(lab)
    lab.no_widget_errors()
    lab.shot("approved.png", at=lab.panel.get_by_role("button", name="Send"))


def test_6_deny_run_code_in_panel(lab: Lab) -> None:
    lab.srv.push(Reply.tool_calls([{"name": "run_code", "args": {"code": DENY_CODE}}]), Reply.text(DENY_ANSWER))
    panel_send(lab, DENY_QUESTION)
    panel = lab.panel
    deny = panel.get_by_role("button", name="Deny")
    deny.wait_for(state="visible", timeout=60_000)
    assert panel.locator("code.language-python").last.inner_text() == DENY_CODE
    deny.click()
    lab.wait(lambda: "END-DENIED" in lab.text(panel), 60, "the answer after Deny")
    assert "✗ Denied" in lab.text(panel)
    results = tool_messages(lab)
    assert results and "did not approve" in results[-1]["content"]  # the model was told
    panel_idle(lab)
    lab.no_widget_errors()


def test_7_approve_in_agent_cell_then_panel(lab: Lab) -> None:
    """Approval in a `%%agent` cell's own view; then a panel turn must ask in the panel again."""
    lab.srv.push(Reply.tool_calls([{"name": "run_code", "args": {"code": CELL_CODE}}]), Reply.text(CELL_ANSWER))
    lab.cell(CELL_APPROVE).locator(".jp-InputArea-prompt").click()
    lab.page.keyboard.press("Shift+Enter")
    out = lab.output(CELL_APPROVE)
    approve = out.get_by_role("button", name="Approve")
    approve.wait_for(state="visible", timeout=60_000)
    assert out.locator("code.language-python").last.inner_text() == CELL_CODE
    lab.shot("approval_cell.png", at=approve)
    approve.click()
    lab.wait(lambda: "END-CELL" in lab.text(out), 60, "the cell's answer after Approve")
    lab.wait(lambda: "✓ Done" in lab.text(out), 60, "the cell's status to say Done")
    assert "FROM CELL 3" in json.dumps(tool_messages(lab)[-1])

    lab.srv.push(
        Reply.tool_calls([{"name": "run_code", "args": {"code": AFTER_CELL_CODE}}]), Reply.text(AFTER_CELL_ANSWER)
    )
    panel_send(lab, AFTER_CELL_QUESTION)
    approve = lab.panel.get_by_role("button", name="Approve")
    approve.wait_for(state="visible", timeout=60_000)
    approve.click()
    lab.wait(lambda: "END-AFTER" in lab.text(lab.panel), 60, "the panel's answer after the cell turn")
    assert "AFTER CELL 3" in json.dumps(tool_messages(lab)[-1])
    lab.no_widget_errors()
    lab.shot("final.png")


def cell_source(lab: Lab, index: int) -> str:
    """The cell's text; scrolled into view first, as JupyterLab builds an editor only when it is seen."""
    lab.cell(index).scroll_into_view_if_needed(timeout=5_000)
    return lab.text(lab.cell(index).locator(".jp-InputArea-editor .cm-content"))


def test_7b_proposed_cells_appear_below_the_asking_cell(lab: Lab) -> None:
    """The turn runs in the background, so the cells come through the extension, not a reply payload."""
    lab.srv.push(
        *(Reply.tool_calls([{"name": "insert_cell", "args": {"source": code}}]) for code in PROPOSED_CELLS),
        Reply.text(PROPOSE_ANSWER),
    )
    panel_idle(lab)
    lab.cell(CELL_PROPOSE).locator(".jp-InputArea-prompt").click()
    lab.page.keyboard.press("Shift+Enter")  # on the last cell: JupyterLab adds an empty cell below it
    out = lab.output(CELL_PROPOSE)
    lab.wait(lambda: (t := lab.text(out)) and "END-PROPOSE" in t and "✓ Done" in t, 60, "the proposing turn to end")
    below = [CELL_PROPOSE + 1, CELL_PROPOSE + 2]
    marked = [f"{PROPOSAL_LINE}\n{code}" for code in PROPOSED_CELLS]  # each says it is an unrun proposal
    lab.wait(lambda: [cell_source(lab, i) for i in below] == marked, 60, "the proposed cells below the asking cell")
    assert lab.page.locator(".jp-Notebook .jp-Cell").count() == CELL_PROPOSE + 4  # and the empty one after them
    assert all(prompt(lab, i).strip() in ("[ ]:", "[ ]") for i in below), "a proposed cell was run"
    results = [m["content"] for m in tool_messages(lab)][-2:]  # earlier turns' results come first
    assert all("Inserted a new code cell" in r for r in results), results
    lab.shot("proposed_cells.png", at=lab.cell(CELL_PROPOSE + 2))


def test_8_enter_right_after_typing_sends_all_of_the_text(lab: Lab) -> None:
    """Keep this the last step in the demo notebook: it leaves the kernel's Text widgets slowed down."""
    lab.srv.push(Reply.text(TYPED_ANSWER))
    panel_idle(lab)
    lab.cell(CELL_SLOW).locator(".jp-InputArea-prompt").click()
    lab.page.keyboard.press("Shift+Enter")
    lab.wait(lambda: re.search(r"\[\d+\]", prompt(lab, CELL_SLOW)), 60, "the slow-link cell to run")
    box = lab.panel.get_by_placeholder("Ask the agent")
    box.click()
    box.press_sequentially(TYPED_QUESTION[:-1], delay=30)  # ~30 keys a second, a quick typist
    box.press_sequentially(TYPED_QUESTION[-1])  # the last key and Enter back to back
    box.press("Enter")
    lab.wait(lambda: "END-TYPED" in lab.text(lab.panel), 60, "the answer to the typed question")
    sent = last_user_text(lab)
    lab.shot("typed.png", at=lab.panel.get_by_role("button", name="Send"))
    assert sent == TYPED_QUESTION, f"the model was sent {sent!r}, the user typed {TYPED_QUESTION!r}"


def open_notebook(lab: Lab, name: str) -> None:
    lab.page.goto(lab.server.link(f"/lab/tree/{name}", reset=True), timeout=30_000)
    lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=45_000)


def test_9_saved_transcripts_render_without_a_kernel(lab: Lab) -> None:
    open_notebook(lab, SAVED_NOTEBOOK)
    page = lab.page
    saved = nbformat.read(lab.server.root / SAVED_NOTEBOOK, as_version=4)
    expected = sum(TRANSCRIPT_MIME in o.get("data", {}) for c in saved.cells for o in c.get("outputs", []))
    transcripts = page.locator(TRANSCRIPT)
    # the class is the extension's own (the text/html fallback beside it says agentik-transcript)
    lab.wait(lambda: transcripts.count() == expected, 30, f"{expected} transcripts drawn by the extension")

    def asked(question: str) -> Any:
        """The transcript of this question (others may quote it: read_notebook shows the cells)."""
        return transcripts.filter(has=page.locator(".agentik-question").get_by_text(question, exact=True))

    described = asked("Describe the sales DataFrame for me.")
    assert described.locator(".agentik-question").inner_text() == "Describe the sales DataFrame for me."
    card = described.locator("details.agentik-tool")
    assert card.count() == 1 and card.get_attribute("open") is None  # collapsed
    card.locator(":scope > summary").click()
    lab.wait(lambda: card.locator(".agentik-preview table").is_visible(), 5, "the tool card's table when opened")
    assert "describe_dataframe" in lab.text(card.locator(":scope > summary"))
    assert "✓ Done" in lab.text(described.locator(".agentik-status"))
    hello = asked("Hello! What can you do?")
    assert hello.locator(".agentik-assistant em", has_text="describe").count() == 1  # Markdown rendered
    lab.shot("transcript.png", at=card)

    hostile = transcripts.filter(has_text="END-HOSTILE")
    hostile.locator("details.agentik-tool > summary").click()
    hostile.locator(".agentik-preview").wait_for(state="visible", timeout=5_000)
    lab.stays(lambda: page.evaluate(PWNED) is None, 0.5, "no injected handler to run")
    assert hostile.locator("script, [onerror], img").count() == 0
    assert lab.text(hostile.locator(".agentik-question")) == HOSTILE_QUESTION  # shown as text
    assert hostile.locator(".agentik-question b").count() == 0
    assert hostile.locator(".agentik-assistant strong", has_text="Markdown").count() == 1
    assert hostile.locator(".agentik-assistant a", has_text="Image:").count() == 1  # the image became a link
    assert "<i>x</i>" in lab.text(hostile.locator("details.agentik-tool pre").first)
    assert "cell-ok" in lab.text(hostile.locator(".agentik-preview"))
    assert lab.text(hostile.locator(".agentik-error")) == "⚠ <b>not bold</b> error text"
    lab.shot("transcript_hostile.png", at=hostile)


def test_10_sessions_sidebar_lists_and_pages_history(lab: Lab) -> None:
    open_notebook(lab, HISTORY_NOTEBOOK)
    page = lab.page
    page.locator('.jp-SideBar [data-id="agentik-sessions"]').click()
    sidebar = page.locator(".jp-AgentikSidebar")
    sessions = sidebar.locator("button.agentik-session")
    lab.wait(lambda: sessions.count() == 2, 60, "two sessions in the sidebar")
    assert HISTORY_NOTEBOOK in lab.text(sidebar.locator(".agentik-sidebar-notebook"))
    assert "Short session" in lab.text(sessions.nth(0))  # most recently updated first
    assert "Long sales session" in lab.text(sessions.nth(1))
    assert f"{HISTORY_TURNS * 2 + 2} messages" in lab.text(sessions.nth(1))
    lab.shot("sessions.png")

    sessions.nth(1).click()
    history = sidebar.locator(".agentik-history")
    lab.wait(lambda: "END-HISTORY" in lab.text(history), 60, "the latest page of the session's history")
    text = lab.text(history)
    assert "History question 29" in text and "History question 0" not in text
    assert history.locator(".agentik-question", has_text="Describe <b>sales</b>").count() == 1
    card = history.locator("details.agentik-tool")
    assert card.count() == 1
    card.locator(":scope > summary").click()
    lab.wait(lambda: "sales: 100 rows x 3 columns" in lab.text(card), 5, "the tool result in its card")
    assert "describe_dataframe" in lab.text(card.locator(":scope > summary"))
    assert history.locator(".agentik-assistant strong", has_text="100 rows").count() == 1
    assert history.locator("script, [onerror], img").count() == 0 and page.evaluate(PWNED) is None
    lab.shot("sessions_history.png")

    earlier = sidebar.get_by_role("button", name="Show older")
    assert earlier.is_visible()
    earlier.click()
    lab.wait(lambda: "History question 0" in lab.text(history), 60, "the earlier page of history")
    assert not earlier.is_visible()  # nothing older left
    assert lab.text(history).index("History question 0") < lab.text(history).index("END-HISTORY")
    assert lab.text(history).count("History question 12") == 1  # no row shown twice
    lab.shot("sessions_earlier.png", at=history.locator(".agentik-question", has_text="History question 0"))
    sidebar.get_by_role("button", name="‹ All sessions").click()
    lab.wait(lambda: sessions.count() == 2, 60, "the session list again")
