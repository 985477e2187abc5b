"""The live part renders only what changed: its finished Markdown blocks are rendered once, as
they finish, and each update renders the unfinished tail. At a model's pace the live part is
re-set ~10 times a second while it grows to the seal size: re-rendering all of it each time
was most of the view's kernel time (paced_turns in bench/)."""

from __future__ import annotations

from typing import Any

import pytest

from agentik_jupyter.widgets import stream as stream_module
from agentik_jupyter.widgets.markdown import render_markdown
from agentik_jupyter.widgets.stream import SEAL_CHARS, StreamBuffer
from tests.widgets_support import CommLog, FakeClock, comm_log  # noqa: F401

PARAGRAPH = ("The `units` column grows with each region while north and south stay balanced. " * 4).strip()


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every source the stream renders (the real renderer, counted)."""
    sizes: list[int] = []

    def counted(source: str) -> str:
        sizes.append(len(source))
        return render_markdown(source)

    monkeypatch.setattr(stream_module, "render_markdown", counted)
    return sizes


def test_a_growing_live_part_renders_each_block_once(rendered: list[int], comm_log: CommLog) -> None:
    text = "\n\n".join([PARAGRAPH] * 4)  # ~1,300 characters: one live part, never sealed
    assert len(text) < SEAL_CHARS
    clock = FakeClock()
    buffer = StreamBuffer(clock=clock)
    shown: list[Any] = []
    for i in range(0, len(text), 4):  # 250 tokens a second
        clock.advance(0.004)
        buffer.append(text[i : i + 4])
        if buffer.widgets and (not shown or shown[-1] != buffer.widgets[-1].value):
            shown.append(buffer.widgets[-1].value)
    assert len(shown) >= 10  # it streamed
    assert sum(rendered) <= 2 * len(text), f"rendered {sum(rendered)} characters for {len(text)}"
    last = shown[-1]  # the paragraphs so far, each as the whole text renders it
    assert last.count("<p>") >= 3 and last.startswith(render_markdown(PARAGRAPH) * 2)
    buffer.finish()
    assert buffer.widgets[-1].value == render_markdown(text)
