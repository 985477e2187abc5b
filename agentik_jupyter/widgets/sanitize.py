"""An allow-list filter for the rich HTML a tool hands to its card (a DataFrame table).

Tools run user or third-party code (MCP), so their `text/html` is treated like
model text: only table-ish tags with harmless attributes survive, everything
else is dropped (style and script bodies) or kept as escaped text. Invisible and
direction-changing characters in the text become badges (security/invisible.py).

A tool's own `style` attributes are dropped; an element with one of our classes (a diff's lines,
a hidden-character badge) gets that class's inline look back from CLASS_STYLES, so the preview
is coloured where our lab extension's CSS is not (VS Code, Colab).
"""

from __future__ import annotations

from html.parser import HTMLParser

from agentik_jupyter.notebook.edits import DIFF_STYLES
from agentik_jupyter.security import invisible
from agentik_jupyter.widgets.markdown import escape

ALLOWED_TAGS = frozenset(
    "table thead tbody tfoot tr th td caption colgroup col div span p br b i em strong code pre "
    "small sup sub ul ol li hr".split()
)
VOID_TAGS = frozenset({"br", "col", "hr"})
ALLOWED_ATTRS = frozenset({"class", "colspan", "rowspan", "border", "align", "valign", "title"})
DROP_CONTENT = frozenset({"script", "style", "template", "iframe", "object", "noscript", "svg", "math"})
CLASS_STYLES = {
    **DIFF_STYLES,
    "agentik-invisible": invisible.BADGE_STYLE,
    "agentik-invisible-warning": invisible.WARNING_STYLE,
}
"""Our own inline looks, fixed strings chosen by class (never a value from the tool's HTML)."""


def _class_style(attrs: list[tuple[str, str | None]]) -> str:
    classes = next((v or "" for k, v in attrs if k == "class"), "").split()
    style = next((CLASS_STYLES[c] for c in classes if c in CLASS_STYLES), "")
    return f' style="{style}"' if style else ""


class _Sanitizer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []
        self.dropping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in DROP_CONTENT:
            self.dropping += 1
            return
        if self.dropping or tag not in ALLOWED_TAGS:
            return
        kept = "".join(f' {k}="{escape(invisible.plain_visible(v or ""))}"' for k, v in attrs if k in ALLOWED_ATTRS)
        self.out.append(f"<{tag}{kept}{_class_style(attrs)}>")
        if tag not in VOID_TAGS:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID_TAGS:
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in DROP_CONTENT:
            self.dropping = max(0, self.dropping - 1)
            return
        if self.dropping or tag not in self.open:
            return
        while self.open:
            top = self.open.pop()
            self.out.append(f"</{top}>")
            if top == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self.dropping:
            self.out.append(invisible.escape_visible(data))

    def result(self) -> str:
        self.close()
        return "".join(self.out) + "".join(f"</{t}>" for t in reversed(self.open))


def sanitize_html(markup: str) -> str:
    """Keep the structure of a table preview, drop anything that could run or load."""
    parser = _Sanitizer()
    parser.feed(markup)
    return parser.result()
