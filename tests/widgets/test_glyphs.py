"""The approval card's and tool cards' marks are text glyphs: characters with emoji presentation
(⌛, ⏳, ✅, ❌ …) render as empty boxes on a machine without an emoji font (headless Debian
Chromium shows them so), while ✓ ✗ ⚙ come from ordinary text fonts."""

from __future__ import annotations

from agentik_jupyter.types import ToolCall, ToolResult
from agentik_jupyter.widgets import approval_card, cards

# Unicode's Emoji_Presentation characters below U+1F000 (emoji-data.txt); everything above is too.
EMOJI_PRESENTATION = {
    0x231A,
    0x231B,
    *range(0x23E9, 0x23ED),
    0x23F0,
    0x23F3,
    0x25FD,
    0x25FE,
    0x2614,
    0x2615,
    *range(0x2648, 0x2654),
    0x267F,
    0x2693,
    0x26A1,
    0x26AA,
    0x26AB,
    0x26BD,
    0x26BE,
    0x26C4,
    0x26C5,
    0x26CE,
    0x26D4,
    0x26EA,
    0x26F2,
    0x26F3,
    0x26F5,
    0x26FA,
    0x26FD,
    0x2705,
    0x270A,
    0x270B,
    0x2728,
    0x274C,
    0x274E,
    0x2753,
    0x2754,
    0x2755,
    0x2757,
    0x2795,
    0x2796,
    0x2797,
    0x27B0,
    0x27BF,
    0x2B1B,
    0x2B1C,
    0x2B50,
    0x2B55,
}


def emoji(text: str) -> list[str]:
    return [c for c in text if ord(c) in EMOJI_PRESENTATION or ord(c) >= 0x1F000]


def test_decisions_and_tool_marks_have_no_emoji() -> None:
    for text in approval_card.DECISIONS.values():
        assert emoji(text) == [], text
    call = ToolCall(id="c1", name="run_code", args={"code": "1"})
    for result in (
        None,
        ToolResult(tool_call_id="c1", name="run_code", result="ok"),
        ToolResult(tool_call_id="c1", name="run_code", result="", error="boom"),
    ):
        line = cards.card_title(call, result)
        assert emoji(line) == [], line


# Characters no text font on these machines has (fc-list finds none): the media-control marks.
NO_TEXT_FONT = {*range(0x23F8, 0x23FB)}


def test_every_status_line_is_drawn_with_text_glyphs() -> None:
    """Queued, sending, running, awaiting approval, responding, error, ended: no glyph that needs an emoji font."""
    from agentik_jupyter.core.orchestrator import AWAITING_APPROVAL
    from agentik_jupyter.core.store import AgentStore
    from agentik_jupyter.widgets.status import StatusLine

    store = AgentStore()
    line = StatusLine(store, clock=lambda: 10.0)
    seen: list[str] = []
    line.waiting(ahead=2)
    seen.append(line.text())
    line.begin(at=8.0)
    for status, tool in (
        ("sending", None),
        ("processing", "run_code"),
        ("processing", "run_code" + AWAITING_APPROVAL),
        ("responding", None),
        ("error", None),
    ):
        store.set(status=status, active_tool=tool)
        seen.append(line.text())
    for reason in ("complete", "interrupted", "max_iterations", "error"):
        line.end(reason, None)
        seen.append(line.text())
    assert all(seen), seen
    for text in seen:
        assert emoji(text) == [] and not [c for c in text if ord(c) in NO_TEXT_FONT], text


def test_no_widget_or_extension_source_draws_an_emoji() -> None:
    """Every string the widgets and the lab extension show comes from these files: none may need an emoji font."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = [
        *sorted((root / "agentik_jupyter" / "widgets").glob("*.py")),
        *sorted((root / "labextension" / "src").glob("*.ts")),
    ]
    assert len(sources) > 20
    found = [
        (path.name, number, "".join(emoji(line)))
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if emoji(line) or [c for c in line if ord(c) in NO_TEXT_FONT]
    ]
    assert found == [], found


def test_a_rejected_edit_is_marked_rejected_not_done() -> None:
    """The user said no: the card says "rejected" with its own mark, never the ✓ of a done tool."""
    from agentik_jupyter.notebook.edits import OUTCOMES

    call = ToolCall(id="c1", name="edit_cell", args={"cell_id": "a1", "new_source": "x = 2"})
    rejected = ToolResult(tool_call_id="c1", name="edit_cell", result=OUTCOMES["rejected"].format(id="a1"))
    line = cards.card_title(call, rejected)
    assert line.startswith("⊘ edit_cell(") and " · rejected" in line and "✓" not in line, line
    accepted = ToolResult(tool_call_id="c1", name="edit_cell", result=OUTCOMES["accepted"].format(id="a1"))
    assert cards.card_title(call, accepted).startswith("✓ edit_cell(")
