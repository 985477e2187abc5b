"""One look: the live widgets carry classes the lab extension styles with the theme's
variables, never colours of their own (those stay only in a saved transcript's text/html, for
GitHub and nbviewer). The browser side: tests/browser/test_one_look.py."""

from __future__ import annotations

import re

from agentik_jupyter.types import ToolCall, ToolResult
from agentik_jupyter.widgets.body import error_html, question_html
from agentik_jupyter.widgets.cards import ToolCard, card_html
from agentik_jupyter.widgets.panel import STOPPED_HTML, user_html
from agentik_jupyter.widgets.shared import ANSWER_CLASSES, LAYOUTS

COLOUR = re.compile(r"#[0-9a-fA-F]{3,6}\b|\bcolor\s*:|background\s*:")


def test_shared_layouts_hold_no_colour() -> None:
    assert not [name for name, traits in LAYOUTS.items() if COLOUR.search(" ".join(traits.values()))]


def test_the_live_parts_are_classes_without_inline_colours() -> None:
    call = ToolCall(id="c1", name="inspect_variable", args={"name": "sales"})
    card = ToolCard(call)
    card.set_result(ToolResult(tool_call_id="c1", name="inspect_variable", result=None, error="KeyError: 'x'"))
    for markup in (question_html("Why?"), user_html("Why?"), error_html("It broke"), STOPPED_HTML, card.widget.value):
        assert not COLOUR.search(markup), markup
    assert question_html("a <b>") == (
        '<div class="agentik-user"><span class="agentik-who">You</span>'
        '<div class="agentik-question">a &lt;b&gt;</div></div>'
    )  # as renderer.ts builds it
    assert 'class="agentik-error"' in card.widget.value and 'class="agentik-tool"' in card.widget.value
    assert ANSWER_CLASSES == ("agentik-assistant", "jp-RenderedHTMLCommon", "jp-RenderedMarkdown")


def test_a_saved_transcripts_card_keeps_its_colours_for_github() -> None:
    call = ToolCall(id="c1", name="inspect_variable", args={})
    assert "border:1px solid #ccc" in card_html(call, None)
