"""What one turn costs the frontend and the saved notebook, counted in a real kernel (no timings).

A `%%agent --wait` turn streams a 4,000-character answer in 4-character chunks from the fake
server; the frontend's side is every iopub message the execute request caused. Bounds:
≤ 8 widgets opened per turn, ≤ 60 widget updates per 1,000 tokens, ≤ 5x the
answer's bytes to the frontend, the final text exact; a finished turn leaves only its Rewind
control open in the kernel (its button); a saved turn stays within 2x its answer: text/plain only names the turn and its
first lines, and an answer is kept once, in the HTML (the transcript JSON keeps its start; the
lab renderer draws it from the HTML, tests/browser/test_transcript.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.types import ChatMessage
from agentik_jupyter.widgets.markdown import render_markdown
from agentik_jupyter.widgets.transcript import (
    PLAIN_TEXT_LIMIT,
    TRANSCRIPT_MIME,
    holds_answer,
    one_line,
    transcript_bundle,
)
from agentik_jupyter.widgets.turn_view import LIVE_AFTER_S
from tests.kernel_support import NotebookKernel, RawKernel, kernel_env, transcript, wait_for

pytestmark = pytest.mark.timeout(180)

WIDGETS_ALIVE = "import ipywidgets as _w; print(len(_w.Widget.widgets))"
EVENT_TIMES = """\
import asyncio as _asyncio
from agentik_jupyter.kernel.agent import get_agent as _get_agent
_turn_events = []
_get_agent(get_ipython()).session.on_event(lambda e: _turn_events.append((type(e).__name__, _asyncio.get_running_loop().time())))
"""
"""Records in the kernel when each event of its turns came, on the clock of the view's timer."""


def prose(chars: int) -> str:
    """Markdown as a model writes it: paragraphs, short lists, inline code."""
    words = "the sales frame has `units` and `price` columns with some missing values per region".split()
    blocks, i = [], 0
    while sum(len(b) + 2 for b in blocks) < chars:
        if i % 4 == 3:
            blocks.append("\n".join(f"- item {j}: " + " ".join(words[j : j + 6]) for j in range(4)))
        else:
            blocks.append(" ".join(words[(i + k) % len(words)] for k in range(50)).capitalize() + ".")
        i += 1
    return "\n\n".join(blocks)[:chars]


ANSWER = prose(4_000)


def frontend(ex: Any) -> list[dict[str, Any]]:
    return [m for m in ex.messages if m["msg_type"] not in {"status", "execute_input"}]


def size(msg: dict[str, Any]) -> int:
    return len(json.dumps(msg["content"], ensure_ascii=False, default=str).encode())


def holds(ex: Any, answer: str) -> bool:
    """The cell's saved transcript keeps the exact answer (in its HTML, or whole in the JSON)."""
    return holds_answer(transcript(ex.outputs), answer)


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[RawKernel, FakeLLMServer]]:
    with FakeLLMServer() as llm:
        k = RawKernel(kernel_env(llm, AGENTIK_APPROVE="auto"), tmp_path)
        try:
            assert k.execute("%load_ext agentik_jupyter\nsales = 1").ok
            llm.push(Reply.text("warm", first_byte_after=0.3))  # (slow enough for a live view)
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
    # the model thinks first: the live view is built (LIVE_AFTER_S) before the answer streams at full speed
    llm.push(
        *([Reply.tool_calls([{"name": "list_variables", "args": {}}])] if tool else []),
        Reply.text(ANSWER, chunks=len(ANSWER) // 4, first_byte_after=0.3),
    )
    ex = k.execute("%%agent --wait\nSummarise the sales data.")
    assert ex.ok, ex.text
    sent = frontend(ex)
    opens = [m for m in sent if m["msg_type"] == "comm_open"]
    updates = [m for m in sent if m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update"]
    assert len(opens) <= 8, [m["content"]["data"]["state"]["_model_name"] for m in opens]
    assert len(updates) <= 60  # 1,000 tokens of 4 characters
    assert sum(size(m) for m in sent) <= 5 * len(ANSWER.encode())
    assert holds(ex, ANSWER)
    # a finished turn's live widgets are closed: the kernel holds only its Rewind button (closed on
    # the kernel's loop after the cell's reply, which a busy worker beside this one can delay)
    wait_for(
        lambda: int(k.text(WIDGETS_ALIVE).split()[0]) == int(alive.split()[0]) + 1,
        10,
        "the finished turn's live widgets to be closed",
    )
    assert len(opens) >= 4  # the live view was there: the question, the answer, the status line, Stop
    # the cell's outputs are those of a turn over at once (below): the view's place, the transcript
    assert [o["output_type"] for o in ex.outputs] == ["display_data", "display_data"]
    assert "text/plain" not in ex.outputs[0]["data"]  # (no stray line above the transcript)


def answered_in(k: RawKernel) -> float:
    """Seconds from the last turn's request (its first StartResponse) to its End, on the
    kernel's loop clock: a view not built by then never is (its timer had not fired)."""
    times = json.loads(k.text("import json as _json; print(_json.dumps(_turn_events)); _turn_events.clear()"))
    return next(t for n, t in times if n == "End") - next(t for n, t in times if n == "StartResponse")


@pytest.mark.parametrize("tool", [False, True], ids=["answer", "list_variables"])
def test_a_turn_over_in_a_moment_sends_its_transcript_and_no_live_widget(
    kernel: tuple[RawKernel, FakeLLMServer], tool: bool
) -> None:
    """An answer read in one go is over before LIVE_AFTER_S: no live widget is opened or closed;
    the view's place is the kernel's shared empty box until the turn's Rewind button takes it, so
    the cell's outputs are the same as a turn's whose view was built (`list_variables` reads names and types only: it cannot hold
    the loop, so no view before it).

    The answer comes in one chunk: the kernel reads it in 5-16 ms even with a load of 8 on 2
    cores. In 1,000 chunks it took 40-100 ms there, about LIVE_AFTER_S, and a slow server thread
    could hand over the first words a few characters at a time, like a model at its pace
    (FIRST_WORDS_MAX_CHARS): either way the view was rightly built, and the test failed. The
    turn's duration, measured in the kernel, says whether it was over in a moment."""
    k, llm = kernel
    assert k.execute(EVENT_TIMES).ok
    cells = []
    took: list[float] = []
    # The first turn in a kernel opens the shared box, once; then turns run until one is over in a
    # moment (a worker beside this one can slow a turn past LIVE_AFTER_S, which rightly builds the view).
    while len(cells) < 2 or (took[-1] >= LIVE_AFTER_S and len(cells) < 6):
        llm.push(
            *([Reply.tool_calls([{"name": "list_variables", "args": {}}])] if tool else []),
            Reply.text(ANSWER, chunks=1),
        )
        ex = k.execute("%%agent --wait\nSummarise the sales data.")
        assert ex.ok, ex.text
        cells.append(ex)
        took.append(answered_in(k))
    assert took[-1] < LIVE_AFTER_S, f"no turn of {len(cells)} was over in a moment: {took} (the machine is too slow?)"
    ex = cells[-1]
    sent = frontend(ex)
    kinds = [m["msg_type"] for m in sent if m["msg_type"] != "execute_reply"]
    # the view's place, the transcript, then the turn's Rewind button in the place
    assert kinds == ["display_data", "display_data", "comm_open", "update_display_data"], kinds
    places = [c.outputs[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] for c in cells]
    assert places[0] == places[-1]  # one shared box
    assert [o["output_type"] for o in ex.outputs] == ["display_data", "display_data"]  # as when the view shows
    assert "text/plain" not in ex.outputs[0]["data"]  # (no stray line above the transcript)
    assert holds(ex, ANSWER)
    assert sum(size(m) for m in sent) <= 3 * len(ANSWER.encode())
    if tool:
        entries = transcript(ex.outputs)[TRANSCRIPT_MIME]["entries"]
        assert any(e["role"] == "tool" and e.get("name") == "list_variables" for e in entries), entries


def test_a_saved_turn_stays_within_twice_its_answer(tmp_path: Path) -> None:
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
    # A long answer is saved once, as HTML (with its markup); the JSON keeps its start, text/plain
    # names it, the live view's widgets keep none of it. (It was three times, plus the last widget state.)
    html_copy = len(one_line(render_markdown(big)).encode())
    assert growth <= html_copy + 20_000, (growth, html_copy)
    assert growth <= 2 * len(big.encode()), growth


def test_a_long_answer_is_kept_once_in_the_html() -> None:
    long, short = prose(21_000), prose(PLAIN_TEXT_LIMIT)
    bundle = transcript_bundle(
        [ChatMessage(role="assistant", content=short), ChatMessage(role="assistant", content=long)],
        question="q",
        status="complete",
    )
    entries = bundle[TRANSCRIPT_MIME]["entries"]
    assert entries[1] == {"role": "assistant", "content": short}  # short answers stay whole in the JSON
    assert entries[2]["in_html"] is True and long.startswith(entries[2]["content"].rstrip("…"))
    assert len(json.dumps(entries[2])) < 500
    html = bundle["text/html"]
    assert 'data-agentik-entry="2">' + one_line(render_markdown(long)) in html and 'data-agentik-entry="1"' not in html
    assert "more characters in the HTML output]" in bundle["text/plain"]


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
    assert "more characters in the HTML output" in plain and len(plain) < 500
    assert holds_answer(bundle, answer)
    assert one_line(render_markdown(answer)) in "".join(bundle["text/html"])
    saved = nbformat.reads(nbformat.writes(nbformat.v4.new_notebook(cells=[cell])), as_version=4)
    assert saved.cells[0].outputs[-1]["data"]["text/plain"] == plain
