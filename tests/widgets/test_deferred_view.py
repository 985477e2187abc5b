"""A `%%agent --wait` cell's view: its place is shown at once (the kernel's shared empty box,
so the cell's outputs do not depend on timing), and its live widgets are built, taking that
place, only if the turn still runs `LIVE_AFTER_S` after its answer was requested, or at once
when something needs them (a tool that may hold the loop, an approval, a queue); a turn that
ends sooner opens no widget. Its transcript is rendered while the turn is written.

Over a real Session and the scripted model, with the comms recorded (`comm_log`); `show`
renders the view's bundle as IPython's display does and hands back a handle to its place.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentik_jupyter.core.session import Session
from agentik_jupyter.errors import AuthenticationError
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry, definition_from_function, holds_loop
from agentik_jupyter.types import End
from agentik_jupyter.widgets import TurnView, shared, turn_view
from agentik_jupyter.widgets.shared import placeholder
from agentik_jupyter.widgets.transcript import TRANSCRIPT_MIME, holds_answer
from agentik_jupyter.widgets.turn_view import FIRST_WORDS_MAX_CHARS, LIVE_AFTER_S
from tests.widgets_support import CommLog, comm_log  # noqa: F401

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def session(steps: list[Step]) -> Session:
    return Session(ScriptedTransport(steps), ToolRegistry(), temporary=True)


def _shared_ids() -> set[str]:
    return {w.comm.comm_id for w in shared._made.values() if getattr(w, "comm", None) is not None}


def opened(log: CommLog) -> int:
    """Widgets of a view opened (not the kernel's shared layouts, styles and placeholder)."""
    return sum(1 for kind, comm_id, *_ in log.messages if kind == "comm_open" and comm_id not in _shared_ids())


def closed(log: CommLog) -> int:
    return sum(1 for kind, *_ in log.messages if kind == "comm_close")


def model_of(bundle: dict[str, Any]) -> str:
    return str(bundle[WIDGET_VIEW]["model_id"])


class Shown(list):  # type: ignore[type-arg]
    """What `show` displayed and how its place was updated since: bundles, in order."""

    def __call__(self, view: TurnView) -> Shown:
        self.append(view._repr_mimebundle_())
        return self

    def update(self, bundle: dict[str, Any], raw: bool = False) -> None:
        self.append(bundle)


async def finished(s: Session) -> tuple[TurnView, Shown, dict[str, Any]]:
    """Run one `--wait` turn as the magic does: the view, what it showed, the transcript it left."""
    shown = Shown()
    view = TurnView(s, "q", wait=True, show=shown)
    view.track(s.start_turn("q"))
    await view.task  # type: ignore[misc]
    return view, shown, view.finish()


def assert_placeholder_only(view: TurnView, shown: Shown, log: CommLog) -> None:
    """The view's place was shown (as always) and never filled: no widget opened or closed."""
    assert len(shown) == 1 and "text/plain" not in shown[0] and model_of(shown[0]) == placeholder().model_id
    assert not view._built and opened(log) == 0 and closed(log) == 0


async def test_the_place_is_shown_at_once_and_the_view_takes_it_if_the_model_still_thinks(comm_log: CommLog) -> None:
    s = session([Step.say("slow answer", delay=0.2)])
    shown = Shown()
    view = TurnView(s, "q", wait=True, show=shown)
    assert len(shown) == 1 and opened(comm_log) == 0  # its place only: the turn has not asked the model
    task = s.start_turn("q")
    view.track(task)
    await asyncio.sleep(LIVE_AFTER_S / 2)
    assert opened(comm_log) == 0  # not yet: the answer may come at once
    await asyncio.sleep(LIVE_AFTER_S / 2 + 0.05)
    assert opened(comm_log) >= 5  # the model is still thinking: the view is built and takes the place
    assert len(shown) == 2 and model_of(shown[1]) == view.widget.model_id and "text/plain" not in shown[1]
    assert "Sending" in view.status.text() and view.stop_button.disabled is False
    await task
    bundle = view.finish()
    assert bundle[TRANSCRIPT_MIME]["entries"][-1]["content"] == "slow answer"
    assert bundle[TRANSCRIPT_MIME]["elapsed_s"] >= 0.2  # counted from the start, not from the build
    assert len(shown) == 2 and view.widget.comm is None  # closed at the end


async def test_an_answer_that_streams_at_once_is_shown_when_its_first_words_come(
    comm_log: CommLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that starts answering at once, at its own pace (a token every 10 ms): the view is
    built FIRST_WORDS_S after the first words while the turn still runs, not LIVE_AFTER_S after the
    request (that waited ~0.1 s with the first words in hand). LIVE_AFTER_S is set far out of reach,
    so only the first words can build the view, however slowly a loaded machine runs the loop."""
    monkeypatch.setattr(turn_view, "LIVE_AFTER_S", 600.0)
    assert 5 < FIRST_WORDS_MAX_CHARS < 900
    answer = "word " * 200  # ~2 s of streaming
    s = session([Step.say(answer, chunk_size=5, delay=0.01)])
    shown = Shown()
    view = TurnView(s, "q", wait=True, show=shown)
    task = s.start_turn("q")
    view.track(task)
    while not view._built and not task.done():
        await asyncio.sleep(0.005)
    assert view._built, "the answer ended with no view built"
    assert len(shown) == 2 and model_of(shown[1]) == view.widget.model_id
    assert not task.done()  # built while the answer streams, not at its end
    await task
    assert any("word" in str(data) for kind, _, _, data in comm_log.messages if kind in ("comm_open", "comm_msg"))
    assert holds_answer(view.finish(), answer)


async def test_an_answer_that_comes_in_bursts_and_ends_soon_opens_no_widget(comm_log: CommLog) -> None:
    """Thousands of characters at once are read faster than anyone reads: the turn is about to
    end, so its first words do not build the view (LIVE_AFTER_S decides, as before)."""
    view, shown, bundle = await finished(session([Step.say("burst " * 300, chunk_size=900, delay=0.02)]))
    assert_placeholder_only(view, shown, comm_log)  # (it ran ~0.04 s: past FIRST_WORDS_S, short of LIVE_AFTER_S)
    assert holds_answer(bundle, "burst " * 300)


async def test_a_turn_that_ends_at_once_leaves_its_transcript_and_an_empty_box(comm_log: CommLog) -> None:
    s = session([Step.say("a quick **answer**")])
    shown, displayed = Shown(), []
    view = TurnView(s, "q", wait=True, display=displayed.append, show=shown)
    view.track(s.start_turn("q"))
    await view.task  # type: ignore[misc]
    bundle = view.finish()
    assert_placeholder_only(view, shown, comm_log)
    assert not [m for m in comm_log.messages if m[0] == "comm_msg"]  # nothing updated either
    assert displayed == [bundle] and bundle[TRANSCRIPT_MIME]["entries"][-1]["content"] == "a quick **answer**"
    assert "<strong>answer</strong>" in bundle["text/html"] and bundle[TRANSCRIPT_MIME]["status"] == "complete"
    await asyncio.sleep(LIVE_AFTER_S + 0.05)  # the deferred build does not come back to a finished view
    assert opened(comm_log) == 0 and len(shown) == 1


async def test_an_error_at_once_is_in_the_transcript_without_a_live_view(comm_log: CommLog) -> None:
    view, shown, bundle = await finished(session([Step.fail(AuthenticationError("Invalid API key (401)."))]))
    assert_placeholder_only(view, shown, comm_log)
    assert bundle[TRANSCRIPT_MIME]["entries"][-1]["role"] == "error"
    assert "Invalid API key" in bundle[TRANSCRIPT_MIME]["entries"][-1]["message"]


async def test_a_tool_call_builds_the_view_at_once_with_the_text_before_it(comm_log: CommLog) -> None:
    """A built-in tool runs on the kernel's loop and may hold it: the view must be up first."""
    s = session([Step.call("missing_tool", text="Let me look."), Step.say("done", delay=0.3)])
    view = TurnView(s, "q", wait=True, show=Shown())
    view.track(s.start_turn("q"))
    await asyncio.sleep(0.05)  # well before LIVE_AFTER_S
    assert view._built and "Let me look." in view.body.text and view.body.cards
    await view.task  # type: ignore[misc]
    assert view.finish()[TRANSCRIPT_MIME]["entries"][-1]["content"] == "done"


async def test_a_view_that_waits_for_another_turn_is_built_and_shown_at_once(comm_log: CommLog) -> None:
    s = session([Step.say("first", delay=0.05), Step.say("second")])
    first = s.start_turn("one")
    shown = Shown()
    view = TurnView(s, "two", wait=True, show=shown)
    assert len(shown) == 1 and view._built and "previous turn" in view.status.text()
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
    assert opened(comm_log) >= 5 and view.stop_button.disabled is False


def tool_session(steps: list[Step], **options: bool) -> Session:
    registry = ToolRegistry()
    registry.add(definition_from_function(lambda: "rows: 3", name="peek", policy="auto", **options))
    return Session(ScriptedTransport(steps), registry, temporary=True)


async def test_a_tool_that_cannot_hold_the_loop_leaves_the_view_deferred(
    comm_log: CommLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `thread=True` tool runs in a worker thread: the loop (and the deferred build) stay free.
    A turn that calls it and ends at once leaves only its transcript, with the tool call in it.
    (LIVE_AFTER_S out of reach: a loaded machine must not build the view by the clock; a tool
    that held the loop would build it before running whatever the clock says.)"""
    monkeypatch.setattr(turn_view, "LIVE_AFTER_S", 600.0)
    view, shown, bundle = await finished(tool_session([Step.call("peek"), Step.say("three rows")], thread=True))
    assert_placeholder_only(view, shown, comm_log)
    roles = [e["role"] for e in bundle[TRANSCRIPT_MIME]["entries"]]
    assert "tool" in " ".join(roles) and bundle[TRANSCRIPT_MIME]["entries"][-1]["content"] == "three rows"


async def test_a_plain_tool_builds_the_view_before_it_runs(comm_log: CommLog) -> None:
    seen: list[int] = []
    s = tool_session([Step.call("peek"), Step.say("done")])
    s.orchestrator.registry.get("peek").execute = lambda: seen.append(opened(comm_log)) or "ok"  # type: ignore[union-attr]
    view, shown, bundle = await finished(s)
    assert view._built and seen and seen[0] >= 5  # the view's widgets were open when the tool ran
    assert bundle[TRANSCRIPT_MIME]["entries"][-1]["content"] == "done"


def test_which_tools_may_hold_the_loop() -> None:
    async def fetch() -> str:
        return ""

    assert holds_loop(definition_from_function(lambda: 1, name="plain"))
    assert not holds_loop(definition_from_function(lambda: 1, name="threaded", thread=True))
    assert not holds_loop(definition_from_function(fetch))
    assert holds_loop(None)  # an unknown tool is assumed to
    quick = definition_from_function(lambda: 1, name="quick")
    quick.quick = True
    assert not holds_loop(quick)
