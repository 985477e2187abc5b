"""Trojan Source on the cards: hidden characters shown as badges, with a warning and the size.

A bidi override or a zero-width space in approved code made the card read as a no-op while
the code did something else; a payload below the card's scroll box went unseen. Every card
the user decides on (approval, tool card, edit diff, tool HTML preview) now names each
hidden character and says how many lines there are.
"""

from __future__ import annotations

import asyncio
import re
from html import unescape

import pytest

from agentik_jupyter.notebook.edits import diff_html, unified_diff
from agentik_jupyter.security import invisible
from agentik_jupyter.tools.approval import ApprovalRequest
from agentik_jupyter.types import ToolCall, ToolDefinition, ToolResult
from agentik_jupyter.widgets.approval_card import ApprovalCard
from agentik_jupyter.widgets.cards import card_html, rich_html
from agentik_jupyter.widgets.sanitize import sanitize_html

RUN = ToolDefinition(name="run_code", policy="ask", execute=lambda code: code, source="builtin")
MOVE = ToolDefinition(name="fs__write", policy="ask", execute=lambda path, text: "", source="mcp")
# Reads as a comment that does nothing; the RLO / isolates reorder it, the ZWSP hides in a name.
TROJAN = (
    'admin = False\nif admin != "none\u202e \u2066# check if admin\u2069 \u2066":\n    print("ok")\nimport o\u200bs\n'
)
HIDDEN = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u200b\u200c\u200d\u2060\ufeff"
LISTED = [
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x200E,
    0x200F,
    0x061C,
    *range(0x200B, 0x200E),
    0x2060,
    0xFEFF,
    0x2028,
    0x2029,
]


def shown(markup: str) -> str:
    """The text a reader sees (tags removed, entities decoded)."""
    return unescape(re.sub(r"<[^>]+>", "", markup))


def raw_hidden(markup: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in unescape(markup) if invisible.label(c) is not None]


async def card_for(name: str, args: dict[str, object], definition: ToolDefinition) -> ApprovalCard:
    call = ToolCall(id="c1", name=name, args=args)
    return ApprovalCard(ApprovalRequest(call, definition, asyncio.get_running_loop()))


async def test_approval_card_shows_hidden_characters_as_badges_under_a_warning() -> None:
    card = await card_for("run_code", {"code": TROJAN}, RUN)
    markup = card.question.value
    assert raw_hidden(markup) == []  # not one raw U+202E / U+2066 / U+200B reaches the browser
    text = shown(markup)
    assert "This code contains 5 invisible or direction-changing characters, shown as badges" in text
    assert "<U+202E RLO>" in text and "<U+2066 LRI>" in text and "<U+2069 PDI>" in text
    assert "import o<U+200B ZWSP>s" in text
    assert text.endswith("4 lines above: read them all before approving · 5 hidden characters shown as badges")
    assert text.index("This code contains") < text.index("admin = False")  # the warning comes first
    assert 'class="agentik-invisible"' in markup and "var(--jp-warn-color0" in markup


async def test_hidden_characters_in_other_arguments_are_badged_and_counted() -> None:
    card = await card_for("fs__write", {"path": "notes\u200b.txt", "text": "x" * 500 + "\u202e"}, MOVE)
    markup = card.question.value
    assert raw_hidden(markup) == []
    text = shown(markup)
    assert "These arguments contain 2 invisible" in text and "notes<U+200B ZWSP>.txt" in text


async def test_a_clean_card_has_no_warning() -> None:
    card = await card_for("run_code", {"code": "df.head()"}, RUN)
    assert "invisible" not in shown(card.question.value)
    assert "1 line · 9 characters" in shown(card.question.value)


async def test_long_code_says_how_many_lines_and_is_not_in_a_scroll_box() -> None:
    code = "\n".join(f"x{i} = {i}" for i in range(239)) + "\nimport shutil; shutil.rmtree('/home')"
    card = await card_for("run_code", {"code": code}, RUN)
    markup = card.question.value
    assert "240 lines" in shown(markup)
    block = re.search(r"<pre[^>]*>\s*<code class=\"language-python\"", markup)
    assert block and "max-height" not in block.group(0)  # all 240 lines on the card, none below a fold
    assert "shutil.rmtree" in shown(markup)
    # the panel shows a long card's end: the size is said again there, beside the buttons
    assert shown(markup).endswith("240 lines above: read them all before approving")


async def test_folded_argument_says_its_size_and_hidden_characters() -> None:
    long_text = "\n".join(["harmless"] * 120) + "\nrm -rf ~\u200b"
    card = await card_for("fs__write", {"path": "a", "text": long_text}, MOVE)
    summary = re.search(r"<summary>(.*?)</summary>", card.question.value, re.S)
    assert summary and "121 lines" in shown(summary.group(1))
    assert "1 hidden character" in shown(summary.group(1))


def test_tool_card_arguments_show_badges() -> None:
    call = ToolCall(id="c1", name="run_code", args={"code": TROJAN})
    markup = card_html(call, ToolResult(tool_call_id="c1", name="run_code", result="ok\u200b"))
    assert raw_hidden(markup) == []
    text = shown(markup)
    assert "<U+202E RLO>" in text and "ok<U+200B ZWSP>" in text and "invisible or direction-changing" in text


def test_edit_diff_shows_badges_a_warning_and_line_counts_through_the_sanitiser() -> None:
    old = "total = 1 + 1"
    new = "total = 1 + 1\u200b\nimport os\u2060"
    markup = rich_html({"text/html": diff_html(unified_diff(old, new, "abc"))})
    assert raw_hidden(markup) == []
    text = shown(markup)
    assert "<U+200B ZWSP>" in text and "<U+2060 WJ>" in text
    assert "This change contains 2 invisible or direction-changing characters" in text
    assert 'class="agentik-invisible"' in markup


def test_tool_html_preview_badges_hidden_characters() -> None:
    markup = sanitize_html("<table><tr><td>pass\u202eword</td></tr></table>")
    assert raw_hidden(markup) == [] and "pass<U+202E RLO>word" in shown(markup)


@pytest.mark.parametrize("code", LISTED, ids=lambda c: f"U+{c:04X}")
def test_every_listed_code_point_is_hidden(code: int) -> None:
    char = chr(code)
    assert invisible.label(char)
    assert invisible.badge_text(char).startswith(f"<U+{code:04X} ")
    assert invisible.plain_visible(f"a{char}b") == f"a{invisible.badge_text(char)}b"


def test_controls_and_formats_are_hidden_but_text_is_not() -> None:
    for char in ["\x00", "\x1b", "\r", "\x7f", "\x85", "\u00ad", "\U000e0041", "\U000e0100", "\u3164"]:
        assert invisible.label(char), f"U+{ord(char):04X}"
    for char in ["\n", "\t", " ", "a", "é", "ж", "中", "✓", "\u00a0", "\U0001f600"]:
        assert invisible.label(char) is None, f"U+{ord(char):04X}"
    assert invisible.count(HIDDEN) == len(HIDDEN)
    assert invisible.label("\x00") == "NUL" and invisible.label("\u202e") == "RLO"


def test_line_counts() -> None:
    assert invisible.line_count("") == 0 and invisible.line_count("a") == 1
    assert invisible.line_count("a\nb\n") == 2 and invisible.line_count("a\n\nb") == 3
    assert invisible.size_text("a\nb") == "2 lines · 3 characters"


def test_the_fast_first_pass_misses_no_hidden_character() -> None:
    """`find` scans with a regex first: every character `label` names must match it (this Python's Unicode)."""
    every = "".join(chr(c) for c in range(0x110000))
    rest = invisible._CANDIDATES.sub("", every)
    assert [f"U+{ord(c):04X}" for c in rest if invisible.label(c) is not None] == []
