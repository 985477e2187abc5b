"""A saved turn keeps every answer once, in the transcript's text/html.

The JSON copy of an answer longer than PLAIN_TEXT_LIMIT keeps its start and `"in_html": true`;
the lab renderer draws the whole answer from the bundle's HTML element `data-agentik-entry`
(tests/browser/test_transcript.py sees it drawn as before). A turn's transcript
display_data for a 4,000-character answer was ~2.4x the answer (HTML plus the JSON copy); now
it is the HTML plus a few hundred bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentik_jupyter.persistence import INTERRUPTED_MESSAGE
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.tools.plan import PLAN_MIME
from agentik_jupyter.types import ChatMessage, ToolCall, ToolResult
from agentik_jupyter.widgets.markdown import render_markdown
from agentik_jupyter.widgets.status import STOPPED, ending_text
from agentik_jupyter.widgets.transcript import (
    PLAIN_TEXT_LIMIT,
    TRANSCRIPT_MIME,
    holds_answer,
    one_line,
    transcript_bundle,
)
from tests.kernel_support import RawKernel, kernel_env

pytestmark = pytest.mark.timeout(120)


def report(chars: int) -> str:
    """An answer as a model writes one: paragraphs of prose with inline code, now and then a list."""
    sentence = (
        "The sales frame has many rows and the `units` column grows with each region while "
        "north and south stay balanced across the whole sample. "
    )
    blocks, i = [], 0
    while sum(len(b) + 2 for b in blocks) < chars:
        blocks.append("- north: 50 rows\n- south: 50 rows" if i % 5 == 4 else sentence * 3)
        i += 1
    return "\n\n".join(blocks)[:chars].rstrip()


ANSWER = report(4_000)


def test_an_answer_is_kept_once_in_the_html_and_its_start_in_the_json() -> None:
    bundle = transcript_bundle(
        [ChatMessage(role="assistant", content=ANSWER)], question="Write the report.", status="complete"
    )
    entry = bundle[TRANSCRIPT_MIME]["entries"][1]
    assert entry["in_html"] is True and len(entry["content"]) <= PLAIN_TEXT_LIMIT
    assert ANSWER.startswith(entry["content"].rstrip("…"))
    assert f'data-agentik-entry="1">{one_line(render_markdown(ANSWER))}</div>' in bundle["text/html"]
    assert "more characters in the HTML output]" in bundle["text/plain"]
    assert holds_answer(bundle, ANSWER) and not holds_answer(bundle, ANSWER + " more")
    assert len(json.dumps(bundle).encode()) <= 1.5 * len(ANSWER.encode())


def test_a_short_answer_stays_whole_in_the_json() -> None:
    short = "Two regions, **50** rows each."
    bundle = transcript_bundle([ChatMessage(role="assistant", content=short)], question="q", status="complete")
    assert bundle[TRANSCRIPT_MIME]["entries"][1] == {"role": "assistant", "content": short}
    assert "data-agentik-entry" not in bundle["text/html"] and holds_answer(bundle, short)


def test_every_long_answer_of_a_conversation_points_at_its_own_element() -> None:
    first, second = report(1_000), report(600).replace("sales", "price")
    bundle = transcript_bundle(
        [
            ChatMessage(role="user", content="q1"),
            ChatMessage(role="assistant", content=first),
            ChatMessage(role="user", content="q2"),
            ChatMessage(role="assistant", content=second),
        ]
    )
    entries = bundle[TRANSCRIPT_MIME]["entries"]
    assert [e.get("in_html") for e in entries] == [None, True, None, True]
    html = bundle["text/html"]
    assert f'data-agentik-entry="1">{one_line(render_markdown(first))}<' in html
    assert f'data-agentik-entry="3">{one_line(render_markdown(second))}<' in html


def test_a_turns_transcript_display_data_is_about_its_answer_plus_markup(tmp_path: Path) -> None:
    """What the kernel sends the frontend for the transcript of a real turn (was ~2.4x the answer)."""
    with FakeLLMServer() as llm:
        k = RawKernel(kernel_env(llm), tmp_path)
        try:
            assert k.execute("%load_ext agentik_jupyter").ok
            llm.push(Reply.text(ANSWER, chunks=len(ANSWER) // 4))
            ex = k.execute("%%agent --wait\nWrite the report.")
        finally:
            k.close()
    assert ex.ok, ex.text
    (msg,) = [
        m for m in ex.messages if m["msg_type"] == "display_data" and TRANSCRIPT_MIME in m["content"].get("data", {})
    ]
    sent = len(json.dumps(msg["content"], ensure_ascii=False).encode())
    assert sent <= 1.5 * len(ANSWER.encode()), sent / len(ANSWER.encode())
    assert holds_answer(msg["content"]["data"], ANSWER)


def test_a_stopped_turn_in_a_resumed_session_is_worded_as_the_cell_and_panel_word_it() -> None:
    """The audit log's "Interrupted by the user" (a Stop) shows as the same "■ Stopped" as a
    stopped cell's line and the panel's mark, not as an error."""
    messages = [
        ChatMessage(role="user", content="Write a long essay."),
        ChatMessage(role="assistant", content="Paragraph 1"),
        ChatMessage(role="assistant", error=INTERRUPTED_MESSAGE),
    ]
    bundle = transcript_bundle(messages, title="A session")
    assert STOPPED == ending_text("interrupted") == "■ Stopped"
    assert bundle["text/plain"].splitlines()[-1] == STOPPED and "Error" not in bundle["text/plain"]
    assert f'<div class="agentik-stopped">{STOPPED}</div>' in bundle["text/html"]
    assert "⚠" not in bundle["text/html"] and "Interrupted" not in bundle["text/html"]
    assert bundle[TRANSCRIPT_MIME]["entries"][-1] == {
        "role": "error",
        "message": INTERRUPTED_MESSAGE,
        "code": "interrupted",
    }


def _call(call_id: str, name: str, **args: object) -> ChatMessage:
    return ChatMessage(role="assistant", content="", tool_calls=[ToolCall(id=call_id, name=name, args=args)])


def _result(call_id: str, name: str, error: str | None = None, **display: object) -> ChatMessage:
    result = ToolResult(tool_call_id=call_id, name=name, result=None if error else "ok", error=error, display=display)
    return ChatMessage(role="tool", content=error or "ok", tool_result=result)


def test_a_plan_is_shown_as_it_ended_and_ticked_only_by_steps_that_succeeded() -> None:
    ran = {PLAN_MIME: {"steps": ["Load", "Plot"], "decision": "approved", "mode": "agent", "edited": False}}
    messages = [
        _call("p1", "propose_plan", steps=["Load", "Plot"]),
        _result("p1", "propose_plan", **ran),
        _call("s1", "plan_step", step=1, status="done", note="loaded"),
        _result("s1", "plan_step"),
        _call("s2", "plan_step", step=2, status="done"),
        _result("s2", "plan_step", error="RuntimeError: no plan is running in this turn"),  # not a tick
        _call("p2", "propose_plan", steps=["Drop it all"]),
        _result("p2", "propose_plan", error="Interrupted by the user."),  # Stop while the card waited
        _call("p3", "propose_plan", steps=["  Never   answered "]),  # (no result: still waiting)
    ]
    bundle = transcript_bundle(messages, question="Plot it.", status="interrupted")
    plans = [e for e in bundle[TRANSCRIPT_MIME]["entries"] if e["role"] == "plan"]
    assert [(p["id"], p["status"], p["decision"]) for p in plans] == [
        ("p1", ["done", None], "approved"),
        ("p2", [None], "cancelled"),
        ("p3", [None], None),
    ]
    assert plans[0]["notes"] == ["loaded", ""] and plans[2]["steps"] == ["Never answered"]
    lines = [line for line in bundle["text/plain"].splitlines() if line.startswith("[plan]")]
    assert lines == [
        "[plan] ▶ Running the plan in Agent: ✓ Load · ☐ Plot",
        "[plan] ■ Withdrawn: the turn was stopped: ☐ Drop it all",
        "[plan] Waiting for the user: ☐ Never answered",
    ]
    entries = bundle[TRANSCRIPT_MIME]["entries"]
    assert [e["role"] for e in entries[1:3]] == ["tool", "plan"]  # the call's card, then its plan's
