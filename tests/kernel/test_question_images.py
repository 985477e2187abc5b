"""Images in a question, in a real kernel: picked in the panel's Image button (as JupyterLab sends
the file, on a kernel subshell), or mentioned as `@out[n]`; they reach the fake provider as image
parts, and a resumed session's panel shows them with the question."""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import PROVIDERS
from tests.image_support import png_bytes, png_size
from tests.kernel.test_subshell import comm_of, create_subshell, echoed, send_on_subshell
from tests.kernel_support import AGENT_EXPR, NotebookKernel, RawKernel, kernel_env, transcript, wait_for

pytestmark = pytest.mark.timeout(180)


def pick_file(kernel: RawKernel, subshell: str, upload: str, name: str, data: bytes, mime: str) -> None:
    """What the browser's FileUpload sends when the user picks a file: the value with the file's bytes as a buffer."""
    state = {"value": [{"name": name, "type": mime, "size": len(data), "last_modified": time.time() * 1000}]}
    content = {"method": "update", "state": state, "buffer_paths": [["value", 0, "content"]]}
    msg = kernel.kc.session.msg("comm_msg", {"comm_id": upload, "data": content})
    msg["header"]["subshell_id"] = subshell
    kernel.kc.session.send(kernel.kc.shell_channel.socket, msg, buffers=[data])


def question_images(kernel: RawKernel) -> list[str]:
    """The HTML the kernel set on widgets that show a question with its thumbnails."""
    values: list[str] = []
    for m in kernel.iopub:
        if m["msg_type"] in ("comm_open", "comm_msg"):
            value = str(m["content"].get("data", {}).get("state", {}).get("value", ""))
            if "agentik-question-images" in value:
                values.append(value)
    return values


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_image_picked_in_the_panel_reaches_the_model_and_shows_on_resume(tmp_path: Path, provider: str) -> None:
    db_path = tmp_path / "img.agentik.db"
    picture = png_bytes(1400, 700, "blue")
    s = f"{AGENT_EXPR}.session"
    with FakeLLMServer() as server:
        env = kernel_env(server, provider, AGENTIK_DB_PATH=str(db_path))
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            assert kernel.execute("%agent panel").ok
            kernel.drain(0.3)
            subshell = create_subshell(kernel)
            upload = comm_of(kernel, "FileUploadModel", accept="image/png")
            pick_file(kernel, subshell, upload, "chart.png", picture, "image/png")
            wait_for(lambda: kernel.drain(0.05) or "go with the next question" in str(kernel.iopub), 10, "thumbnail")
            box = comm_of(kernel, "TextModel", placeholder="Ask the agent")
            server.push(Reply.text("A blue box on white."))
            send_on_subshell(
                kernel, subshell, box, {"method": "update", "state": {"value": "What is this?"}, "buffer_paths": []}
            )
            wait_for(lambda: kernel.drain(0.05) or echoed(kernel, box), 5, "the text box's echo_update")
            send_on_subshell(kernel, subshell, box, {"method": "custom", "content": {"event": "submit"}})
            wait_for(lambda: server.requests, 20, "the panel's request")
            kernel.wait_until(f"not {s}.busy and {s}.last_outcome is not None", timeout=30)
            ((mime, data),) = server.requests[0].user_images()
            assert mime == "image/png" and max(png_size(data)) == 768  # fitted as plots are
            assert server.requests[0].last_user_text().strip() == "What is this?"
            kernel.drain(0.3)
            assert any(data in v for v in question_images(kernel))  # the question with its thumbnail
        finally:
            kernel.close()

        kernel = RawKernel(kernel_env(server, provider, AGENTIK_DB_PATH=str(db_path)), tmp_path)  # a restart
        try:
            kernel.text("%load_ext agentik_jupyter")
            assert kernel.execute("%agent panel").ok
            wait_for(lambda: kernel.drain(0.05) or question_images(kernel), 10, "the resumed question's image")
            assert any(data in v and "What is this?" in v for v in question_images(kernel))
        finally:
            kernel.close()


PLOT = """
%matplotlib inline
import matplotlib.pyplot as plt
plt.plot([1, 3, 2])
plt.title("Sales by week")
plt.show()
"""


def images_in(cell: Any) -> list[str]:
    return [o["data"]["image/png"] for o in cell.outputs if "image/png" in o.get("data", {})]


def test_out_mention_sends_that_cells_plot(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.push(Reply.text("A line that rises then falls."), Reply.text("No image there."))
        kernel = NotebookKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "o.agentik.db")), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            plotted = kernel.run(PLOT)
            assert plotted.execution_count == 2 and images_in(plotted)
            kernel.run("x = 1")
            cell = kernel.run("%%agent --wait\nWhat does @out[2] show?")
            kernel.run("%%agent --wait\nAnd @out[3]?")
        finally:
            kernel.close()
    first, second = server.requests
    ((mime, data),) = first.user_images()
    assert mime == "image/png" and data == images_in(plotted)[0]
    asked = first.last_user_text()
    assert asked.startswith("What does @out[2] show?") and "@out[2]: sent as image 1 (image/png" in asked
    assert "What does @out[2] show?" in transcript(cell.outputs)["text/plain"]
    assert "Attached by" not in transcript(cell.outputs)["text/plain"]  # the user sees what they asked
    assert second.user_images() == [] and "@out[3]: cell [3] showed no image" in second.last_user_text()


def test_out_mention_without_vision_sends_a_description_and_says_so(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.push(Reply.text("It is a line chart."))
        env = kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "v.agentik.db"), LLM_VISION="0")
        kernel = NotebookKernel(env, tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(PLOT.replace("plt.show()", "fig = plt.gcf()\nfig"))  # the figure as Out[2]
            cell = kernel.run("%%agent --wait\nWhat does @out[2] show?")
        finally:
            kernel.close()
    (request,) = server.requests
    assert request.user_images() == []
    asked = request.last_user_text()
    assert "not sent (LLM_VISION=0, no vision)" in asked
    assert "title 'Sales by week'" in asked and "1 line(s)" in asked  # the figure described instead
    shown = transcript(cell.outputs)["text/plain"]
    assert "1 image(s) not sent: this model has no vision (LLM_VISION=0)" in shown
    assert "It is a line chart." in shown


def test_out_mention_reads_the_saved_notebook_after_a_restart(tmp_path: Path) -> None:
    """A fresh kernel never saw cell [7] run: its image comes from the notebook's saved outputs."""
    import nbformat

    notebook = tmp_path / "analysis.ipynb"
    picture = base64.b64encode(png_bytes(200, 100, "green")).decode()
    cell = nbformat.v4.new_code_cell("plt.show()", execution_count=7)
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": picture, "text/plain": "<Figure>"})]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    nbformat.write(nb, notebook)
    with FakeLLMServer() as server:
        server.push(Reply.text("A green box."))
        env = kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "r.agentik.db"), JPY_SESSION_NAME=str(notebook))
        kernel = NotebookKernel(env, tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run("%%agent --wait\nWhat is in @out[7]?")
        finally:
            kernel.close()
    (request,) = server.requests
    assert request.user_images() == [("image/png", picture)]
