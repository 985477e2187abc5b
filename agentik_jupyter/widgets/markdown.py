"""Markdown from the model -> HTML that is safe to put in a widget or a saved notebook.

Model and tool text is untrusted: raw HTML in it is escaped (markdown-it with
`html=False`), links may only point to http(s) or mailto, and images become links
so that an answer cannot make the browser fetch a URL on its own.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

SAFE_SCHEMES = ("http://", "https://", "mailto:")
LINK_ATTRS = {"target": "_blank", "rel": "noopener noreferrer nofollow"}


def escape(text: str) -> str:
    """HTML-escape text, quotes included (safe inside attributes too)."""
    return html.escape(text, quote=True)


def is_safe_url(url: str) -> bool:
    """Only absolute http(s) and mailto links are followed; everything else is text."""
    return url.strip().lower().startswith(SAFE_SCHEMES)


def _image_as_link(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = escape(token.content or src)
    if not is_safe_url(src):
        return alt
    return f'<a href="{escape(src)}" target="_blank" rel="noopener noreferrer nofollow">Image: {alt}</a>'


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    for key, value in LINK_ATTRS.items():
        tokens[idx].attrSet(key, value)
    return str(self.renderToken(tokens, idx, options, env))


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = is_safe_url  # type: ignore[method-assign]
    md.add_render_rule("image", _image_as_link)
    md.add_render_rule("link_open", _link_open)
    return md


def render_markdown(text: str) -> str:
    """Render untrusted Markdown to HTML in which no tag comes from the text itself."""
    return _parser().render(text)
