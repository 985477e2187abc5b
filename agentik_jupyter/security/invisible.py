"""Characters a reader cannot see, made visible before the user approves or accepts text.

Trojan Source: bidi controls reorder how code reads (a call looks like a comment), zero-width
characters split or hide names, control characters are drawn as nothing. A card that renders
them raw shows the user something other than what runs. Every such character is shown as a
badge (`<U+202E RLO>`) and counted, so the card can warn above the code; the text itself is
unchanged (what runs is what was shown, badges standing for the hidden characters).
labextension/src/invisible.ts holds the same classification for the browser's own views.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Callable

BIDI: dict[int, str] = {
    0x202A: "LRE",
    0x202B: "RLE",
    0x202C: "PDF",
    0x202D: "LRO",
    0x202E: "RLO",
    0x2066: "LRI",
    0x2067: "RLI",
    0x2068: "FSI",
    0x2069: "PDI",
    0x200E: "LRM",
    0x200F: "RLM",
    0x061C: "ALM",
}
ZERO_WIDTH: dict[int, str] = {
    0x200B: "ZWSP",
    0x200C: "ZWNJ",
    0x200D: "ZWJ",
    0x2060: "WJ",
    0xFEFF: "BOM",
    0x034F: "CGJ",
    0x180E: "MVS",
    0x115F: "HANGUL FILLER",
    0x1160: "HANGUL FILLER",
    0x3164: "HANGUL FILLER",
    0xFFA0: "HANGUL FILLER",
    0x17B4: "KHMER VOWEL",
    0x17B5: "KHMER VOWEL",
}
SEPARATORS: dict[int, str] = {0x2028: "LSEP", 0x2029: "PSEP", 0x0085: "NEL"}
C0_NAMES = (
    "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US"
).split()
ALLOWED = frozenset("\n\t")
# Every character `label` may name (and a few more): a C-speed first pass, each match confirmed by
# `label`. Cf as of Unicode 15.1 (tests/security/test_invisible_chars.py checks it covers this Python's).
_CANDIDATES = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    r"\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ud800-\udfff\ufeff"
    r"\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    r"\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
BADGE_STYLE = (
    "display:inline-block;padding:0 3px;margin:0 1px;border-radius:3px;font-size:85%;line-height:1.3;"
    "border:1px solid var(--jp-warn-color0,#e65100);color:var(--jp-warn-color0,#e65100);"
    "background:var(--jp-layout-color2,#eee);white-space:nowrap"
)
WARNING_STYLE = (
    "padding:2px 6px;margin:2px 0;line-height:1.4;border-left:3px solid var(--jp-warn-color0,#e65100);"
    "background:var(--jp-warn-color3,#fff3e0);color:var(--jp-ui-font-color1,#000)"
)


def label(char: str) -> str | None:
    """The short name of a character a reader cannot see (`RLO`, `ZWSP`, `NUL`), else None."""
    code = ord(char)
    if char in ALLOWED:
        return None
    for table in (BIDI, ZERO_WIDTH, SEPARATORS):
        if code in table:
            return table[code]
    if code < 0x20:
        return C0_NAMES[code]
    if code == 0x7F:
        return "DEL"
    if 0xE0100 <= code <= 0xE01EF:
        return "VS"  # supplementary variation selectors: invisible, used to smuggle bytes
    category = unicodedata.category(char)
    if category == "Cc":
        return "CTRL"
    if category == "Cf":
        return "TAG" if 0xE0000 <= code <= 0xE007F else "FORMAT"
    if category == "Cs":
        return "SURROGATE"
    return None


def find(text: str) -> list[tuple[int, str]]:
    """(index, character) of every hidden character in `text`."""
    return [(m.start(), m.group()) for m in _CANDIDATES.finditer(text) if label(m.group()) is not None]


def count(text: str) -> int:
    return len(find(text))


def badge_text(char: str) -> str:
    """The plain-text stand-in for a hidden character: `<U+202E RLO>`."""
    return f"<U+{ord(char):04X} {label(char) or 'CHAR'}>"


def full_name(char: str) -> str:
    return unicodedata.name(char, "") or badge_text(char)[1:-1]


@functools.lru_cache(maxsize=256)
def badge_html(char: str, *, inline_style: bool = True) -> str:
    """One badge: a span whose text names the character (never the character itself)."""
    style = f' style="{BADGE_STYLE}"' if inline_style else ""
    return (
        f'<span class="agentik-invisible" title="{html.escape(full_name(char))}"{style}>'
        f"{html.escape(badge_text(char))}</span>"
    )


def _replace(text: str, badge: Callable[[str], str], rest: Callable[[str], str]) -> str:
    out, last = [], 0
    for at, char in find(text):
        out += [rest(text[last:at]), badge(char)]
        last = at + 1
    out.append(rest(text[last:]))
    return "".join(out)


def escape_visible(text: str, *, inline_style: bool = True) -> str:
    """`text` HTML-escaped, each hidden character replaced by its badge."""
    return _replace(text, lambda c: badge_html(c, inline_style=inline_style), lambda t: html.escape(t, quote=True))


def plain_visible(text: str) -> str:
    """`text` with each hidden character replaced by its plain-text badge (for text/plain views)."""
    return _replace(text, badge_text, str)


def warning_text(text: str, what: str = "This code") -> str:
    """The line above a card whose `text` holds hidden characters ("" when none)."""
    hits = find(text)
    if not hits:
        return ""
    n = len(hits)
    noun = "character" if n == 1 else "characters"
    verb = "contains" if what.lower().startswith("this") else "contain"
    return (
        f"⚠ {what} {verb} {n} invisible or direction-changing {noun}, shown as badges like "
        f"{badge_text(hits[0][1])}. What runs may differ from how it reads elsewhere."
    )


def warning_html(text: str, what: str = "This code", *, inline_style: bool = True) -> str:
    """The warning line as HTML ("" when `text` hides nothing)."""
    line = warning_text(text, what)
    if not line:
        return ""
    style = f' style="{WARNING_STYLE}"' if inline_style else ""
    return f'<div class="agentik-invisible-warning" role="alert"{style}>{html.escape(line)}</div>'


def line_count(text: str) -> int:
    """Lines as an editor numbers them (a trailing newline does not start one more)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def size_text(text: str) -> str:
    """'240 lines · 8,012 characters'."""
    lines = line_count(text)
    return f"{lines:,} line{'' if lines == 1 else 's'} · {len(text):,} character{'' if len(text) == 1 else 's'}"
