"""`read_notebook`: the saved notebook as the model reads it, from a real `.ipynb` and in a real kernel."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import nbformat
import pytest

from agentik_jupyter.errors import NotebookReadError
from agentik_jupyter.notebook.document import image_size, load_saved
from agentik_jupyter.notebook.reading import OVERVIEW_BUDGET_CHARS, cell_range, one_cell, overview
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import NotebookKernel, kernel_env, transcript


def _png(width: int, height: int) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(width / 100, height / 100), dpi=100)
    plt.plot([1, 2, 3], [3, 1, 2])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _notebook(path: Path, extra_cells: int = 0) -> Path:
    nb = nbformat.v4.new_notebook()
    load = nbformat.v4.new_code_cell("import pandas as pd\nsales = pd.read_csv('sales.csv')", execution_count=1)
    load.id = "load-cell"
    plot = nbformat.v4.new_code_cell("sales.plot()", execution_count=2)
    plot.id = "plot-cell"
    plot.outputs = [
        nbformat.v4.new_output("execute_result", {"text/plain": "<Axes: >"}, execution_count=2),
        nbformat.v4.new_output("display_data", {"image/png": _png(640, 480), "text/plain": "<Figure size 640x480>"}),
    ]
    broken = nbformat.v4.new_code_cell("total = x + 1", execution_count=3)
    broken.id = "broken-cell"
    broken.outputs = [
        nbformat.v4.new_output("error", ename="NameError", evalue="name 'x' is not defined", traceback=[])
    ]
    note = nbformat.v4.new_markdown_cell("## Revenue by region")
    note.id = "note-cell"
    nb.cells = [load, plot, broken, note]
    for i in range(extra_cells):
        cell = nbformat.v4.new_code_cell(f"step_{i} = {i}\n" + "# padding\n" * 40)
        cell.id = f"extra-{i}"
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def test_overview_lists_cells_with_ids_outputs_and_the_source(tmp_path: Path) -> None:
    doc = load_saved(_notebook(tmp_path / "analysis.ipynb"))
    text = overview(doc)
    assert "saved version on disk, may be stale" in text
    assert "[0] id=load-cell code, In [1]" in text and "pd.read_csv('sales.csv')" in text
    assert "image/png 640×480" in text
    assert "error NameError: name 'x' is not defined" in text
    assert "[3] id=note-cell markdown" in text and "## Revenue by region" in text
    assert "iVBOR" not in text  # no image bytes reach the model


def test_long_notebook_stays_within_budget_and_says_how_to_read_the_rest(tmp_path: Path) -> None:
    doc = load_saved(_notebook(tmp_path / "long.ipynb", extra_cells=300))
    text = overview(doc)
    assert len(text) <= OVERVIEW_BUDGET_CHARS + 200
    assert "more cells not shown: read_notebook(start=" in text
    part = cell_range(doc, 250, 252)
    assert "[250] id=extra-246" in part and "[252] id=extra-248" in part and "[253]" not in part
    assert "padding" in part


def test_one_cell_in_full_by_id_or_prefix_and_a_clear_error_for_unknown_ids(tmp_path: Path) -> None:
    doc = load_saved(_notebook(tmp_path / "analysis.ipynb"))
    assert "total = x + 1" in one_cell(doc, "broken")
    with pytest.raises(LookupError, match="no cell with id 'nope'.*load-cell"):
        one_cell(doc, "nope")
    with pytest.raises(IndexError, match="4 cells"):
        cell_range(doc, 7, 9)


def test_unsaved_or_broken_notebooks_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(NotebookReadError, match="has not been saved yet"):
        load_saved(tmp_path / "missing.ipynb")
    (tmp_path / "bad.ipynb").write_text("{not json")
    with pytest.raises(NotebookReadError, match="could not read"):
        load_saved(tmp_path / "bad.ipynb")


def test_image_size_reads_png_headers() -> None:
    assert image_size("image/png", _png(300, 200)) == (300, 200)
    assert image_size("image/png", "not base64 at all") is None


@pytest.mark.timeout(120)
def test_the_model_reads_the_saved_notebook_in_a_real_kernel(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "analysis.ipynb")
    with FakeLLMServer() as llm:
        llm.push(Reply.tool_calls([{"name": "read_notebook", "args": {}}]), Reply.text("It loads sales and plots it."))
        env = kernel_env(llm, JPY_SESSION_NAME=str(path))
        kernel = NotebookKernel(env, tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            cell = kernel.run("%%agent --wait\nWhat does this notebook do?")
        finally:
            kernel.close()
        first, second = llm.requests
    names = [t.get("function", {}).get("name") for t in first.body["tools"]]
    assert "read_notebook" in names
    sent = json.dumps(second.messages, ensure_ascii=False)
    assert "id=plot-cell" in sent and "image/png 640×480" in sent and "NameError" in sent
    assert "may be stale" in sent
    assert "It loads sales and plots it." in transcript(cell.outputs)["text/plain"]
