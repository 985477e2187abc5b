"""A `--wait` turn in a kernel whose frontend has no extension of ours: the answer streams as the
cell's text output, and at the end the cell shows its place, what else it printed or displayed
during the turn (in order), and the transcript; nothing of the streamed text, nothing lost.

The client is jupyter_client without an answer to the kernel's hello (as VS Code, Colab, nbclient);
`RawKernel` keeps the cell's outputs as a frontend does, `clear_output` included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import RawKernel, close_all, kernel_env, transcript

pytestmark = pytest.mark.timeout(120)

ANSWER = " ".join(f"Point {i} of the answer." for i in range(60)) + " END."
TOOL = '''
import sys
from IPython.display import display
from agentik_jupyter import tool

@tool(policy="auto")
def shout() -> str:
    """Say something in the cell."""
    print("TOOL-PRINT")
    display({"text/plain": "TOOL-SHOW"}, raw=True)
    print("TOOL-ERR", file=sys.stderr)
    return "shouted"
'''


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[RawKernel, FakeLLMServer]]:
    with FakeLLMServer(pace=200.0) as server:
        k = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "s.agentik.db")), tmp_path)
        try:
            k.text("%load_ext agentik_jupyter")
            k.text(TOOL)
            yield k, server
        finally:
            close_all([k])


def _streamed(messages: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


def test_the_answer_streams_as_text_and_the_transcript_replaces_it(kernel: tuple[RawKernel, FakeLLMServer]) -> None:
    k, server = kernel
    server.push(Reply.text(ANSWER, chunks=len(ANSWER) // 4, first_byte_after=0.3))
    ex = k.execute("%%agent --wait\nAnswer at length.", timeout=60)
    assert ex.ok, ex.text
    pieces = [m["content"]["text"] for m in ex.messages if m["msg_type"] == "stream"]
    assert len(pieces) >= 3 and ANSWER.startswith("".join(pieces))  # piece after piece, each once
    kinds = [o["output_type"] for o in ex.outputs]
    assert kinds == ["display_data", "display_data"], kinds  # the place, the transcript
    assert "END." in json.dumps(transcript(ex.outputs))
    assert "Point 3 of" not in json.dumps(ex.outputs[0])


def test_what_else_the_cell_showed_meanwhile_comes_back_in_order(kernel: tuple[RawKernel, FakeLLMServer]) -> None:
    k, server = kernel
    server.push(
        Reply.tool_calls([{"name": "shout", "args": {}}], text="Let me shout first. " * 20, chunks=100),
        Reply.text(ANSWER, chunks=len(ANSWER) // 4),
    )
    ex = k.execute("%%agent --wait\nShout, then answer.", timeout=60)
    assert ex.ok, ex.text
    assert "Let me shout" in _streamed(ex.messages)  # (it streamed as text before the tool ran)
    shown = [
        (o["output_type"], o.get("name") or "", o.get("text") or json.dumps(o.get("data", {}))) for o in ex.outputs
    ]
    assert shown[0][0] == "display_data" and "TOOL" not in shown[0][2]  # the view's place, first
    others = [(kind, name, text.strip()) for kind, name, text in shown[1:-1]]
    assert others == [
        ("stream", "stdout", "TOOL-PRINT"),
        ("display_data", "", '{"text/plain": "TOOL-SHOW"}'),
        ("stream", "stderr", "TOOL-ERR"),
    ], shown
    assert "END." in json.dumps(transcript(ex.outputs))  # the transcript, last
    assert not any("Point 3 of" in text or "Let me shout" in text for _, _, text in shown[:-1])
