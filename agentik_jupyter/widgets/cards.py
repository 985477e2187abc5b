"""Tool-call cards: what the agent ran, with which arguments, how long it took, what came back.

Collapsed by default: a <details> element, live (one HTML widget, no box or accordion
around it) and in saved transcripts. A
DataFrame result shows its HTML table preview (sanitised), an image shows as an
image, and long text is cut with a note of how much was cut. Invisible and
direction-changing characters in the arguments and results show as badges, under a warning.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ipywidgets import HTML

from agentik_jupyter.core.orchestrator import STOPPED_CALL
from agentik_jupyter.notebook.edits import REJECTED
from agentik_jupyter.security import invisible
from agentik_jupyter.tools.vision import RASTER_TYPES
from agentik_jupyter.types import ToolCall, ToolResult
from agentik_jupyter.widgets import look
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.sanitize import sanitize_html
from agentik_jupyter.widgets.shared import html

CARD_TEXT_LIMIT = 2_000
HTML_PREVIEW_LIMIT = 200_000
IMAGE_LIMIT = 2_000_000
IMAGE_TYPES = RASTER_TYPES
TITLE_ARGS_LIMIT = 60
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")


def truncate(text: str, limit: int = CARD_TEXT_LIMIT) -> tuple[str, int]:
    """(shown text, number of characters cut)."""
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def cut_note(cut: int) -> str:
    return f"… {cut:,} more characters not shown"


def result_text(result: ToolResult) -> str:
    """The result as text, the way the model read it."""
    value = result.result
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError):
        return repr(value)


def args_text(args: dict[str, Any]) -> str:
    return json.dumps(args, ensure_ascii=False, indent=2, default=str)


CODE_ARGS = ("code", "source", "new_source")
"""Arguments that hold code (run_code, insert_cell, edit_cell): shown as code, not as a JSON string."""


def code_args(args: dict[str, Any]) -> dict[str, str]:
    """The arguments a card shows as text blocks of their own: code, and any text of several lines
    (as one JSON line its line breaks would read as \\n)."""
    return {k: v for k, v in args.items() if isinstance(v, str) and (k in CODE_ARGS or "\n" in v)}


def _args_html(args: dict[str, Any]) -> list[str]:
    blocks = code_args(args)
    rest = {k: v for k, v in args.items() if k not in blocks}
    parts = ["<div><b>Arguments</b></div>"]
    if rest or not blocks:
        parts.append(_pre(args_text(rest), look.PRE))
    for name, text in blocks.items():
        parts.append(f"<div><code>{escape(name)}</code></div>")
        parts.append(_pre(text, look.PRE).replace("<pre", f'<pre class="agentik-code" data-arg="{escape(name)}"', 1))
    return parts


def _args_summary(args: dict[str, Any]) -> str:
    inner = invisible.plain_visible(
        ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in args.items())
    )
    return inner if len(inner) <= TITLE_ARGS_LIMIT else inner[: TITLE_ARGS_LIMIT - 1] + "…"


def card_title(call: ToolCall, result: ToolResult | None, *, timings: bool = True, waiting: str | None = None) -> str:
    """Plain text (never HTML): '✓ name(args) · 12 ms'; a rejected edit is '⊘ … · rejected', not a ✓.
    `waiting`: what a call without a result waits for from the user ('waiting for your approval'):
    it is not running yet, or it waits on the user's answer, so it does not say 'running…'."""
    head = f"{call.name}({_args_summary(call.args)})"
    if result is None:
        return f"◷ {head} · {waiting}" if waiting else f"⚙ {head} · running…"
    if result.error == STOPPED_CALL:  # the user's Stop, as the turn says it (widgets/status.py STOPPED)
        return f"■ {head} · stopped"
    rejected = result.error is None and isinstance(result.result, str) and result.result.startswith(REJECTED)
    mark = "✗" if result.error is not None else "⊘" if rejected else "✓"
    tail = " · error" if result.error is not None else " · rejected" if rejected else ""
    if timings and result.duration_ms is not None:
        tail += f" · {result.duration_ms:,.0f} ms"
    return f"{mark} {head}{tail}"


def _pre(text: str, css: str = "") -> str:
    shown, cut = truncate(text)
    note = f'<div class="agentik-cut" style="{look.STATUS}"><em>{escape(cut_note(cut))}</em></div>' if cut else ""
    style = f' style="{css}"' if css else ""
    return f"<pre{style}>{invisible.escape_visible(shown)}</pre>{note}"


def rich_html(display: dict[str, Any] | None, *, sanitised: bool = False) -> str:
    """The card preview from a tool's MIME bundle: images first, then a sanitised table
    (`sanitised`: its HTML is sanitised already, as a transcript entry keeps it; sanitising it again changes nothing)."""
    if not display:
        return ""
    for mime in IMAGE_TYPES:
        data = display.get(mime)
        if isinstance(data, str) and len(data) <= IMAGE_LIMIT and _BASE64.match(data):
            clean = "".join(data.split())
            return f'<img src="data:{mime};base64,{clean}" style="max-width:100%" alt="tool image"/>'
    markup = display.get("text/html")
    if isinstance(markup, str):
        if len(markup) > HTML_PREVIEW_LIMIT:
            return f"<p><em>HTML preview omitted ({len(markup):,} characters).</em></p>"
        shown = markup if sanitised else sanitize_html(markup)
        return f'<div class="agentik-preview" style="overflow:auto;max-height:24em">{shown}</div>'
    return ""


def card_body_html(
    call: ToolCall, result: ToolResult | None, *, waiting: str | None = None, sanitised: bool = False
) -> str:
    """Arguments, then the error, or the preview and the text the model saw (`sanitised`: see `rich_html`)."""
    shown = [args_text(call.args)] + ([result.error or result_text(result)] if result is not None else [])
    parts = [invisible.warning_html("\n".join(shown), "This tool call"), *_args_html(call.args)]
    if result is None:
        parts.append(f"<div><em>{escape(waiting[:1].upper() + waiting[1:]) if waiting else 'Running'}…</em></div>")
    elif result.error is not None:
        parts.append("<div><b>Error</b></div>")
        parts.append(_pre(result.error, look.ERROR_PRE).replace("<pre", '<pre class="agentik-error"', 1))
    else:
        preview = rich_html(result.display, sanitised=sanitised)
        text = result_text(result)
        if preview:
            parts.append(f"<div><b>Result</b></div>{preview}")
            if text:
                parts.append(f"<details><summary>Text sent to the model</summary>{_pre(text, look.PRE)}</details>")
        else:
            parts.append("<div><b>Result</b></div>")
            parts.append(_pre(text or "(no output)", look.PRE))
    return "".join(parts)


CARD_STYLE = f' style="{look.CARD}"'


def card_html(
    call: ToolCall,
    result: ToolResult | None,
    *,
    timings: bool = True,
    waiting: str | None = None,
    sanitised: bool = False,
) -> str:
    """A collapsed <details>, its look inline (widgets/look.py: the theme's colours in JupyterLab,
    with or without our extension; their fallbacks in VS Code, Colab, GitHub, nbviewer)."""
    title = escape(card_title(call, result, timings=timings, waiting=waiting))
    body = card_body_html(call, result, waiting=waiting, sanitised=sanitised)
    return f'<details class="agentik-tool"{CARD_STYLE}><summary>{title}</summary>{body}</details>'


class Joined:
    """One HTML widget showing a fixed head (a view's question) and the cards right after it: cards
    that need no widget of their own (no box, no comm_open each)."""

    def __init__(self, widget: HTML, head: str) -> None:
        self.widget = widget
        self.head = head
        self.parts: list[str] = []

    def slot(self, value: str) -> Slot:
        self.parts.append(value)
        self.render()
        return Slot(self, len(self.parts) - 1)

    def render(self) -> None:
        self.widget.value = self.head + "".join(self.parts)


class Slot:
    """A card's place in a `Joined` widget; its `value` is the card's HTML, as an HTML widget's."""

    def __init__(self, joined: Joined, index: int) -> None:
        self.joined = joined
        self.index = index

    @property
    def value(self) -> str:
        return self.joined.parts[self.index]

    @value.setter
    def value(self, value: str) -> None:
        self.joined.parts[self.index] = value
        self.joined.render()


class ToolCard:
    """The live card: one HTML widget holding a collapsed <details> whose summary is the title,
    or its place in a `Joined` widget (`into`)."""

    def __init__(self, call: ToolCall, into: Joined | None = None) -> None:
        self.call = call
        self.result: ToolResult | None = None
        self.waiting: str | None = None
        self.own = into is None  # (a widget of its own, to add to a view)
        self.widget: Any = html(card_html(call, None)) if into is None else into.slot(card_html(call, None))

    @property
    def title(self) -> str:
        """The summary line, as plain text."""
        return card_title(self.call, self.result, waiting=self.waiting)

    @property
    def body_html(self) -> str:
        return card_body_html(self.call, self.result, waiting=self.waiting)

    def set_waiting(self, waiting: str | None) -> None:
        """What the call waits for from the user (None: it runs); ignored once it has its result."""
        if self.result is None and waiting != self.waiting:
            self.waiting = waiting
            self.widget.value = card_html(self.call, None, waiting=waiting)

    def set_result(self, result: ToolResult) -> None:
        self.result = result
        self.waiting = None
        self.widget.value = card_html(self.call, result)

    @property
    def collapsed(self) -> bool:
        return "<details open" not in self.widget.value
