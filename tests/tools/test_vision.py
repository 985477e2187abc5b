"""Plots reach the model: image content in both wire formats, within a pixel and byte budget,
and a text description of the figure when the model has no vision (LLM_VISION=0)."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.persistence import estimate_tokens
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import PROVIDERS
from agentik_jupyter.tools.vision import MAX_BYTES, MAX_SIDE_PX, fit_image
from tests.kernel_support import NotebookKernel, kernel_env

PLOT = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(16, 12), dpi=100)\n"
    "ax.plot(range(10), label='units'); ax.plot(range(0, 20, 2), label='double')\n"
    "ax.set_title('Units by week'); ax.set_xlabel('week'); ax.legend()"
)


def _noise_png(width: int, height: int) -> str:
    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 255, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def _image_parts(request: Any) -> list[dict[str, Any]]:
    """Every image content part of a recorded request, in either wire format."""
    found = []
    for message in request.messages:
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        for block in blocks:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                found += [b for b in block["content"] if b.get("type") == "image"]
            elif block.get("type") in ("image", "image_url"):
                found.append(block)
    return found


def test_a_large_noisy_image_is_downscaled_into_the_byte_budget() -> None:
    part = fit_image(_noise_png(2000, 1500))
    assert part is not None
    assert max(part.width or 0, part.height or 0) <= MAX_SIDE_PX
    assert len(base64.b64decode(part.data)) <= MAX_BYTES


def test_an_image_that_jpeg_cannot_fit_at_full_side_is_shrunk_not_dropped() -> None:
    part = fit_image(_noise_png(1200, 900))  # noise at 768 px is over the byte budget even as JPEG q80
    assert part is not None and len(base64.b64decode(part.data)) <= MAX_BYTES


def test_an_image_costs_a_fixed_budget_not_its_base64_length() -> None:
    payload = json.dumps({"result": "ok", "images": [{"data": _noise_png(300, 200)}]})
    assert estimate_tokens(payload) < 1_200 < len(payload) // 4


@pytest.mark.timeout(120)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_plot_from_run_code_reaches_the_model_as_an_image(tmp_path: Path, provider: str) -> None:
    with FakeLLMServer() as llm:
        llm.push(Reply.tool_calls([{"name": "run_code", "args": {"code": PLOT}}]), Reply.text("A rising line."))
        kernel = NotebookKernel(kernel_env(llm, provider, AGENTIK_APPROVE="auto"), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run("%%agent --wait\nPlot the units and tell me what you see.")
        finally:
            kernel.close()
        second = llm.requests[1]
    (image,) = _image_parts(second)
    if provider == "anthropic":
        assert image["source"]["media_type"] in ("image/png", "image/jpeg")
        data = image["source"]["data"]
    else:
        url = image["image_url"]["url"]
        assert url.startswith(("data:image/png;base64,", "data:image/jpeg;base64,"))
        data = url.split(",", 1)[1]
    raw = base64.b64decode(data)
    assert len(raw) <= MAX_BYTES
    from PIL import Image

    with Image.open(io.BytesIO(raw)) as img:
        assert max(img.size) <= MAX_SIDE_PX  # a 1600×1200 figure, downscaled


@pytest.mark.timeout(120)
def test_without_vision_the_model_gets_a_description_of_the_figure(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        llm.push(Reply.tool_calls([{"name": "run_code", "args": {"code": PLOT}}]), Reply.text("Described."))
        kernel = NotebookKernel(kernel_env(llm, AGENTIK_APPROVE="auto", LLM_VISION="0"), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run("%%agent --wait\nPlot the units.")
        finally:
            kernel.close()
        second = llm.requests[1]
    assert _image_parts(second) == []
    sent = json.dumps(second.messages)
    assert "title 'Units by week'" in sent and "x 'week'" in sent and "series units, double" in sent
    assert "2 line(s)" in sent and "x from" in sent


# ---- images found in cell outputs: read_notebook / get_cell_history ----

AXES_CELL = PLOT.replace("ax.legend()", "ax.legend()\nax")  # Out[n] is the Axes


def _saved_notebook(path: Path, png: str) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("sales.plot()", execution_count=2)
    cell.id = "plot-cell"
    cell.outputs = [
        nbformat.v4.new_output("display_data", {"image/png": png, "text/plain": "<Figure size 1200x900 with 1 Axes>"})
    ]
    nb.cells = [cell]
    nbformat.write(nb, path)
    return path


def _decoded(image: dict[str, Any]) -> bytes:
    data = image["source"]["data"] if image.get("type") == "image" else image["image_url"]["url"].split(",", 1)[1]
    return base64.b64decode(data)


def _turn_with_output_images(tmp_path: Path, provider: str, **env: str) -> tuple[list[Any], Any]:
    """A turn that reads a saved cell holding a 1200×900 noisy PNG, then asks the history for figures."""
    notebook = _saved_notebook(tmp_path / "plots.ipynb", _noise_png(1200, 900))
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "read_notebook", "args": {"cell_id": "plot-cell"}}]),
            Reply.tool_calls([{"name": "get_cell_history", "args": {"last_n": 2, "images": True}}]),
            Reply.text("Two charts seen."),
        )
        kernel = NotebookKernel(kernel_env(llm, provider, JPY_SESSION_NAME=str(notebook), **env), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(AXES_CELL)
            cell = kernel.run("%%agent --wait\nLook at my charts.")
        finally:
            kernel.close()
        return list(llm.requests), cell


@pytest.mark.timeout(120)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_images_in_cell_outputs_reach_the_model_when_asked_within_the_budget(tmp_path: Path, provider: str) -> None:
    from PIL import Image

    first, after_read, after_history = _turn_with_output_images(tmp_path, provider)[0]
    assert _image_parts(first) == []
    (from_cell,) = _image_parts(after_read)  # read_notebook(cell_id=...) sends the cell's image
    both = _image_parts(after_history)
    assert len(both) == 2  # get_cell_history(images=True) adds the figure Out[n] shows
    for image in both:
        raw = _decoded(image)
        assert len(raw) <= MAX_BYTES
        with Image.open(io.BytesIO(raw)) as img:
            assert max(img.size) <= MAX_SIDE_PX
    if provider == "anthropic":
        assert from_cell["type"] == "image" and from_cell["source"]["media_type"] in ("image/png", "image/jpeg")
    else:
        assert from_cell["image_url"]["url"].startswith(("data:image/png;base64,", "data:image/jpeg;base64,"))
    sent = json.dumps(after_history.messages)
    assert "cell plot-cell: sent as image 1" in sent and "Out[2]: sent as image 1" in sent


@pytest.mark.timeout(120)
def test_output_images_without_vision_are_described_and_still_shown_in_the_card(tmp_path: Path) -> None:
    requests, cell = _turn_with_output_images(tmp_path, "openai-compatible", LLM_VISION="0")
    last = requests[-1]
    assert _image_parts(last) == []
    sent = json.dumps(last.messages)
    assert "cell plot-cell, image/png: not sent (LLM_VISION=0, no vision): <Figure size 1200x900 with 1 Axes>" in sent
    # the figure object in the kernel gives the description: titles, labels, series
    assert "title 'Units by week'" in sent and "series units, double" in sent and "2 line(s)" in sent
    from tests.kernel_support import transcript

    entries = [
        e
        for e in transcript(cell.outputs)["application/vnd.agentik.transcript+json"]["entries"]
        if e.get("role") == "tool"
    ]
    cards = {e["name"]: e.get("display") or {} for e in entries}
    assert set(cards) == {"read_notebook", "get_cell_history"}
    for display in cards.values():  # the user sees the (fitted) images in the tool cards
        data = display.get("image/png") or display.get("image/jpeg")
        assert data and len(base64.b64decode(data)) <= MAX_BYTES
