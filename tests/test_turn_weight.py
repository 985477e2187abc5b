"""What one turn costs the frontend and the saved notebook, counted in a real kernel (no timings).

A `%%agent --wait` turn streams a 4,000-character answer in 4-character chunks from the fake
server; the frontend's side is every iopub message the execute request caused. Bounds from
issue #14: ≤ 8 widgets opened per turn, ≤ 60 widget updates per 1,000 tokens, ≤ 5x the
answer's bytes to the frontend, the final text exact; a finished turn leaves no widget open in
the kernel; a saved turn holds its answer twice (HTML and the transcript JSON), not three
times (text/plain only names the turn and its first lines). The HTML's markup comes on top,
so the issue's "within 2x" is met only as far as that markup allows (see bench/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import nbformat
import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.widgets.markdown import render_markdown
from agentik_jupyter.widgets.transcript import one_line

from .kernel_support import NotebookKernel, RawKernel, kernel_env, transcript

pytestmark = pytest.mark.timeout(180)

TRANSCRIPT_MIME = "application/vnd.agentik.transcript+json"
WIDGETS_ALIVE = "import ipywidgets as _w; print(len(_w.Widget.widgets))"


def prose(chars: int) -> str:
    """Markdown as a model writes it: paragraphs, short lists, inline code."""
    words = "the sales frame has `units` and `price` columns with some missing values per region".split()
    blocks, i = [], 0
    while sum(len(b) + 2 for b in blocks) < chars:
        if i % 4 == 3:
            blocks.append("\n".join(f"- item {j}: " + " ".join(words[j:j + 6]) for j in range(4)))
        else:
            blocks.append(" ".join(words[(i + k) % len(words)] for k in range(50)).capitalize() + ".")
        i += 1
    return "\n\n".join(blocks)[:chars]


ANSWER = prose(4_000)


def frontend(ex: Any) -> list[dict[str, Any]]:
    return [m for m in ex.messages if m["msg_type"] not in {"status", "execute_input"}]


def size(msg: dict[str, Any]) -> int:
    return len(json.dumps(msg["content"], ensure_ascii=False, default=str).encode())


def answer_in(ex: Any) -> str:
    payload = transcript(ex.outputs)[TRANSCRIPT_MIME]
    return [e["content"] for e in payload["entries"] if e["role"] == "assistant"][-1]


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[RawKernel, FakeLLMServer]]:
    with FakeLLMServer() as llm:
        k = RawKernel(kernel_env(llm, AGENTIK_APPROVE="auto"), tmp_path)
        try:
            assert k.execute("%load_ext agentik_jupyter\nsales = 1").ok
            llm.push(Reply.text("warm"))
            assert k.execute("%%agent --wait\nwarm up").ok  # the shared layouts and styles open here, once
            yield k, llm
        finally:
            k.close()


@pytest.mark.parametrize("tool", [False, True], ids=["answer", "tool-call"])
def test_a_turn_opens_few_widgets_updates_rarely_and_sends_linear_bytes(
    kernel: tuple[RawKernel, FakeLLMServer], tool: bool
) -> None:
    k, llm = kernel
    alive = k.text(WIDGETS_ALIVE).strip()
    llm.push(*([Reply.tool_calls([{"name": "list_variables", "args": {}}])] if tool else []),
             Reply.text(ANSWER, chunks=len(ANSWER) // 4))
    ex = k.execute("%%agent --wait\nSummarise the sales data.")
    assert ex.ok, ex.text
    sent = frontend(ex)
    opens = [m for m in sent if m["msg_type"] == "comm_open"]
    updates = [m for m in sent if m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update"]
    assert len(opens) <= 8, [m["content"]["data"]["state"]["_model_name"] for m in opens]
    assert len(updates) <= 60  # 1,000 tokens of 4 characters
    assert sum(size(m) for m in sent) <= 5 * len(ANSWER.encode())
    assert answer_in(ex) == ANSWER
    # a finished turn's widgets are closed: the kernel holds no more widgets than before it
    assert k.text(WIDGETS_ALIVE).strip() == alive


def test_a_saved_turn_holds_its_answer_about_twice(tmp_path: Path) -> None:
    big = prose(300_000)
    sizes = {}
    for name, answer in (("big", big), ("small", "ok")):
        with FakeLLMServer() as llm:
            llm.push(Reply.text(answer, chunks=max(1, len(answer) // 500)))
            nk = NotebookKernel(kernel_env(llm), tmp_path)
            try:
                nk.run("%load_ext agentik_jupyter")
                nk.run("%%agent --wait\nWrite the report.")
                sizes[name] = len(nk.saved().encode())  # widget state included, as `jupyter execute` saves
            finally:
                nk.close()
    growth = sizes["big"] - sizes["small"]
    # The answer is saved twice, as HTML (with its markup) and in the JSON; text/plain only names
    # it, and the live view's widgets keep none of it. (It was three times, plus the last widget state.)
    html_copy = len(one_line(render_markdown(big)).encode())
    json_copy = len(json.dumps(big, ensure_ascii=False).encode())
    assert growth <= html_copy + json_copy + 20_000, (growth, html_copy, json_copy)


def test_text_plain_names_the_turn_and_its_first_lines(tmp_path: Path) -> None:
    answer = prose(20_000)
    with FakeLLMServer() as llm:
        llm.push(Reply.text(answer, chunks=40))
        nk = NotebookKernel(kernel_env(llm), tmp_path)
        try:
            nk.run("%load_ext agentik_jupyter")
            cell = nk.run("%%agent --wait\nWrite the report.")
        finally:
            nk.close()
    bundle = transcript(cell.outputs)
    plain = "".join(bundle["text/plain"])
    assert plain.startswith("You: Write the report.\nAgent: " + answer[:100])
    assert "more characters in the HTML and JSON outputs" in plain and len(plain) < 500
    assert bundle[TRANSCRIPT_MIME]["entries"][-1]["content"] == answer
    assert one_line(render_markdown(answer)) in "".join(bundle["text/html"])
    saved = nbformat.reads(nbformat.writes(nbformat.v4.new_notebook(cells=[cell])), as_version=4)
    assert saved.cells[0].outputs[-1]["data"]["text/plain"] == plain
