"""A session deleted from outside while it is the active one: the next turn starts a new session with
nothing of the old one left behind (id, title, older-page cursor, transcript, history sent)."""

from __future__ import annotations

from pathlib import Path

from agentik_jupyter.core.history import HISTORY_PAGE
from agentik_jupyter.core.session import DELETED, Session
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry


async def test_the_turn_after_a_delete_starts_clean(tmp_path: Path) -> None:
    path = tmp_path / "nb.agentik.db"
    turns = HISTORY_PAGE // 2 + 5  # more than one page, so the resumed session has older history
    first = Session(
        ScriptedTransport([Step.say(f"answer {i}") for i in range(turns)]),
        ToolRegistry(),
        db=await AsyncSessionDB.open(path),
    )
    for i in range(turns):
        assert (await first.send(f"question {i}")).reason == "complete"
    old = first.conversation_id
    await first.aclose()

    db = await AsyncSessionDB.open(path)
    transport = ScriptedTransport([Step.say("fresh answer")])
    session = Session(transport, ToolRegistry(), db=db)
    info = await session.resume(old)
    assert info is not None and info.title == "question 0" and session.older_before is not None
    assert await db.delete_conversation(old)  # the sidebar's Delete

    outcome = await session.send("a new question")
    assert outcome.reason == "complete"
    assert session.conversation_id not in (None, old)
    assert session.title == "a new question" and session.older_before is None
    assert [m.content for m in transport.requests[0].messages] == ["a new question"]
    # a notice, not an error: the turn succeeds
    assert [(m.content, m.error, m.notice) for m in session.chat_store.messages] == [
        ("a new question", None, None),
        ("", None, DELETED.format(id=old)),
        ("fresh answer", None, None),
    ]
    assert [c.id for c in await db.list_conversations()] == [session.conversation_id]
    await session.aclose()
    await db.aclose()
