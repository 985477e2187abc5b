"""Install agentik_jupyter the way a user does, and use it in JupyterLab 4 and Notebook 7.

1. `python -m build` on a clean clone of HEAD: the build hook compiles the lab extension, and
   both the sdist and the wheel carry it, the server extension's config and `install.json`;
2. `pip install` of the wheel (with `[mcp]`) into a new venv whose PATH has no Node.js:
   `jupyter labextension list` and `jupyter server extension list` show both enabled and OK;
3. JupyterLab started from that venv (the server extension enabled only by the installed
   config): a `%%agent` cell streams against the fake LLM, its finished answer is drawn by the
   lab extension's renderer (not the text/plain fallback), and the sessions sidebar lists it;
4. the same server's Notebook 7 (`/notebooks/…`): a `%%agent` cell streams, the panel's Stop
   stops a long answer, and Approve runs the model's code in the kernel.

Slow (a Node build and a venv, a few minutes): marked `install`, so `pytest -m install` runs it
alone and `make test-fast` leaves it out. The browser part needs Debian chromium, as
tests/browser/test_browser.py does, whose helpers it reuses.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2  # noqa: E402
import nbformat  # noqa: E402
import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply  # noqa: E402
from agentik_jupyter.testing.processes import stop  # noqa: E402
from tests.browser.test_browser import (  # noqa: F401  (skips this module, as that one, without chromium)
    CELL_AGENT,
    CELL_LOAD,
    CELL_PANEL,
    WIDGET_ERROR,
    Lab,
    browser_lab,
    quiet_lab_settings,
    run_cell,
    save_artifact,
    wait_until,
    watch,
    words,
)
from tests.browser_apps import IDLE  # noqa: E402
from tests.jupyter_servers import RunningServer, free_port, isolated_env  # noqa: E402

pytestmark = [pytest.mark.install, pytest.mark.timeout(1800), pytest.mark.xdist_group("alone")]

REPO = Path(__file__).resolve().parents[2]
EXT = "share/jupyter/labextensions/agentik-jupyter"
SERVER_CONFIG = "etc/jupyter/jupyter_server_config.d/agentik_jupyter.json"
NODE_TOOLS = {"node", "nodejs", "npm", "npx", "corepack", "yarn", "yarnpkg", "pnpm"}
BUILD_TIMEOUT = 900  # seconds: `npm install` of the lab extension's build tools on a busy machine
PIP_TIMEOUT = 900
CHUNK_DELAY = 0.05
TRANSCRIPT = ".jp-AgentikTranscript"
LAB_NOTEBOOK, NB7_NOTEBOOK = "in_lab.ipynb", "in_notebook7.ipynb"
CELLS = ["%load_ext agentik_jupyter", "numbers = [1, 2, 3]", "%%agent\nSummarise what you can do.", "%agent panel"]
LAB_ANSWER = words("Installed answer:", 30, "END-LAB")
NB7_ANSWER = words("Notebook seven answer:", 30, "END-NB7")
LONG_ANSWER = words("Long essay:", 600, "END-LONG")
APPROVE_CODE = "print('NB7', 6 * 7)"
APPROVE_ANSWER = "It printed 42. END-APPROVED"


def run(args: list[str], *, timeout: float, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    """Run a command; fail with its output (not just the exit code) when it fails."""
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{output[-4000:]}"
    return output


# ---------------------------------------------------------------- build and install


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("install")


@pytest.fixture(scope="module")
def dists(work: Path) -> dict[str, Path]:
    """The sdist and the wheel `python -m build` makes from a clean clone of HEAD."""
    if not (REPO / ".git").exists():
        pytest.skip("needs the git repository to clone a clean copy from")
    src = work / "src"
    run(["git", "clone", "-q", "--no-local", str(REPO), str(src)], timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["npm_config_prefer_offline"] = "true"  # the warm npm cache, as pip's
    run([sys.executable, "-m", "build", "-o", str(work / "dist"), str(src)], timeout=BUILD_TIMEOUT, env=env)
    (wheel,) = (work / "dist").glob("*.whl")
    (sdist,) = (work / "dist").glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def no_node_path(work: Path, venv_bin: Path) -> str:
    """PATH = the venv + every other command of this machine except Node.js and its package managers."""
    shim = work / "path-without-node"
    shim.mkdir(exist_ok=True)
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        folder = Path(entry)
        if not folder.is_dir() or folder.resolve() == Path(sys.executable).parent.resolve():
            continue
        for tool in folder.iterdir():
            link = shim / tool.name
            if tool.name not in NODE_TOOLS and not link.exists() and not link.is_symlink():
                link.symlink_to(tool)
    path = os.pathsep.join([str(venv_bin), str(shim)])
    assert shutil.which("node", path=path) is None and shutil.which("npm", path=path) is None
    return path


@pytest.fixture(scope="module")
def installed(work: Path, dists: dict[str, Path]) -> dict[str, Any]:
    """A new venv with JupyterLab, Notebook 7 and the wheel (with `[mcp]`); no Node.js on PATH."""
    target = work / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = no_node_path(work, target / "bin")
    python = target / "bin" / "python"
    run(
        # (--no-compile: bytecode for every module of JupyterLab's tree is most of the install's CPU, and not what is tested)
        [str(python), "-m", "pip", "install", "-q", "--no-compile", "jupyterlab", "notebook", f"{dists['wheel']}[mcp]"],
        timeout=PIP_TIMEOUT,
        env=env,
    )
    return {"python": python, "bin": target / "bin", "env": env}


def test_1_sdist_and_wheel_carry_the_prebuilt_extension(dists: dict[str, Path]) -> None:
    wheel_names = zipfile.ZipFile(dists["wheel"]).namelist()
    data = "agentik_jupyter-0.1.0.data/data/"
    for name in (f"{EXT}/package.json", f"{EXT}/install.json", f"{EXT}/static/style.js", SERVER_CONFIG):
        assert data + name in wheel_names, name
    assert any(re.fullmatch(rf"{data}{EXT}/static/remoteEntry\.\w+\.js", n) for n in wheel_names)
    assert "agentik_jupyter/__init__.py" in wheel_names
    with tarfile.open(dists["sdist"]) as sdist:
        sdist_names = [n.split("/", 1)[1] for n in sdist.getnames() if "/" in n]
    for name in (
        "agentik_jupyter/labextension/package.json",
        "agentik_jupyter/labextension/static/style.js",
        "labextension/install.json",
        "jupyter-config/jupyter_server_config.d/agentik_jupyter.json",
        "labextension/src/index.ts",
        "tests/data/conformance/README.md",
    ):
        assert name in sdist_names, name
    assert not any("node_modules" in n for n in sdist_names)


def test_2_installed_extensions_are_enabled_without_node(installed: dict[str, Any], work: Path) -> None:
    home = work / "cli-home"
    env = isolated_env(home, {"PATH": installed["env"]["PATH"]})
    jupyter = str(installed["bin"] / "jupyter")
    labext = run([jupyter, "labextension", "list"], timeout=120, env=env)
    assert re.search(r"agentik-jupyter v0\.1\.0 .*enabled.*OK.*\(python, agentik_jupyter\)", labext), labext
    assert "Node" not in labext and "rebuild" not in labext.lower(), labext
    serverext = run([jupyter, "server", "extension", "list"], timeout=120, env=env)
    assert re.search(r"agentik_jupyter .*enabled", serverext), serverext
    assert re.search(r"agentik_jupyter 0\.1\.0 .*OK", serverext), serverext
    # the [mcp] extra came along, and the magic loads in a plain IPython
    run(
        [
            str(installed["python"]),
            "-c",
            "import mcp; from IPython.core.interactiveshell import InteractiveShell;"
            "ip = InteractiveShell.instance(); ip.run_line_magic('load_ext', 'agentik_jupyter');"
            "assert 'agent' in ip.magics_manager.magics['cell']",
        ],
        timeout=120,
        env=env,
    )


# ---------------------------------------------------------------- the browser


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nbformat.write(nb, path)


@contextlib.contextmanager
def installed_jupyter(
    installed: dict[str, Any], root: Path, home: Path, env: dict[str, str]
) -> Iterator[RunningServer]:
    """`jupyter lab` of the installed venv, as a user starts it: no extension named on the command line."""
    token, port = secrets.token_hex(16), free_port()
    args = [
        str(installed["bin"] / "jupyter"),
        "lab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if os.geteuid() == 0:
        args.append("--allow-root")
    log_path = home / "jupyter-lab.log"
    full_env = isolated_env(home, {**env, "PATH": installed["env"]["PATH"]})
    for name in [n for n in full_env if n.startswith("AGENTIK_") and n not in env]:
        del full_env[name]  # the runner's AGENTIK_APPROVE=auto and such must not reach the kernel
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, cwd=root, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    server = RunningServer(f"http://127.0.0.1:{port}", token, root, proc, log_path)
    try:

        def up() -> bool:
            assert proc.poll() is None, f"jupyter lab exited:\n{server.log()[-3000:]}"
            with contextlib.suppress(httpx2.HTTPError):
                reply = httpx2.get(
                    f"{server.url}/agentik/api/sessions", headers={"Authorization": f"token {token}"}, timeout=2
                )
                return reply.status_code != 404  # the server extension's routes are there
            return False

        wait_until(up, 90, "the installed JupyterLab with the agentik server extension")
        yield server
    finally:
        stop(proc, 10)


@pytest.fixture(scope="module")
def lab(installed: dict[str, Any], work: Path) -> Iterator[Lab]:
    root, home = work / "root", work / "home"
    root.mkdir()
    write_notebook(root / LAB_NOTEBOOK)
    write_notebook(root / NB7_NOTEBOOK)
    quiet_lab_settings(home)
    srv = FakeLLMServer(chunk_delay=CHUNK_DELAY).start()
    env = {**srv.env(), "AGENTIK_APPROVAL_TIMEOUT": "120"}
    with contextlib.ExitStack() as stack:
        stack.callback(srv.stop)
        server = stack.enter_context(installed_jupyter(installed, root, home, env))
        stack.callback(lambda: save_artifact("install-jupyterlab.log", server.log()))
        yield stack.enter_context(browser_lab(srv, server, artifact="install"))


def run_agent_cells(lab: Lab, answer: str, end: str) -> str:
    """Run the four cells; return a text the %%agent cell showed while its answer was still streaming.

    Every text the output shows is recorded by the page as it renders it, so a short answer that
    streams while the test looks elsewhere (a loaded machine) still shows its partial states."""
    lab.srv.push(Reply.text(answer))
    start = " ".join(answer.split()[:2])
    shown = watch(lab, CELL_AGENT, ".jp-Cell-outputArea")
    try:
        run_cell(lab, CELL_LOAD)
    except Exception:
        dialogs = lab.page.locator(".jp-Dialog")
        texts = [dialogs.nth(i).inner_text() for i in range(dialogs.count())]
        lab.shot("failed.png")
        raise AssertionError(f"could not run the first cell; dialogs shown: {texts}") from None
    for _ in range(CELL_PANEL):
        lab.page.keyboard.press("Shift+Enter")
    out = lab.output(CELL_AGENT)
    lab.wait(lambda: end in lab.text(out), 90, "the whole answer")
    seen = shown.seen()
    shown.stop()
    partial = [text for text in seen if start in text and end not in text]
    assert partial, f"the answer never showed in part, only: {seen}"
    return partial[0]


def agentik_console_errors(lab: Lab) -> list[str]:
    return [line for line in lab.console if "agentik" in line.lower() and not line.startswith("warning")]


def test_3_jupyterlab_renders_the_transcript_and_the_sidebar(lab: Lab) -> None:
    page = lab.page
    page.goto(f"{lab.server.url}/lab/tree/{LAB_NOTEBOOK}?reset&token={lab.server.token}", timeout=30_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
    run_agent_cells(lab, LAB_ANSWER, "END-LAB")
    out = lab.output(CELL_AGENT)
    # the finished turn is the transcript bundle, drawn by the extension's renderer
    transcript = out.locator(TRANSCRIPT)
    lab.wait(
        lambda: transcript.count() == 1 and "END-LAB" in lab.text(transcript),
        90,
        "the transcript drawn by the lab extension",
    )
    assert "Summarise what you can do." in lab.text(transcript.locator(".agentik-question"))
    assert out.locator(".jp-RenderedText[data-mime-type='text/plain']").count() == 0
    lab.wait(lambda: lab.panel.get_by_placeholder("Ask the agent").is_visible(), 60, "the chat panel")
    assert WIDGET_ERROR not in lab.text(page.locator(".jp-Notebook"))
    lab.shot("install_lab.png", at=out)

    page.locator('.jp-SideBar [data-id="agentik-sessions"]').click()
    sessions = page.locator(".jp-AgentikSidebar button.agentik-session")
    lab.wait(lambda: sessions.count() == 1, 60, "this notebook's session in the sidebar")
    assert LAB_NOTEBOOK in lab.text(page.locator(".jp-AgentikSidebar .agentik-sidebar-notebook"))
    assert (lab.server.root / LAB_NOTEBOOK.replace(".ipynb", ".agentik.db")).is_file()
    lab.shot("install_sidebar.png")
    assert not agentik_console_errors(lab), lab.console


def test_4_notebook7_streams_stops_and_approves(lab: Lab) -> None:
    page = lab.page
    lab.console.clear()
    page.goto(f"{lab.server.url}/tree?token={lab.server.token}", timeout=30_000)  # Notebook 7's file list
    page.get_by_text(NB7_NOTEBOOK).wait_for(timeout=60_000)
    # the extension's plugins activate with the list; what they start may fail a moment later
    lab.stays(lambda: not agentik_console_errors(lab), 1.0, f"a page without errors of ours: {lab.console}")
    page.goto(f"{lab.server.url}/notebooks/{NB7_NOTEBOOK}?token={lab.server.token}", timeout=30_000)
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
    # the kernel is there before the first Shift+Enter (one pressed before it makes Notebook 7 ask
    # "Select Kernel" late, and the next Shift+Enter accepts that dialog: a second kernel)
    page.wait_for_selector(IDLE, timeout=60_000)
    assert page.locator("#jp-top-bar, .jp-NotebookKernelStatus, #jp-NotebookCheckpoint").count() >= 1  # Notebook 7
    assert page.locator(".jp-LabShell").count() == 0
    partial = run_agent_cells(lab, NB7_ANSWER, "END-NB7")
    assert len(partial) < len(NB7_ANSWER)
    out = lab.output(CELL_AGENT)
    lab.wait(lambda: out.locator(TRANSCRIPT).count() == 1, 90, "the transcript drawn in Notebook 7")
    lab.shot("install_notebook7.png", at=out)

    panel = lab.panel
    box = panel.get_by_placeholder("Ask the agent")
    box.wait_for(state="visible", timeout=60_000)
    stop = panel.get_by_role("button", name="Stop")
    lab.wait(lambda: stop.is_disabled(), 60, "the panel to be idle")
    lab.srv.push(Reply.text(LONG_ANSWER))
    box.fill("Write a very long essay.")
    panel.get_by_role("button", name="Send").click()
    lab.wait(lambda: "Long essay: w0 w1 w2 w3 w4 w5" in lab.text(panel), 60, "the long answer to stream")
    stop.click()
    lab.wait(lambda: "Stopped" in lab.text(panel.locator(".agentik-status")), 30, "the status to say Stopped")
    before = len(lab.text(panel))
    lab.stays(lambda: len(lab.text(panel)) == before and "END-LONG" not in lab.text(panel), 1.0, "the stopped answer")
    lab.shot("install_notebook7_stopped.png", at=panel)

    lab.wait(lambda: stop.is_disabled(), 60, "the panel to be idle after Stop")
    lab.srv.push(Reply.tool_calls([{"name": "run_code", "args": {"code": APPROVE_CODE}}]), Reply.text(APPROVE_ANSWER))
    box.fill("Run some code.")
    panel.get_by_role("button", name="Send").click()
    approve = panel.get_by_role("button", name="Approve")
    approve.wait_for(state="visible", timeout=60_000)
    assert panel.locator("code.language-python").last.inner_text() == APPROVE_CODE
    approve.click()
    lab.wait(lambda: "END-APPROVED" in lab.text(panel), 60, "the answer after Approve")
    request = lab.srv.last_request
    assert request is not None and "NB7 42" in json.dumps(request.body)  # it ran in the kernel
    assert WIDGET_ERROR not in lab.text(page.locator(".jp-Notebook"))
    assert not agentik_console_errors(lab), lab.console
    lab.shot("install_notebook7_approved.png", at=panel)
