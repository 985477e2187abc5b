"""What the kernel saw each cell show, kept for `@out[n]` within its bounds: images only, a cell's
own displays filed under its count (the inline backend's figures come between pre_ and post_run_cell),
at most PER_CELL per cell, KEEP_CELLS cells and TOTAL_CHARS in all, the oldest cells dropped first."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agentik_jupyter.notebook import shown_images as shown
from agentik_jupyter.notebook.mentions import suggest_names
from agentik_jupyter.notebook.shown_images import KEEP_CELLS, PER_CELL, ShownImages


def display(mime: str, data: str, plain: str = "<Figure>") -> dict[str, Any]:
    return {"msg_type": "display_data", "content": {"data": {mime: data, "text/plain": plain}}}


def run_cell(recorder: ShownImages, count: int, *messages: dict[str, Any]) -> None:
    recorder.begin()
    for message in messages:
        assert recorder.hook(message) is message  # handed on unchanged
    recorder.end(SimpleNamespace(execution_count=count))


def test_images_are_filed_under_their_cells_count_within_bounds(monkeypatch: Any) -> None:
    recorder = ShownImages(SimpleNamespace())
    run_cell(recorder, 1, display("text/html", "<b>table</b>"), {"msg_type": "stream"})
    run_cell(recorder, 2, *[display("image/png", f"png{i}") for i in range(PER_CELL + 2)])
    recorder.hook(display("image/png", "shown after the cell ended"))  # a background task's: no cell
    assert recorder.of(1) == []
    assert recorder.of(2) == [("image/png", f"png{i}", "<Figure>") for i in range(PER_CELL)]
    for count in range(3, 3 + KEEP_CELLS):
        run_cell(recorder, count, display("image/jpeg", f"jpeg{count}"))
    assert recorder.of(2) == [] and recorder.of(3) == [("image/jpeg", "jpeg3", "<Figure>")]
    monkeypatch.setattr(shown, "TOTAL_CHARS", 100)
    run_cell(recorder, 99, display("image/png", "x" * 150))
    assert recorder.of(99) and list(recorder.cells) == [99]  # the newest stays, even alone over the total


def test_typing_at_out_suggests_the_cells_that_showed_images() -> None:
    hooks: list[Any] = []
    events: dict[str, Any] = {}
    shell = SimpleNamespace(
        display_pub=SimpleNamespace(register_hook=hooks.append),
        events=SimpleNamespace(register=events.__setitem__),
        user_ns={"outliers": [1, 2], "sales": 3},
        user_ns_hidden={},
    )
    recorder = shown.install(shell)
    assert recorder is not None and hooks == [recorder.hook]
    try:
        for count in (2, 4, 7, 9):
            events["pre_run_cell"]()
            hooks[0](display("image/png", f"png{count}"))
            events["post_run_cell"](SimpleNamespace(execution_count=count))
        assert suggest_names(shell, "ou") == [
            ("outliers", "list"),
            ("out[9]", "1 image(s) cell [9] showed"),
            ("out[7]", "1 image(s) cell [7] showed"),
            ("out[4]", "1 image(s) cell [4] showed"),
        ]
        assert suggest_names(shell, "sa") == [("sales", "int")]
    finally:
        shown._recorders.pop(id(shell), None)
