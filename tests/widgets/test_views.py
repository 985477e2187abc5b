"""TurnView, ChatPanel and tool cards over a real Session driven by the scripted model."""

from __future__ import annotations

import asyncio
import base64
import re
from typing import Any

import pandas as pd

from agentik_jupyter.core.session import Session
from agentik_jupyter.errors import AuthenticationError
from agentik_jupyter.testing.scripted import ScriptedTransport, Step
from agentik_jupyter.tools.registry import ToolRegistry, tool
from agentik_jupyter.types import ChatMessage, ToolCall, ToolOutput, ToolResult, Usage
from agentik_jupyter.widgets import ChatPanel, SessionLike, TurnView, transcript_bundle
from agentik_jupyter.widgets.cards import ToolCard
from agentik_jupyter.widgets.transcript import TRANSCRIPT_MIME
from agentik_jupyter.widgets.turn_view import VIEW_TEXT
from tests.widgets_support import CommLog, comm_log  # noqa: F401

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def tools() -> ToolRegistry:
    reg = ToolRegistry()

    @tool(registry=reg, policy="auto")
    def frame(rows: int = 2) -> ToolOutput:
        """A DataFrame preview."""
        df = pd.DataFrame({"x": range(rows), "y": ["<b>a</b>"] * rows})
        return ToolOutput(text=df.to_string(), display={"text/html": df.to_html()})

    @tool(registry=reg, policy="auto")
    def plot() -> ToolOutput:
        """An image."""
        return ToolOutput(text="a figure", display={"image/png": PNG})

    @tool(registry=reg, policy="auto")
    def boom() -> str:
        """Fails."""
        raise ValueError("kaboom <script>")

    @tool(registry=reg, policy="auto")
    def big() -> str:
        """Long text."""
        return "z" * 10_000

    return reg


def session(steps: list[Step]) -> Session:
    return Session(ScriptedTransport(steps), tools(), temporary=True)


def html_of(widget: Any) -> str:
    """All HTML values under a widget tree."""
    out = [str(getattr(widget, "value", ""))] if hasattr(widget, "value") and isinstance(widget.value, str) else []
    for child in getattr(widget, "children", ()):
        out.append(html_of(child))
    return "\n".join(out)


def test_session_satisfies_the_protocol() -> None:
    assert isinstance(session([]), SessionLike)


async def test_turn_view_streams_then_leaves_a_transcript_in_its_output(comm_log: CommLog) -> None:
    s = session([Step.say("**Hello** <script>x</script>", usage=Usage(input_tokens=12, output_tokens=3))])
    view = TurnView(s, "hi <b>there</b>")
    assert view._repr_mimebundle_()["text/plain"] == VIEW_TEXT
    assert "hi &lt;b&gt;there&lt;/b&gt;" in view.header.value
    assert view.stop_button.disabled is False
    outcome = await s.start_turn("hi <b>there</b>")
    assert outcome.reason == "complete" and view.ended and view.reason == "complete"
    assert view.stop_button.disabled is True
    (out,) = view.widget.children
    bundle = out.outputs[0]["data"]
    assert bundle is view.bundle
    assert (
        bundle["text/plain"] == "You: hi <b>there</b>\nAgent: **Hello** <script>x</script>\n"
        "[✓ Done · 12 tokens in, 3 out]"
    )
    assert "<strong>Hello</strong> &lt;script&gt;" in bundle["text/html"] and "<script>" not in bundle["text/html"]
    payload = bundle[TRANSCRIPT_MIME]
    assert payload["version"] == 1 and payload["status"] == "complete"
    assert payload["usage"] == {"input_tokens": 12, "output_tokens": 3}
    assert [e["role"] for e in payload["entries"]] == ["user", "assistant"]
    assert "Done" in view.status.text() and "12 tokens in" in view.status.text()


async def test_wait_mode_finish_displays_the_transcript_and_hides_the_live_view() -> None:
    shown: list[dict[str, Any]] = []
    s = session([Step.call("frame", {"rows": 3}), Step.say("Three rows.")])
    view = TurnView(s, "look", wait=True, display=shown.append)
    await s.start_turn("look")
    assert view.ended and not shown and view.output is None
    bundle = view.finish()
    assert shown == [bundle] and view.finish() is bundle and len(shown) == 1
    assert view.widget.layout.display == "none"
    tool_entry = bundle[TRANSCRIPT_MIME]["entries"][1]
    assert tool_entry["role"] == "tool" and tool_entry["name"] == "frame" and tool_entry["args"] == {"rows": 3}
    assert '<table border="1" class="dataframe">' in tool_entry["display"]["text/html"]
    assert "<details" in bundle["text/html"] and "&lt;b&gt;a&lt;/b&gt;" in bundle["text/html"]
    assert bundle["text/plain"].splitlines()[1].startswith("[tool] frame -> ")


async def test_tool_cards_are_collapsed_and_show_result_error_table_image_and_cut() -> None:
    s = session([Step.calls(("frame", {}), ("plot", {}), ("boom", {}), ("big", {})), Step.say("ok")])
    view = TurnView(s, "q", wait=True, display=lambda b: None)
    cards: dict[str, ToolCard] = {}
    s.on_event(lambda e: cards.update({c.call.name: c for c in view.body.cards.values()}))
    await s.start_turn("q")
    assert set(cards) == {"frame", "plot", "boom", "big"}
    assert all(c.collapsed for c in cards.values())
    assert cards["frame"].title.startswith("✓ frame()") and "ms" in cards["frame"].title
    assert f"<summary>{cards['frame'].title}</summary>" in cards["frame"].widget.value
    assert '<table border="1" class="dataframe">' in cards["frame"].body_html
    assert f'src="data:image/png;base64,{PNG}"' in cards["plot"].body_html
    assert cards["boom"].title.startswith("✗ boom() · error")
    assert "kaboom &lt;script&gt;" in cards["boom"].body_html
    assert "8,000 more characters not shown" in cards["big"].body_html


def test_a_code_argument_shows_as_code_not_as_a_json_line() -> None:
    code = "import pandas as pd\nprint(sales['units'].sum())  # <total>"
    card = ToolCard(ToolCall(id="c1", name="run_code", args={"code": code, "timeout": 30}))
    card.set_result(ToolResult(tool_call_id="c1", name="run_code", result="5093"))
    body, saved = (
        card.body_html,
        transcript_bundle(
            [ChatMessage(role="assistant", tool_calls=[card.call]), ChatMessage(role="tool", tool_result=card.result)],
            question="q",
        )["text/html"],
    )
    block = re.compile(
        r'<pre class="agentik-code" data-arg="code"( style="[^"]*")?>'
        + re.escape("import pandas as pd\nprint(sales[&#x27;units&#x27;].sum())  # &lt;total&gt;</pre>")
    )
    for markup in (body, saved):  # the live card and the saved transcript's HTML
        assert block.search(markup), markup
        expanded = markup.split("</summary>", 1)[-1]  # (the one-line title keeps its short summary)
        assert "\\n" not in expanded and "&quot;code&quot;" not in expanded
        assert "&quot;timeout&quot;: 30" in markup  # the other arguments stay JSON


async def test_stop_button_ends_the_turn_and_the_view() -> None:
    s = session([Step.say("word " * 400, chunk_size=5, delay=0.01)])
    view = TurnView(s, "long")
    task = s.start_turn("long")
    view.track(task)
    while "word" not in view.body.text:
        await asyncio.sleep(0.01)
    view.stop_button.click()
    outcome = await asyncio.wait_for(task, 1.0)
    assert outcome.reason == "interrupted" and view.reason == "interrupted"
    assert s.agent_store.status == "idle" and not s.busy
    assert "Stopped" in view.bundle["text/plain"]
    assert view.bundle[TRANSCRIPT_MIME]["entries"][1]["content"].startswith("word")


async def test_a_call_cut_by_stop_is_marked_stopped_not_failed() -> None:
    reg = ToolRegistry()
    started = asyncio.Event()

    @tool(registry=reg, policy="auto")
    async def slow_query() -> str:
        """Run for a long time."""
        started.set()
        await asyncio.sleep(60)
        return "never"

    s = Session(ScriptedTransport([Step.call("slow_query", {}), Step.say("never")]), reg, temporary=True)
    view = TurnView(s, "query", wait=True, display=lambda b: None)
    task = s.start_turn("query")
    view.track(task)
    await asyncio.wait_for(started.wait(), 2.0)
    assert view.stop()
    assert (await asyncio.wait_for(task, 5.0)).reason == "interrupted"
    (card,) = view.body.cards.values()
    assert card.title == "■ slow_query() · stopped", card.title
    bundle = view.finish()
    assert "■ Stopped" in bundle["text/plain"] and "failed" not in bundle["text/plain"]
    assert "■ slow_query() · stopped" in bundle["text/html"] and "failed_tools" not in bundle[TRANSCRIPT_MIME]


async def test_provider_error_shows_in_the_view_and_transcript() -> None:
    s = session([Step.fail(AuthenticationError("Invalid API key (401)."))])
    view = TurnView(s, "hi", wait=True, display=lambda b: None)
    await s.start_turn("hi")
    bundle = view.finish()
    assert view.reason == "error" and "Invalid API key" in view.body.errors[0]
    assert "Error: " in bundle["text/plain"] and bundle[TRANSCRIPT_MIME]["entries"][-1]["role"] == "error"


async def test_a_queued_view_follows_only_its_own_turn() -> None:
    s = session([Step.say("first answer", delay=0.01), Step.say("second answer")])
    first = TurnView(s, "one")
    t1 = s.start_turn("one")
    second = TurnView(s, "two")
    assert not second.armed and "previous turn" in second.status.text()
    await t1
    await s.start_turn("two")
    assert first.body.text == "first answer" and second.body.text == "second answer"


async def test_panel_renders_history_sends_with_enter_and_streams() -> None:
    s = session([Step.say("Follow-up **answer**")])
    s.chat_store.set_messages(
        [
            ChatMessage(role="user", content="earlier <i>q</i>"),
            ChatMessage(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="frame", args={})]),
            ChatMessage(role="tool", content="t", tool_result=ToolResult(tool_call_id="c1", name="frame", result="t")),
            ChatMessage(role="assistant", content="earlier *answer*"),
        ]
    )
    panel = ChatPanel(s)
    text = html_of(panel.history)
    assert "earlier &lt;i&gt;q&lt;/i&gt;" in text and "<em>answer</em>" in text
    assert len(panel._cards) == 1 and panel._cards["c1"].result is not None
    panel.input.value = "next"
    panel._on_input_msg(panel.input, {"event": "submit"}, [])
    await asyncio.sleep(0.1)
    panel.input.value = "next?"  # the last keystroke, held back by the frontend, lands after Enter
    assert panel.last_task is None  # not sent yet: the box had not settled
    await asyncio.sleep(0.7)
    assert panel.input.value == "" and panel.last_task is not None
    await panel.last_task
    text = html_of(panel.history)
    assert "next?" in text and "Follow-up <strong>answer</strong>" in text
    assert s.chat_store.messages[-2].content == "next?"
    assert text.count("Follow-up") == 1
    assert panel.stop_button.disabled and "Done" in panel.status.text()
    assert panel._repr_mimebundle_()["text/plain"] == "Agent chat panel"


async def test_a_send_click_that_overtakes_the_question_still_sends_it() -> None:
    """The frontend holds a widget's value update while an earlier one is in flight but sends a
    click at once: on a loaded machine Send's click reaches the kernel before the question. A click
    on an empty box waits for it as Enter does, instead of doing nothing; one on a full box sends."""
    s = session([Step.say("first answer"), Step.say("second answer")])
    panel = ChatPanel(s)
    panel.send_button.click()
    await asyncio.sleep(0.1)
    panel.input.value = "the question"  # the box's update, after the click
    await asyncio.sleep(0.7)
    assert panel.last_task is not None and panel.input.value == ""
    first = panel.last_task
    await first
    assert s.chat_store.messages[-2].content == "the question"
    panel.input.value = "the next one"
    panel.send_button.click()
    await asyncio.sleep(0.05)  # (well under the settle)
    assert panel.input.value == "" and panel.last_task is not None and panel.last_task is not first
    await panel.last_task
    assert s.chat_store.messages[-2].content == "the next one"


async def test_panel_send_while_busy_queues_and_stop_works() -> None:
    s = session([Step.say("x " * 300, chunk_size=2, delay=0.01), Step.say("second answer")])
    panel = ChatPanel(s)
    task = panel.send("go")
    assert task is not None
    for _ in range(200):  # until the answer streams (a loaded machine may take a while)
        if s.agent_store.status == "responding":
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.05)
    assert not panel.stop_button.disabled
    queued = panel.send("again")
    assert queued is not None and "Queued (1 ahead)" in panel.notice.value
    panel.stop_button.click()
    outcome = await asyncio.wait_for(task, 1.0)
    assert outcome.reason == "interrupted"
    assert (await asyncio.wait_for(queued, 5.0)).reason == "complete"
    assert panel.stop_button.disabled and panel.notice.value == ""
    # the cut-off answer keeps its mark in the conversation after the status line moves on
    history = html_of(panel.history)
    mark = '<div class="agentik-stopped">■ Stopped</div>'
    assert "x x" in history and history.index("x x") < history.index(mark) < history.index("second answer")


async def test_error_banner_shows_until_dismissed() -> None:
    s = session([Step.fail(AuthenticationError("Invalid API key <401>."))])
    panel = ChatPanel(s)
    assert not panel.banner.visible
    await panel.send("hi")
    assert panel.banner.visible and "Invalid API key &lt;401&gt;" in panel.banner.message.value
    panel.banner.dismiss.click()
    assert s.chat_store.error is None and not panel.banner.visible


async def test_panel_rerenders_on_resume_and_clear() -> None:
    s = session([])
    panel = ChatPanel(s)
    s.chat_store.set_messages([ChatMessage(role="user", content="a"), ChatMessage(role="assistant", error="boom")])
    assert "boom" in html_of(panel.history) and len(panel.history.children) == 2
    s.chat_store.clear_messages()
    assert panel.history.children == ()


def test_transcript_bundle_for_a_whole_conversation() -> None:
    messages = [ChatMessage(role="user", content="q"), ChatMessage(role="assistant", content="a")]
    bundle = transcript_bundle(messages, title="T")
    assert bundle["text/plain"] == "You: q\nAgent: a"
    assert bundle[TRANSCRIPT_MIME]["title"] == "T" and bundle[TRANSCRIPT_MIME]["status"] is None


async def test_reasoning_streams_into_a_collapsed_thinking_section() -> None:
    from ipywidgets import Accordion

    from agentik_jupyter.types import AppendText, StartReasoning, StartResponse
    from agentik_jupyter.widgets.body import TurnBody

    body = TurnBody()
    body.handle(StartResponse())
    body.handle(StartReasoning())
    for piece in ("Let me ", "think <b>hard</b>."):
        body.handle(AppendText(text=piece, reasoning=True))
    body.handle(AppendText(text="The answer."))
    body.finish()
    sections = [w for w in body.widget.children if isinstance(w, Accordion)]
    assert len(sections) == 1 and sections[0].selected_index is None and sections[0].get_title(0) == "Thinking"
    assert body.reasoning[0].text == "Let me think <b>hard</b>." and body.text == "The answer."
    assert "<b>hard</b>" not in html_of(sections[0]) and "&lt;b&gt;hard&lt;/b&gt;" in html_of(sections[0])


async def test_the_status_line_shows_a_fast_turns_steps_at_most_ten_times_a_second() -> None:
    """Sending, a tool, sending again, responding: a turn that does them in a few milliseconds
    sends the frontend its first and its last status, not one update per step."""
    s = session([Step.call("frame", {"rows": 2}), Step.say("Two rows.")])
    view = TurnView(s, "look", wait=True, display=lambda b: None)
    values: list[str] = []
    view.status.widget.observe(lambda change: values.append(change["new"]), "value")
    await s.start_turn("look")
    assert [v for v in values if "Sending" in v] == [values[0]]
    assert "Done" in values[-1] and len(values) == 2, values


async def test_the_status_line_still_follows_a_slow_turn() -> None:
    s = session([Step.call("frame", {"rows": 2}), Step.say("word " * 30, chunk_size=5, delay=0.05)])
    view = TurnView(s, "look", wait=True, display=lambda b: None)
    values: list[str] = []
    view.status.widget.observe(lambda change: values.append(change["new"]), "value")
    await s.start_turn("look")
    assert any("Responding" in v for v in values), values
    assert "Done" in values[-1]


async def test_a_turn_that_starts_at_once_never_says_it_waits() -> None:
    s = session([Step.say("hello")])
    view = TurnView(s, "hi")
    values: list[str] = []
    view.status.widget.observe(lambda change: values.append(change["new"]), "value")
    view.track(s.start_turn("hi"))
    await view.task
    assert not any("previous turn" in v or "Queued" in v for v in values), values


async def test_panel_and_live_view_status_say_a_tool_failed_not_done() -> None:
    """The panel's line agrees with the transcript: a turn that answered after a failed call is not "✓ Done"."""
    s = session([Step.call("boom"), Step.say("I could not compute it."), Step.call("frame"), Step.say("Here.")])
    panel = ChatPanel(s)
    view = TurnView(s, "compute")
    await s.start_turn("compute")
    assert panel.status.text().startswith("⚠ Finished with 1 failed tool call"), panel.status.text()
    assert view.status.text().startswith("⚠ Finished with 1 failed tool call"), view.status.text()
    await panel.send("again")
    assert panel.status.text().startswith("✓ Done"), panel.status.text()


async def test_panel_shows_the_sessions_running_total() -> None:
    s = session(
        [
            Step.say("one", usage=Usage(input_tokens=1_000, output_tokens=5, cached_tokens=0)),
            Step.say("two", usage=Usage(input_tokens=1_200, output_tokens=6, cached_tokens=1_000)),
        ]
    )
    panel = ChatPanel(s)
    assert panel.totals.value == ""
    for question in ("first", "second"):
        task = panel.send(question)
        assert task is not None
        await task
        assert panel.totals_task is not None
        await panel.totals_task
    assert panel.totals.value == "Session: 2,200 tokens in (45% from cache), 11 out"
    panel.close()


async def test_a_panel_opened_after_a_stop_marks_the_stopped_turn() -> None:
    """A turn stopped before the panel was shown (a cell's, or a panel closed since) is marked in the
    panel's transcript as it is live and after a resume: "■ Stopped" under the cut-off answer."""
    s = session([Step.say("word " * 400, chunk_size=5, delay=0.01), Step.say("after")])
    view = TurnView(s, "long")
    task = s.start_turn("long")
    view.track(task)
    while "word" not in view.body.text:
        await asyncio.sleep(0.01)
    view.stop_button.click()
    assert (await asyncio.wait_for(task, 1.0)).reason == "interrupted"
    assert view.bundle is not None and view.bundle["text/plain"].count("■ Stopped") == 1  # (its cell says it once)
    await s.start_turn("next")
    history = html_of(ChatPanel(s).history)
    mark = '<div class="agentik-stopped">■ Stopped</div>'
    assert history.count(mark) == 1, history
    assert history.index("word") < history.index(mark) < history.index("after")


async def test_with_prices_known_the_panels_session_line_says_what_it_cost(monkeypatch: Any) -> None:
    """As `%agent usage` does: each turn priced by its model; an unpriced model leaves tokens only."""
    monkeypatch.setenv("LLM_MODEL", "my-model")
    monkeypatch.setenv("AGENTIK_PRICES", '{"my-model": {"input": 1.0, "output": 4.0, "cached_input": 0.1}}')
    s = session([Step.say("one", usage=Usage(input_tokens=1_000_000, output_tokens=250_000, cached_tokens=500_000))])
    panel = ChatPanel(s)
    task = panel.send("first")
    assert task is not None
    await task
    assert panel.totals_task is not None
    await panel.totals_task
    # 0.5 M fresh at $1 + 0.5 M cached at $0.1 + 0.25 M out at $4 = $1.55
    assert panel.totals.value == "Session: 1,000,000 tokens in (50% from cache), 250,000 out · $1.5500 at list prices"
    monkeypatch.setenv("AGENTIK_PRICES", "{}")
    panel.refresh_totals()
    assert panel.totals_task is not None
    await panel.totals_task
    assert panel.totals.value == "Session: 1,000,000 tokens in (50% from cache), 250,000 out"
    panel.close()


async def test_tool_cards_before_the_answer_are_shown_in_the_questions_widget(comm_log: CommLog) -> None:
    """A view without our extension shows the question, then the turn's first cards, in one widget
    (no widget opened per card); a card after answer text gets its own, below that text."""
    s = session(
        [Step.call("frame", {}), Step.call("plot", {}), Step.call("big", {}, text="Between."), Step.say("End.")]
    )
    view = TurnView(s, "look", wait=True, display=lambda b: None)
    comm_log.reset()
    seen: list[str] = []
    s.on_event(lambda e: seen.append(view.header.value) if view.body.cards else None)
    await s.start_turn("look")
    cards = view.body.cards
    frame, plot, big = (next(c for c in cards.values() if c.call.name == n) for n in ("frame", "plot", "big"))
    header = view.header.value
    assert header.index("look") < header.index(frame.widget.value) < header.index(plot.widget.value)
    assert frame.title.startswith("✓ frame()") and f"<summary>{frame.title}</summary>" in header
    assert any("frame()" in v and "✓ frame()" not in v for v in seen)  # shown while it ran, then its result
    assert big.own and big.widget.value not in header  # after the answer's text: a widget of its own
    opened = [p["state"].get("value", "") for kind, _, _, p in comm_log.messages if kind == "comm_open"]
    assert not any("agentik-tool" in str(v) and "frame()" in str(v) for v in opened)
