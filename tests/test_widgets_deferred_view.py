"""A `%%agent --wait` cell's view is built while its request is on its way, and whatever
needs it first builds it at once; its transcript is rendered while the turn is written.

Over a real Session and the scripted model, with the comms recorded (`comm_log`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentik_jupyter.providers.errors import AuthenticationError
from agentik_jupyter.registry import ToolRegistry
from agentik_jupyter.session import Session
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.types import End
from agentik_jupyter.widgets import TurnView
from agentik_jupyter.widgets.transcript import TRANSCRIPT_MIME
from agentik_jupyter.widgets.turn_view import BUILD_DELAY_S

from .widgets_support import CommLog, comm_log  # noqa: F401


def session(steps: list[Step]) -> Session:
    return Session(ScriptedTransport(steps), ToolRegistry(), temporary=True)


def opened(log: CommLog) -> int:
    return sum(1 for kind, *_ in log.messages if kind == "comm_open")


async def test_the_view_is_built_and_shown_once_its_answer_was_requested(comm_log: CommLog) -> None:
    s = session([Step.say("slow answer", delay=0.2)])
    shown: list[TurnView] = []
    view = TurnView(s, "q", wait=True, show=shown.append)
    assert opened(comm_log) == 0 and shown == []  # nothing yet: the turn has not asked the model
    task = s.start_turn("q")
    view.track(task)
    await asyncio.sleep(BUILD_DELAY_S + 0.05)
    assert shown == [view] and opened(comm_log) >= 4  # the model is still thinking
    assert "Sending" in view.status.text() and view.stop_button.disabled is False
    await task
    bundle = view.finish()
    assert bundle[TRANSCRIPT_MIME]["entries"][-1]["content"] == "slow answer"
    assert bundle[TRANSCRIPT_MIME]["elapsed_s"] >= 0.2  # counted from the start, not from the build
    assert shown == [view]


async def test_an_event_before_the_build_builds_the_view_at_once(comm_log: CommLog) -> None:
    s = session([Step.fail(AuthenticationError("Invalid API key (401)."))])
    shown: list[TurnView] = []
    view = TurnView(s, "q", wait=True, show=shown.append)
    view.track(s.start_turn("q"))
    await view.task  # type: ignore[misc]
    assert shown == [view] and "Invalid API key" in view.body.errors[0]
    bundle = view.finish()
    assert bundle[TRANSCRIPT_MIME]["entries"][-1]["role"] == "error"


async def test_a_view_that_waits_for_another_turn_is_built_and_shown_at_once(comm_log: CommLog) -> None:
    s = session([Step.say("first", delay=0.05), Step.say("second")])
    first = s.start_turn("one")
    shown: list[TurnView] = []
    view = TurnView(s, "two", wait=True, show=shown.append)
    assert shown == [view] and "previous turn" in view.status.text()
    view.track(s.start_turn("two", on_start=view.attach))  # as the magic queues it
    await first
    await view.task  # type: ignore[misc]
    assert view.finish()[TRANSCRIPT_MIME]["entries"][-1]["content"] == "second"


async def test_the_transcript_is_rendered_after_the_end_event_and_before_the_turn_returns() -> None:
    """The End event only settles the view; the transcript is rendered on the loop's next
    round, while the session writes the turn, and `finish()` displays that same bundle."""
    s = session([Step.say("**done**")])
    displayed: list[dict[str, Any]] = []
    view = TurnView(s, "q", wait=True, display=displayed.append, show=lambda v: None)
    at_end: list[object] = []
    s.on_event(lambda e: at_end.append(view.bundle) if isinstance(e, End) else None)
    await s.start_turn("q")
    assert at_end == [None] and view.bundle is not None and displayed == []
    bundle = view.bundle
    assert view.finish() is bundle and displayed == [bundle]
    assert "<strong>done</strong>" in bundle["text/html"]


async def test_a_view_never_shown_is_built_now_as_before(comm_log: CommLog) -> None:
    view = TurnView(session([]), "q", wait=True, display=lambda b: None)
    assert opened(comm_log) >= 4 and view.stop_button.disabled is False
