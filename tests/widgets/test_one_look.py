"""One look, with or without our lab extension: the live widgets carry the classes the extension
styles with the theme's variables, and the same look inline, every colour a theme variable with a
fallback (`var(--jp-…, #…)`): JupyterLab's theme decides in JupyterLab, the fallback in VS Code,
Colab, GitHub and nbviewer. The browser side: tests/browser/test_one_look.py (with the extension)
and tests/browser/test_no_extension_look.py (without it)."""

from __future__ import annotations

import re

from agentik_jupyter.core.store import AgentStore
from agentik_jupyter.notebook.edits import diff_html, unified_diff
from agentik_jupyter.types import ToolCall, ToolResult
from agentik_jupyter.widgets.body import error_html, question_html
from agentik_jupyter.widgets.cards import ToolCard, card_html
from agentik_jupyter.widgets.panel import STOPPED_HTML, user_html
from agentik_jupyter.widgets.sanitize import sanitize_html
from agentik_jupyter.widgets.shared import ANSWER_CLASSES, BUTTON_STYLES, LAYOUTS, button, html, layout
from agentik_jupyter.widgets.status import StatusLine

THEMED = re.compile(r"var\(--jp-[a-z0-9-]+, ?(#[0-9a-fA-F]{3,6}|[a-z0-9.]+)\)")
BARE_COLOUR = re.compile(r"#[0-9a-fA-F]{3,6}\b|rgba?\(")
STYLE = re.compile(r' style="[^"]*"')


def bare_colours(text: str) -> list[str]:
    """Colours not given as a theme variable with its fallback."""
    return BARE_COLOUR.findall(THEMED.sub("", text))


def test_frames_and_buttons_take_the_theme_with_a_fallback() -> None:
    assert "3px solid var(--jp-brand-color1" in LAYOUTS["live"]["border_left"]
    assert "solid var(--jp-warn-color1" in LAYOUTS["approval"]["border"]
    for name, traits in LAYOUTS.items():
        assert not bare_colours(" ".join(traits.values())), name
    for name, traits in BUTTON_STYLES.items():
        assert not bare_colours(traits.get("button_color", "")), name
    accept = button("Approve", kind="accept")
    assert accept.style.button_color.startswith("var(--jp-accept-color-normal")
    assert accept._dom_classes == ("agentik-button", "agentik-button-accept")
    assert button("Stop")._dom_classes == ("agentik-button",)


def test_the_live_parts_keep_their_classes_and_carry_their_look() -> None:
    call = ToolCall(id="c1", name="inspect_variable", args={"name": "sales"})
    card = ToolCard(call)
    card.set_result(ToolResult(tool_call_id="c1", name="inspect_variable", result=None, error="KeyError: 'x'"))
    for markup in (question_html("Why?"), user_html("Why?"), error_html("It broke"), STOPPED_HTML, card.widget.value):
        assert not bare_colours(markup), markup
    assert STYLE.sub("", question_html("a <b>")) == (
        '<div class="agentik-user"><span class="agentik-who">You</span>'
        '<div class="agentik-question">a &lt;b&gt;</div></div>'
    )  # as renderer.ts builds it, plus the look inline
    assert "color:var(--jp-error-color1, #d32f2f)" in error_html("It broke")
    assert 'class="agentik-error"' in card.widget.value and 'class="agentik-tool"' in card.widget.value
    assert "border:1px solid var(--jp-border-color2, #e0e0e0)" in card.widget.value
    assert "color:var(--jp-error-color1" in card.widget.value  # the error in the card, red
    assert ANSWER_CLASSES == ("agentik-assistant", "jp-RenderedHTMLCommon", "jp-RenderedMarkdown")


def test_a_widget_of_our_extension_gets_no_inline_look() -> None:
    """Its page has our CSS, and its allow-list drops `var()` styles: they would only cost bytes."""
    assert question_html("a <b>", inline=False) == (
        '<div class="agentik-user"><span class="agentik-who">You</span>'
        '<div class="agentik-question">a &lt;b&gt;</div></div>'
    )
    store = AgentStore()
    assert "style=" in StatusLine(store, begun=0.0, clock=lambda: 1.0).widget.value
    assert "style=" not in StatusLine(store, begun=0.0, clock=lambda: 1.0, inline=False).widget.value


def test_a_saved_transcripts_card_is_the_live_one() -> None:
    call = ToolCall(id="c1", name="inspect_variable", args={})
    assert card_html(call, None) == ToolCard(call).widget.value


def test_a_diff_in_a_cards_preview_keeps_its_colours_and_drops_a_tools_own_styles() -> None:
    preview = sanitize_html(diff_html(unified_diff("rate = 1", "rate = 2", "c1")))
    assert 'class="agentik-diff-line agentik-diff-added" style="background:#e6ffec;color:#1f2328"' in preview
    assert 'class="agentik-diff-line agentik-diff-removed" style="background:#ffebe9;color:#1f2328"' in preview
    hostile = sanitize_html('<div class="agentik-diff-added" style="background:url(http://x)">+x</div>')
    assert "url(" not in hostile and "background:#e6ffec" in hostile
    assert sanitize_html('<td style="color:red">1</td>') == "<td>1</td>"


def test_an_answered_card_swaps_its_frame() -> None:
    box_layout = layout("approval")
    assert box_layout is layout("approval") and box_layout is not layout("approval_done")
    assert html("x").layout is layout("plain")
