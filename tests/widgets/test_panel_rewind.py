"""Rewinds as the user sees them, on a real Session and SQLite file: the panel's Rewind is offered only
when there is a turn to take back, and tells a rewind once, by the rewound turn's line; a cell's saved
transcript says its turn was rewound."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from agentik_jupyter.core.rewind import apply_rewind, plan_rewind
from agentik_jupyter.core.session import Session
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.widgets import ChatPanel, TurnView
from agentik_jupyter.widgets.transcript import REWOUND_MARK, TRANSCRIPT_MIME
from agentik_jupyter.widgets.turn_rewind import ELSEWHERE_NOTE, REWOUND_NOTE, controls_of, rewind_control, turn_rows
from tests.widgets.test_views import html_of


async def test_an_empty_panel_says_how_to_start_and_offers_no_rewind(tmp_path: Path) -> None:
    db = await AsyncSessionDB.open(tmp_path / "empty.agentik.db")
    panel = ChatPanel(Session(ScriptedTransport([]), ToolRegistry(), db=db))
    assert panel._empty.layout.display == "" and "No messages yet." in panel._empty.value
    assert "Ask below" in panel._empty.value and panel._empty.layout.margin == "auto"  # in the box's middle
    assert panel.rewind.button.disabled  # nothing to rewind
    await db.aclose()


async def test_a_rewind_from_the_panel_is_told_once_where_the_turn_is(tmp_path: Path) -> None:
    db = await AsyncSessionDB.open(tmp_path / "rewind.agentik.db")
    session = Session(ScriptedTransport([Step.say("First answer."), Step.say("Second answer.")]), ToolRegistry(), db=db)
    panel = ChatPanel(session)
    for question in ("First question", "Second question"):
        task = panel.send(question)
        assert task is not None
        await task
    assert not panel.rewind.button.disabled
    await panel.rewind.preview()
    assert "Rewind would take back turn 2" in panel.rewind.message.value
    await panel.rewind.confirm()
    shown = html_of(panel.widget)
    assert shown.count("Rewound turn 2") == 1, shown  # the turn's line, not also a printout and a note
    assert REWOUND_NOTE not in shown and "This turn was rewound" not in shown
    assert panel.rewind.message.value == ""  # nothing happened to cells: nothing under the box
    transcript = html_of(panel.history)
    assert transcript.index("Second answer.") < transcript.index("↶ Rewound turn 2")
    assert not panel.rewind.button.disabled  # turn 1 is left
    await panel.rewind.preview()
    await panel.rewind.confirm()
    assert html_of(panel.widget).count("Rewound turn 1") == 1
    assert panel.rewind.button.disabled  # every turn was taken back
    await db.aclose()


async def test_a_rewound_turns_transcript_is_shown_again_saying_so(tmp_path: Path) -> None:
    """Its cell's transcript is what a saved notebook keeps of a turn: once the turn is rewound (by
    `%agent rewind` here), the transcript in its place says so, in its text, HTML and JSON."""
    db = await AsyncSessionDB.open(tmp_path / "marked.agentik.db")
    session = Session(ScriptedTransport([Step.say("An answer.")]), ToolRegistry(), db=db)
    shown: list[dict[str, Any]] = []
    view = TurnView(session, "A question", wait=True, display=shown.append)
    task = session.start_turn("A question")
    view.track(task)
    await task
    view.finish()
    assert len(shown) == 1 and REWOUND_MARK not in shown[0]["text/plain"]
    await apply_rewind(session, await plan_rewind(session))
    for _ in range(100):
        if len(shown) == 2:
            break
        await asyncio.sleep(0.01)
    marked = shown[-1]
    assert "[✓ Done · ↶ Rewound · " in marked["text/plain"], marked["text/plain"]
    assert "✓ Done · ↶ Rewound" in marked["text/html"] and "An answer." in marked["text/html"]
    assert marked[TRANSCRIPT_MIME]["rewound"] is True and "rewound" not in shown[0][TRANSCRIPT_MIME]
    await db.aclose()


async def test_a_new_conversation_while_the_controls_read_still_reaches_them(tmp_path: Path) -> None:
    """The controls read the session's turns in the file's worker thread; a change that comes while
    a read is on its way (`%agent new` right after a turn ends, the end's read still behind a slow
    write) is read again once that read is done: the old turn's control says it is in another
    session, not what the earlier read found."""
    db = await AsyncSessionDB.open(tmp_path / "late.agentik.db")
    session = Session(ScriptedTransport([Step.say("An answer.")]), ToolRegistry(), db=db)
    await session.start_turn("A question")
    (message_id,) = await turn_rows(session)
    control = rewind_control(session, message_id, lambda old, new: None)
    assert control is not None
    await controls_of(session).refresh()
    assert control.note is None  # its turn can be rewound
    gate = threading.Event()
    slow = db.submit(gate.wait)  # a slow write ahead of the controls' read, in the file's one lane
    controls_of(session).soon()
    for _ in range(5):  # the refresh runs up to its read, which waits behind the slow write
        await asyncio.sleep(0)
    session.new_conversation()
    gate.set()
    await slow
    for _ in range(200):
        if control.note == ELSEWHERE_NOTE:
            break
        await asyncio.sleep(0.01)
    assert control.note == ELSEWHERE_NOTE
    await db.aclose()
