"""`@out[5]` in a question sends the images cell [5] showed, so the model sees the plot the user means.

Where the images come from, first found wins: what the kernel saw the cell show since `%load_ext`
(notebook/shown_images.py: `plt.show()`, the inline backend, `display(Image(...))`), then the
cell's `Out[5]` when it is a matplotlib figure (drawn again; first for a model without vision, whose
description it gives), then the notebook's cell with that execution count (the live document
through the lab extension, else the saved file: what a kernel restarted since showed). They take
the plots' path (tools/images.py): fitted to the pixel and byte budget, at most
MAX_IMAGES_PER_RESULT, and with `LLM_VISION=0` a description instead (core/question_images.py
tells the user they were not sent).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agentik_jupyter.notebook.document import NotebookDoc
from agentik_jupyter.notebook.images import output_images
from agentik_jupyter.notebook.shown_images import shown_images
from agentik_jupyter.notebook.tools import NotebookPath, load_notebook
from agentik_jupyter.tools.images import FoundImage, with_images
from agentik_jupyter.tools.time_budget import INSPECT_TIME_BUDGET_S, call_with_budget
from agentik_jupyter.tools.vision import MAX_IMAGES_PER_RESULT, as_figure, describe_figure, figure_png, vision_enabled
from agentik_jupyter.types import ImagePart

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

OUT_MENTION = re.compile(r"(?<![\w@.])@[Oo]ut\[(\d{1,9})\]")
HEADER = "Attached by @out mention: the images of the cells mentioned."


def out_counts(text: str) -> list[int]:
    """The execution counts mentioned as `@out[n]`, distinct, in order of first mention."""
    counts: list[int] = []
    for match in OUT_MENTION.finditer(text):
        count = int(match.group(1))
        if count not in counts:
            counts.append(count)
    return counts


def without_out_mentions(text: str) -> str:
    """The text with its `@out[n]` mentions blanked, so `@out` is not taken for a variable `out`."""
    return OUT_MENTION.sub(" ", text)


def _recorded(shell: InteractiveShell, count: int) -> list[FoundImage]:
    return [FoundImage(f"@out[{count}]", mime, data, note) for mime, data, note in shown_images(shell, count)]


def _out_figure(shell: InteractiveShell, count: int) -> list[FoundImage]:
    history = getattr(shell, "history_manager", None)
    value = history.output_hist.get(count) if history is not None else None
    figure = as_figure(value)
    if figure is None:
        return []
    what = f"@out[{count}]"
    try:
        png = call_with_budget(lambda: figure_png(figure), INSPECT_TIME_BUDGET_S, what)
        return [FoundImage(what, "image/png", png, describe_figure(figure, f"the figure of Out[{count}]"))]
    except Exception as exc:  # a figure that cannot be drawn is reported, not raised
        return [FoundImage(what, "image/png", "", f"could not be drawn: {type(exc).__name__}")]


def _in_document(doc: NotebookDoc | None, count: int) -> list[FoundImage]:
    if doc is None:
        return []
    cells = [c for c in doc.cells if c.execution_count == count]
    found, _ = output_images(cells)
    for image in found:
        image.where = f"@out[{count}]"
    return found


async def out_images(
    shell: InteractiveShell, text: str, notebook_path: NotebookPath | None = None
) -> tuple[str, list[ImagePart], int] | None:
    """(the section the model reads, the images sent, the images withheld for lack of vision), or None
    when the question mentions no `@out[n]`."""
    counts = out_counts(text)
    if not counts:
        return None
    vision = vision_enabled()
    found: list[FoundImage] = []
    missing: list[int] = []
    doc: NotebookDoc | None = None
    read = False
    for count in counts:
        # a model without vision gets the figure's titles and series, which only Out[n]'s object has
        images = (_out_figure(shell, count) if not vision else []) or _recorded(shell, count)
        images = images or (_out_figure(shell, count) if vision else [])
        if not images and notebook_path is not None:
            if not read:
                read = True
                try:
                    doc = await load_notebook(notebook_path)
                except Exception:  # no frontend and no saved file: the cell is reported as missing
                    doc = None
            images = _in_document(doc, count)
        if images:
            found += images
        else:
            missing.append(count)
    section = with_images(HEADER, found) if found else None
    lines = [section.text if section is not None else HEADER]
    lines += [f"@out[{n}]: cell [{n}] showed no image that could be found (no plot in its output)." for n in missing]
    sent = list(section.images or []) if section is not None else []
    withheld = 0 if vision else min(len(found), MAX_IMAGES_PER_RESULT)
    return "\n".join(lines), sent, withheld
