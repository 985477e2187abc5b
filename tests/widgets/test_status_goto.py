"""A waiting line says where to act and takes the user there: "Run All held at 'Queued (1 ahead)'
by an approval far up the page. Link or scroll to it."

The status line's HTML carries a "Go to the approval" / "Show it" control whenever the line says the
agent waits for the user (the queued turn's line, and the waiting turn's own); the lab extension acts
on it (labextension/src/goto.ts, browser test tests/browser/test_goto.py). Without the extension the
control stays hidden, and the plain text (nbclient, `text()`) says where in words.
The error banner takes the theme's look through classes, not inline colours.
"""

from __future__ import annotations

import re

from ipywidgets.widgets.widget import _instances as alive  # (Widget.widgets, without its deprecation warning)

from agentik_jupyter.core.orchestrator import AWAITING_APPROVAL
from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.tools.status import label
from agentik_jupyter.widgets.status import ErrorBanner, StatusLine

GOTO = re.compile(r'<button type="button" class="agentik-goto[^"]*" data-agentik-goto="(\w+)"[^>]*>([^<]+)</button>')


def control(line: StatusLine) -> tuple[str, str] | None:
    """(kind, label) of the line's go-to control, or None."""
    found = GOTO.findall(line.widget.value)
    assert len(found) <= 1, line.widget.value
    return found[0] if found else None


def test_a_queued_line_held_by_an_approval_carries_a_control_that_goes_to_it() -> None:
    agent = AgentStore()
    line = StatusLine(agent, clock=lambda: 5.0)
    line.waiting(ahead=1)
    assert control(line) is None  # nothing to go to: the turn ahead does not wait for the user
    agent.set(status="processing", active_tool="run_code" + AWAITING_APPROVAL)
    assert control(line) == ("approval", "Go to the approval")
    # the plain text is unchanged: it says where in words (nbclient, a screen reader's summary)
    assert (
        line.text() == "◷ Queued (1 ahead): the turn ahead waits for your approval to run run_code, in its cell above"
    )
    assert "Go to" not in line.text()
    agent.set(status="processing", active_tool=label("edit_cell", "the diff on cell 2"))
    assert control(line) == ("answer", "Show it")
    agent.set(status="processing", active_tool="run_code")
    assert control(line) is None


def test_the_control_is_hidden_unless_the_extension_shows_it() -> None:
    """In a frontend without the lab extension nothing would act on a click: the button stays hidden."""
    agent = AgentStore()
    line = StatusLine(agent, clock=lambda: 5.0)
    line.waiting(ahead=2)
    agent.set(status="processing", active_tool="run_code" + AWAITING_APPROVAL)
    button = re.search(r"<button[^>]*>", line.widget.value)
    assert button and 'style="display:none"' in button.group(0), line.widget.value


def test_the_waiting_turns_own_line_carries_the_control_too() -> None:
    """The diff may sit on another cell, the card in another view (the panel follows a cell's turn)."""
    agent = AgentStore()
    line = StatusLine(agent, clock=lambda: 5.0)
    line.begin(at=1.0)
    agent.set(status="processing", active_tool="run_code")
    assert control(line) is None
    agent.set(status="processing", active_tool="run_code" + AWAITING_APPROVAL)
    assert line.text() == "◷ Waiting for your approval to run run_code… 4.0 s"
    assert control(line) == ("approval", "Go to the approval")
    agent.set(status="processing", active_tool=label("edit_cell", "the diff on cell 3 (In [7])"))
    assert line.text() == "◷ edit_cell: waiting for your answer on the diff on cell 3 (In [7])… 4.0 s"
    assert control(line) == ("answer", "Show it")
    agent.set(status="responding", active_tool=None)
    assert control(line) is None
    agent.set(status="processing", active_tool="run_code" + AWAITING_APPROVAL)
    line.end("complete", None)
    assert control(line) is None and line.text().startswith("✓ Done")


def test_the_error_banner_takes_the_theme_through_classes_and_inline_with_as_many_widgets() -> None:
    chat = ChatStore()
    before = len(alive)
    banner = ErrorBanner(chat)
    assert len(alive) - before == 8  # HTML, Button, HBox, their layouts and styles: as before
    assert "agentik-error-banner" in banner.widget._dom_classes
    chat.set_error("Invalid API key <401>")
    assert banner.visible
    assert banner.message.value == (
        '<span class="agentik-error" style="color:var(--jp-error-color1, #d32f2f)">⚠ Invalid API key &lt;401&gt;</span>'
    )
    assert banner.widget.layout.border_left.startswith("3px solid var(--jp-error-color1")
    chat.set_error(None)
    assert not banner.visible
    banner.close()


async def test_a_queued_line_shows_a_blocker_that_came_within_the_render_interval() -> None:
    """Run All: the turn queues, and a moment later the turn ahead asks for approval. The line
    re-renders at most ten times a second; the held-back render must still come for a queued line."""
    import asyncio

    from agentik_jupyter.widgets.status import MIN_RENDER_INTERVAL_S

    agent = AgentStore()
    line = StatusLine(agent)
    line.waiting(ahead=1)
    agent.set(status="processing", active_tool="run_code" + AWAITING_APPROVAL)
    await asyncio.sleep(MIN_RENDER_INTERVAL_S * 2)
    assert control(line) == ("approval", "Go to the approval")
    assert "waits for your approval to run run_code" in line.widget.value
