"""The key stays in the Jupyter server: a kernel the server starts has none, not even in what /proc
shows of the server and its ancestors, and its turns go through the server's chat route; a key set
in the kernel keeps the turn in the kernel; a kernel no server started (nbclient) works in-kernel as
before."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.core.transport import KEY_IN_KERNEL, KEY_IN_SERVER
from agentik_jupyter.server.provider_env import secret_names, take_provider_secrets
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import FAKE_API_KEY
from tests.jupyter_servers import (
    RunningServer,
    attach,
    jupyter_for,
    start_notebook_session,
    stop_notebook_session,
)
from tests.kernel_support import NotebookKernel, kernel_env
from tests.proc_support import no_proc_file_holds, proc_files_holding

pytestmark = pytest.mark.timeout(240)

KERNEL_KEY = "sk-set-in-the-kernel-5d1e9a7c"
SAY_ERROR = "try:\n    {}\nexcept Exception as error:\n    print(type(error).__name__, error)"
QUICKSTART = Path(__file__).parents[2] / "notebooks" / "quickstart.ipynb"


def quickstart_first_cell() -> str:
    """The quickstart's first code cell, as saved: it decides whether the demo model starts."""
    cells = json.loads(QUICKSTART.read_text())["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def server(llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with jupyter_for(llm, tmp_path_factory) as running:
        yield running


@pytest.fixture
def kernel(server: RunningServer) -> Iterator[Any]:
    session = start_notebook_session(server, "keyless.ipynb")
    attached = attach(server, session["kernel"]["id"])
    try:
        yield attached
    finally:
        attached.close()
        stop_notebook_session(server, session)


def test_secret_names_are_the_key_and_credentials_in_the_base_url() -> None:
    env = {
        "LLM_API_KEY": "k" * 20,
        "LLM_PROVIDER": "anthropic",
        "LLM_MODEL": "m",
        "LLM_BASE_URL": "http://localhost:11434/v1",
        "LLM_EXTRA_TOKEN": "t" * 20,
        "LLM_API_KEY_FILE": "/run/secrets/llm_api_key",
        "HOME": "/root",
    }
    assert sorted(secret_names(env)) == ["LLM_API_KEY", "LLM_EXTRA_TOKEN"]
    env["LLM_BASE_URL"] = "https://user:hunter2secret@proxy.example/v1"
    assert "LLM_BASE_URL" in secret_names(env)
    opted_out = {"LLM_API_KEY": "k" * 20, "AGENTIK_KEY_IN_KERNELS": "1"}
    assert take_provider_secrets(opted_out) == [] and opted_out["LLM_API_KEY"] == "k" * 20


def test_a_server_kernel_has_no_key_and_its_turn_streams_through_the_server(
    server: RunningServer, llm: FakeLLMServer, kernel: Any
) -> None:
    seen = kernel.value(
        "{'key': __import__('os').environ.get('LLM_API_KEY'), "
        "'marker': __import__('os').environ.get('AGENTIK_PROVIDER_IN_SERVER'), "
        "'model': __import__('os').environ.get('LLM_MODEL'), "
        "'proc': 'LLM_API_KEY=' in open('/proc/self/environ', 'rb').read().decode(errors='replace')}"
    )
    assert seen == {"key": None, "marker": "1", "model": llm.env()["LLM_MODEL"], "proc": False}
    assert kernel.value(f"{FAKE_API_KEY!r} in repr(dict(__import__('os').environ))") is False

    kernel.text("%load_ext agentik_jupyter")
    status = kernel.text("%agent status")
    assert f"key:      {KEY_IN_SERVER}" in status
    assert "in the Jupyter server; this kernel has none" in status
    origin = " ".join(status.split("key from: ", 1)[1].split())  # (wrapped to the cell's width)
    assert origin.startswith("LLM_API_KEY in the server's environment. Processes of the same user could read it there")
    assert "LLM_API_KEY_FILE" in origin and "c.AgentikJupyter.api_key in the server's config" in origin

    llm.push(Reply.text("The answer came through the server."))
    before = len(llm.requests)
    out = kernel.text("%%agent --wait\nWhere does my key live?", timeout=60)
    assert "The answer came through the server." in out
    assert len(llm.requests) == before + 1
    sent = llm.requests[-1]
    assert sent.headers["authorization"] == f"Bearer {FAKE_API_KEY}"  # the provider got the server's key
    assert sent.last_user_text() == "Where does my key live?"
    assert FAKE_API_KEY not in out
    assert kernel.value("type(" + _transport() + ").__name__") == "KeyAwareTransport"
    assert kernel.value(_transport() + ".current().__class__.__name__") == "ServerTransport"


def test_no_process_the_server_controls_shows_the_key_in_proc(
    server: RunningServer, llm: FakeLLMServer, kernel: Any
) -> None:
    """From the kernel: the server (JPY_PARENT_PID) and each ancestor up to the process this test
    started show the key neither in /proc/<pid>/environ nor in /proc/<pid>/cmdline."""
    found = proc_files_holding(kernel, server.proc.pid, FAKE_API_KEY)
    assert no_proc_file_holds(found), found
    kernel.text("%load_ext agentik_jupyter")
    llm.push(Reply.text("Still answered."))
    assert "Still answered." in kernel.text("%%agent --wait\nStill there?", timeout=60)
    assert llm.requests[-1].headers["authorization"] == f"Bearer {FAKE_API_KEY}"


def test_a_key_set_in_the_kernel_keeps_the_turn_in_the_kernel(
    server: RunningServer, llm: FakeLLMServer, kernel: Any
) -> None:
    kernel.text("%load_ext agentik_jupyter")
    kernel.text(f"import os\nos.environ['LLM_API_KEY'] = {KERNEL_KEY!r}")
    assert f"key:      {KEY_IN_KERNEL}" in kernel.text("%agent status")
    llm.push(Reply.text("Answered from the kernel."))
    out = kernel.text("%%agent --wait\nAnd now?", timeout=60)
    assert "Answered from the kernel." in out
    assert llm.requests[-1].headers["authorization"] == f"Bearer {KERNEL_KEY}"
    assert kernel.value(_transport() + ".current().__class__.__name__") == "InProcessTransport"


def test_the_quickstart_uses_the_key_the_server_holds_not_the_demo(
    server: RunningServer, llm: FakeLLMServer, kernel: Any
) -> None:
    shown = kernel.text(quickstart_first_cell())
    assert "Traceback" not in shown, shown
    status = kernel.text("%agent status")
    assert f"model:    {llm.env()['LLM_MODEL']}" in status, status
    assert "agentik-demo" not in status and f"key:      {KEY_IN_SERVER}" in status, status
    assert kernel.value("__import__('os').environ.get('LLM_API_KEY')") is None
    llm.push(Reply.text("Your own model answers."))
    before = len(llm.requests)
    out = kernel.text("%%agent --wait\nWhich model is this?", timeout=60)
    assert "Your own model answers." in out and len(llm.requests) == before + 1
    assert llm.requests[-1].headers["authorization"] == f"Bearer {FAKE_API_KEY}"


def test_the_demo_refuses_to_replace_the_provider_the_server_holds(server: RunningServer, kernel: Any) -> None:
    out = kernel.execute("from agentik_jupyter.testing import demo\ndemo.start()").text
    assert "ConfigurationError" in out and "the demo model was not started" in out, out
    assert "in the Jupyter server" in out
    assert kernel.value("__import__('os').environ.get('LLM_MODEL')") != "agentik-demo"
    assert kernel.value("__import__('os').environ.get('LLM_API_KEY')") is None


def test_the_chat_route_and_the_server_log_mask_the_held_key(server: RunningServer) -> None:
    assert FAKE_API_KEY not in server.log()
    assert "the server holds LLM_API_KEY" in server.log()


def test_without_a_server_the_kernel_keeps_its_key(llm: FakeLLMServer, tmp_path: Path) -> None:
    kernel = NotebookKernel(kernel_env(llm, api_key=FAKE_API_KEY), tmp_path)
    try:
        kernel.run("%load_ext agentik_jupyter")
        status = kernel.text("%agent status")
        assert f"key:      {KEY_IN_KERNEL}" in status
        said = " ".join(status.split())
        assert "key from: LLM_API_KEY in this kernel's environment: code in this kernel" in said
        llm.push(Reply.text("In the kernel, as before."))
        assert "In the kernel, as before." in kernel.text("%%agent --wait\nhello")
        assert llm.requests[-1].headers["authorization"] == f"Bearer {FAKE_API_KEY}"
        assert os.environ.get("AGENTIK_PROVIDER_IN_SERVER") is None
        refused = kernel.text(SAY_ERROR.format("from agentik_jupyter.testing import demo; demo.start()"))
        assert "ConfigurationError" in refused and "the demo model was not started" in refused, refused
        assert "its key in this kernel" in refused
        llm.push(Reply.text("Still your model."))
        assert "Still your model." in kernel.text("%%agent --wait\nand now?")
    finally:
        kernel.close()


def _transport() -> str:
    return (
        "__import__('agentik_jupyter.kernel.agent', fromlist=['get_agent'])"
        ".get_agent(get_ipython()).session.orchestrator.transport"
    )
