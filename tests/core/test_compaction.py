"""What a compaction does to the turns it keeps: long tool results cut once, images left out, errors whole."""

from __future__ import annotations

from agentik_jupyter.core.compaction import KEPT_RESULT_CHARS, shorten_old_results
from agentik_jupyter.persistence.budget import result_wire_text
from agentik_jupyter.types import ChatMessage, ImagePart, ToolResult


def tool(result: object = None, *, error: str | None = None, images: int = 0) -> ChatMessage:
    parts = [ImagePart(mime="image/png", data="iVBORw0KGgo=") for _ in range(images)]
    return ChatMessage(
        role="tool",
        tool_result=ToolResult(tool_call_id="c1", name="run_code", result=result, error=error, images=parts or None),
    )


def test_older_turns_are_cut_and_the_newest_stays_whole() -> None:
    old, newest = tool("x" * 5_000), tool("y" * 5_000)
    changed = shorten_old_results([[old], [newest]])
    assert [m.id for m in changed] == [old.id]
    text = result_wire_text(changed[0])
    assert text.startswith("x" * KEPT_RESULT_CHARS) and "3000 more characters" in text
    assert len(text) < KEPT_RESULT_CHARS + 200


def test_a_structured_result_is_cut_as_the_model_reads_it_and_images_are_named() -> None:
    rows = tool({"rows": [{"units": i} for i in range(500)]}, images=2)
    (short,) = shorten_old_results([[rows], []])
    text = result_wire_text(short)
    assert text.startswith('{"rows": [{"units": 0}')
    assert "2 images left out" in text and short.tool_result is not None and short.tool_result.images is None


def test_short_results_errors_and_results_cut_before_are_left_alone() -> None:
    small, failed = tool("fine"), tool(error="boom " * 1_000)
    (cut,) = shorten_old_results([[tool("z" * 9_000)], []])
    assert shorten_old_results([[small, failed, cut], []]) == []
