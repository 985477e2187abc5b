"""The chat panel's "Show older" and `@` suggestions, on a real Session and SQLite file.

"Show older" puts the previous page on top without touching what is shown (the widgets
already drawn stay the same objects, a running turn keeps streaming) and never shows a
message twice; `@` in the text box offers the kernel's variable names and types, read from
`type()` alone, and a click completes the name.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd

from agentik_jupyter.core.session import Session
from agentik_jupyter.notebook.mentions import suggest_names
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import AgentContext, VariableSummary
from agentik_jupyter.widgets import ChatPanel
from tests.core.test_history import write_long_session
from tests.widgets.test_views import html_of


async def resumed_panel(path: Path, steps: list[Step] | None = None) -> tuple[ChatPanel, Session, AsyncSessionDB]:
    db = await AsyncSessionDB.open(path)
    session = Session(ScriptedTransport(steps or []), ToolRegistry(), db=db)
    await session.resume()
    return ChatPanel(session), session, db


async def test_show_older_puts_the_previous_page_on_top_once(tmp_path: Path) -> None:
    path = tmp_path / "panel.agentik.db"
    write_long_session(path, 50)
    panel, session, db = await resumed_panel(path)
    assert panel.older_button.layout.display == ""  # shown: there is more
    text = html_of(panel.history)
    assert "Question 10" in text and "Question 9<" not in text and "Last answer" in text
    drawn = list(panel.history.children)
    panel.older_button.click()
    assert panel.older_button.disabled  # one page at a time
    await panel.older_task
    text = html_of(panel.history)
    assert text.index("Question 0<") < text.index("Question 10<") < text.index("Last answer")
    assert list(panel.history.children[-len(drawn) :]) == drawn  # only the new page was drawn
    for i in range(50):
        assert text.count(f"Question {i}<") == 1 and text.count(f"Answer {i}<") == 1
    assert len(panel._cards) == 50 and all(card.result is not None for card in panel._cards.values())
    assert "did not finish" not in text  # no turn cut in two
    assert panel.older_button.layout.display == "none" and not panel.older_button.disabled
    await db.aclose()


async def test_a_resumed_question_is_the_live_one_and_its_context_note_is_not_shown(tmp_path: Path) -> None:
    """The question the panel shows after a resume is the one it held live (the same message,
    note included, from one builder); the note says where it was asked, for the model only."""
    path = tmp_path / "note.agentik.db"
    db = await AsyncSessionDB.open(path)
    live = Session(ScriptedTransport([Step.say("Forty-two.")]), ToolRegistry(), db=db)
    live_panel = ChatPanel(live)
    context = AgentContext(cell_id="cell-7", variables=[VariableSummary(name="sales_df", type="DataFrame")])
    await live.send("How many rows?", context)
    asked = next(m for m in live.chat_store.messages if m.role == "user")
    assert asked.context_note and "sales_df" in asked.context_note
    await db.aclose()
    panel, session, db = await resumed_panel(path)
    again = next(m for m in session.chat_store.messages if m.role == "user")
    assert again == asked
    for shown in (html_of(live_panel.history), html_of(panel.history)):
        assert "How many rows?" in shown and "Forty-two." in shown
        assert "sales_df" not in shown and "cell-7" not in shown and "context" not in shown.lower()
    await db.aclose()


async def test_show_older_while_a_turn_streams_keeps_the_live_answer(tmp_path: Path) -> None:
    path = tmp_path / "live.agentik.db"
    write_long_session(path, 50)
    panel, session, db = await resumed_panel(path, [Step.say("streaming " * 40, chunk_size=3, delay=0.01)])
    task = panel.send("A new question")
    assert task is not None
    for _ in range(300):
        if panel._body is not None:
            break
        await asyncio.sleep(0.01)
    live = panel._body
    assert live is not None
    await panel.show_older()
    assert live.widget in panel.history.children
    await task
    text = html_of(panel.history)
    assert text.index("Question 0<") < text.index("A new question") < text.index("streaming streaming")
    assert text.count("A new question") == 1
    await db.aclose()


def test_suggestions_read_names_and_types_only() -> None:
    class Touchy:
        def __repr__(self) -> str:
            raise AssertionError("repr ran")

        def __len__(self) -> int:
            raise AssertionError("len ran")

        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"attribute {name} read")

    shell = SimpleNamespace(
        user_ns={
            "sales": pd.DataFrame({"x": [1]}),
            "Sales_2024": [1, 2],
            "salt": Touchy(),
            "_sales": 1,
            "sample": pd,
            "say": print,
            "other": 3,
        },
        user_ns_hidden={},
    )
    assert suggest_names(shell, "sa") == [
        ("sales", "pandas.DataFrame"),
        ("salt", f"tests.{Touchy.__qualname__}"),
        ("Sales_2024", "list"),
    ]
    assert [n for n, _ in suggest_names(shell, "")] == ["other", "sales", "Sales_2024", "salt"]
    assert suggest_names(shell, "nothing") == []


async def test_typing_at_suggests_variables_and_a_click_completes() -> None:
    session = Session(ScriptedTransport([]), ToolRegistry(), temporary=True)
    shell = SimpleNamespace(user_ns={"sales": pd.DataFrame({"x": [1]}), "sales_q": 3, "costs": 1.5}, user_ns_hidden={})
    session.name_suggester = lambda prefix: suggest_names(shell, prefix)
    panel = ChatPanel(session)
    box, row = panel.input, panel.suggestions.widget
    assert row.layout.display == "none"
    box.value = "Compare @sa"
    assert row.layout.display == "flex"
    shown = [b for b in row.children if b.layout.display != "none"]
    assert [b.description for b in shown] == ["@sales", "@sales_q"]
    assert shown[0].tooltip == "sales: pandas.DataFrame" and shown[1].tooltip == "sales_q: int"
    shown[1].click()
    assert box.value == "Compare @sales_q " and row.layout.display == "none"
    box.value = "Compare @sales_q with @"
    assert [b.description for b in row.children if b.layout.display != "none"] == ["@costs", "@sales", "@sales_q"]
    box.value = "Compare @sales_q with @c"
    buttons = list(row.children)
    assert [b.description for b in buttons if b.layout.display != "none"] == ["@costs"]
    box.value = "mail me@sales.com"  # not a mention
    assert row.layout.display == "none"
    box.value = "@zzz"
    assert row.layout.display == "none"
    box.value = "@s"
    assert list(row.children) == buttons  # the buttons are reused, not made again
    panel.close()


async def test_no_suggester_no_suggestions() -> None:
    panel = ChatPanel(Session(ScriptedTransport([]), ToolRegistry(), temporary=True))
    panel.input.value = "@sa"
    assert panel.suggestions.widget.layout.display == "none" and panel.suggestions.widget.children == ()


async def test_a_failed_load_says_so_and_keeps_what_is_shown(tmp_path: Path) -> None:
    path = tmp_path / "closed.agentik.db"
    write_long_session(path, 50)
    panel, session, db = await resumed_panel(path)
    shown = list(panel.history.children)
    await db.aclose()  # the file went away under the panel
    task = panel.show_older()
    assert task is not None
    await asyncio.wait([task])
    assert "Could not load older messages" in panel.notice.value and "closed" in panel.notice.value
    assert list(panel.history.children) == shown and session.has_older
    assert not panel.older_button.disabled and panel.older_button.layout.display == ""


def empty_note_shown(panel: ChatPanel) -> bool:
    """The pane's "No messages yet" note is there and not hidden."""
    notes = [w for w in panel.scroller.children if "No messages yet" in str(getattr(w, "value", ""))]
    return bool(notes) and notes[0].layout.display != "none"


async def test_a_stopped_turn_keeps_its_mark_when_the_session_is_shown_again(tmp_path: Path) -> None:
    """Live, the panel marks a stopped answer; re-rendered from the sessions file (a resume),
    the audit log's "interrupted" error row is the same mark, not a failure, and the title follows."""
    db = await AsyncSessionDB.open(tmp_path / "stopped.agentik.db")
    session = Session(ScriptedTransport([Step.say("cut " * 200, chunk_size=4, delay=0.01)]), ToolRegistry(), db=db)
    panel = ChatPanel(session)
    assert empty_note_shown(panel)  # the empty pane says what goes there
    task = panel.send("Write a long essay")
    assert task is not None
    for _ in range(300):
        if "cut cut" in html_of(panel.history):
            break
        await asyncio.sleep(0.01)
    assert session.stop()
    await task
    live = html_of(panel.history)
    assert live.count("■ Stopped") == 1 and live.index("cut cut") < live.index("■ Stopped")
    assert not empty_note_shown(panel)
    conversation = session.conversation_id
    session.new_conversation()
    assert "Write a long essay" not in html_of(panel.history) and panel.title.value == "<b>Agent chat</b>"
    assert empty_note_shown(panel)
    await session.resume(conversation)
    again = html_of(panel.history)
    assert again.count("■ Stopped") == 1 and "Interrupted by the user" not in again and "⚠" not in again
    assert not empty_note_shown(panel)
    assert again.index("Write a long essay") < again.index("cut cut") < again.index("■ Stopped")
    assert "Write a long essay" in panel.title.value
    panel.close()
    await db.aclose()
