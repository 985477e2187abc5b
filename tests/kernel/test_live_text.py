"""A paced answer in a real kernel, with and without a frontend that answered the handshake.

A frontend with our extension answers the kernel's hello (notebook/page.py) by opening
`agentik.frontend.reply` with `{"live_text": 1}`, as labextension/src/livetext.ts does; the
answer then streams into one append-only LiveText, each piece of it crossing about once. A
frontend without it (VS Code, nbclient, this client when it does not answer) keeps ipywidgets'
HTML widgets, and the cell still ends with the whole answer.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.widgets.markdown import render_markdown
from tests.kernel_support import RawKernel, close_all, kernel_env, transcript

PARAGRAPH = (
    "The sales frame has many rows and the `units` column grows with each region while "
    "north and south stay balanced across the whole sample of one hundred rows. "
)
ANSWER = "\n\n".join(
    [
        PARAGRAPH * 3,
        "- north: 41 rows\n- south: 38 rows\n- east: 21 rows",
        "```python\nsales.groupby('region')['units'].sum()\n```",
        PARAGRAPH * 4,
        PARAGRAPH * 5,
        PARAGRAPH * 3,
        PARAGRAPH * 6,
    ]
)
CHUNK = 4
PACE_HZ = 250.0
CELL = "%%agent --wait\nSummarise the sales data."
PLUMBING = {"status", "execute_input"}


def _bytes(messages: list[dict[str, Any]]) -> int:
    return sum(
        len(json.dumps(m["content"], ensure_ascii=False).encode()) for m in messages if m["msg_type"] not in PLUMBING
    )


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html)).strip()


def _live_texts(messages: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each LiveText's shown HTML after each message, replayed as livetext.ts applies them."""
    models: dict[str, list[str]] = {}
    state: dict[str, tuple[str, str]] = {}
    for m in messages:
        content = m["content"]
        if m["msg_type"] == "comm_open" and content["data"].get("state", {}).get("_model_name") == "LiveTextModel":
            s = content["data"]["state"]
            state[content["comm_id"]] = (s.get("value", ""), s.get("tail", ""))  # (lean: a default is left out)
        elif m["msg_type"] == "comm_msg" and content["comm_id"] in state:
            data = content["data"]
            value, tail = state[content["comm_id"]]
            if data.get("method") == "update":
                value, tail = data["state"].get("value", value), data["state"].get("tail", tail)
            elif data.get("method") == "custom":
                c = data["content"]
                whole = (value + tail).encode("utf-16-le")[: 2 * c["k"]] + c["a"].encode("utf-16-le")
                value = whole[: 2 * c["s"]].decode("utf-16-le")
                tail = whole[2 * c["s"] :].decode("utf-16-le")
            state[content["comm_id"]] = (value, tail)
        else:
            continue
        cid = content["comm_id"]
        models.setdefault(cid, []).append("".join(state[cid]))
    return models


def _answer_hello(kernel: RawKernel) -> None:
    """What the extension does on the kernel's hello: open its reply comm with its features."""
    hellos = [
        m
        for m in kernel.iopub
        if m["msg_type"] == "comm_open" and m["content"].get("target_name") == "agentik.frontend"
    ]
    assert hellos, "the kernel sent no hello at %load_ext"
    msg = kernel.kc.session.msg(
        "comm_open", {"comm_id": uuid.uuid4().hex, "target_name": "agentik.frontend.reply", "data": {"live_text": 1}}
    )
    kernel.kc.shell_channel.send(msg)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(pace=PACE_HZ) as srv:
        yield srv


def _turn(server: FakeLLMServer, tmp_path: Path, *, answered: bool) -> tuple[int, Any, list[dict[str, Any]]]:
    """One paced turn in a fresh kernel: (its frontend bytes, its execution, its messages)."""
    tmp_path.mkdir()
    kernel = RawKernel(kernel_env(server), tmp_path)
    try:
        kernel.text("%load_ext agentik_jupyter")
        if answered:
            _answer_hello(kernel)
            kernel.wait_until("__import__('agentik_jupyter.notebook.page', fromlist=['live_text']).live_text()")
        assert (
            kernel.value("__import__('agentik_jupyter.notebook.page', fromlist=['live_text']).live_text()") is answered
        )
        server.push(Reply.text(ANSWER, chunks=len(ANSWER) // CHUNK, first_byte_after=0.3))
        ex = kernel.execute(CELL, timeout=60)
        assert ex.ok, ex.text
        return _bytes(ex.messages), ex, ex.messages
    finally:
        close_all([kernel])


def _holds_answer(ex: Any) -> bool:
    bundle = transcript(ex.outputs)
    return _text(render_markdown(ANSWER)) in _text("".join(bundle["text/html"]))


def test_a_paced_answer_streams_append_only_when_the_frontend_answered(server: FakeLLMServer, tmp_path: Path) -> None:
    _, ex_without, msgs_without = _turn(server, tmp_path / "a", answered=False)
    _, ex_with, msgs_with = _turn(server, tmp_path / "b", answered=True)
    assert _holds_answer(ex_without) and _holds_answer(ex_with)

    assert not _live_texts(msgs_without)  # (no extension: no widget of ours)
    pieces = [m["content"]["text"] for m in msgs_without if m["msg_type"] == "stream"]
    assert len(pieces) >= 10  # it streamed, piece after piece,
    assert ANSWER.startswith("".join(pieces)) and len("".join(pieces)) > len(ANSWER) / 2  # each piece once
    html_updates = [
        m for m in msgs_without if m["msg_type"] == "comm_msg" and "value" in m["content"]["data"].get("state", {})
    ]
    assert not any("The sales frame has many rows" in json.dumps(m["content"]) for m in html_updates)
    assert [o["output_type"] for o in ex_without.outputs] == ["display_data", "display_data"]  # place, transcript
    assert "many rows" not in json.dumps(ex_without.outputs[0])  # (the streamed text went)

    (shown,) = _live_texts(msgs_with).values()  # one widget for the whole answer
    assert len(shown) >= 10  # (it streamed: update after update)
    whole = _text(render_markdown(ANSWER))
    texts = [_text(s) for s in shown]
    assert all(whole.startswith(t.rstrip(" .")[:-20]) for t in texts if t)  # every state a start of it
    assert len(texts[0]) < len(whole) / 4  # it grew, and it ends on the whole answer
    assert shown[-1] == render_markdown(ANSWER)

    live_ids = set(_live_texts(msgs_with))
    live_bytes = _bytes([m for m in msgs_with if m["content"].get("comm_id") in live_ids])
    html_bytes = len(render_markdown(ANSWER).encode())
    # (the answer's HTML once, plus ~100 bytes a message, ~4 a second, and the widget's opening)
    assert live_bytes < 1.6 * html_bytes, live_bytes / html_bytes
