"""After a compaction or a rewind the next question's context note lists every variable again.

A note lists the kernel's variables in full only the first time, then what changed since the last
question. Once the turn whose note listed them is summarised or rewound, a note of changes alone
would leave the model with no idea what is in the kernel. A real kernel, the fake model over HTTP.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentik_jupyter.core.compaction import SUMMARY_HEADING
from agentik_jupyter.core.prompt import NOTE_HEADING
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.replies import RecordedRequest
from tests.kernel_support import NotebookKernel, kernel_env

pytestmark = pytest.mark.timeout(240)

SETUP = "import pandas as pd\nsales = pd.DataFrame({'units': [1, 2, 3]})\nthreshold = 7"
FULL = "Variables in the kernel:"
UNCHANGED = "Variables: unchanged since the last question"


def notes(request: RecordedRequest) -> list[str]:
    """The context notes of the request's user messages, oldest first (OpenAI wire: before the question)."""
    found = []
    for message in request.messages:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) and content.startswith(NOTE_HEADING):
            found.append(content.split("\n\n", 1)[0])
    return found


def lists_every_variable(note: str) -> bool:
    return FULL in note and "- sales: " in note and "- threshold: int" in note


def answer(request: RecordedRequest) -> Reply:
    text = request.last_user_text()
    if text.startswith(SUMMARY_HEADING):
        return Reply.text("- The user asked about sales.")
    return Reply.text(f"Answer to {text.split(':', 1)[0]}. " + "Details of the analysis. " * 60)


def kernel_for(llm: FakeLLMServer, tmp_path: Path, **env: str) -> NotebookKernel:
    kernel = NotebookKernel(kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "s.agentik.db"), **env), tmp_path)
    kernel.run("%load_ext agentik_jupyter")
    kernel.run(SETUP)
    return kernel


def test_after_agent_compact_the_next_note_lists_every_variable(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        llm.set_responder(answer)
        kernel = kernel_for(llm, tmp_path)
        try:
            kernel.run("%%agent --wait\nQ0: how big is sales?")
            assert lists_every_variable(notes(llm.requests[-1])[-1])
            kernel.run("%%agent --wait\nQ1: and its mean?")
            assert UNCHANGED in notes(llm.requests[-1])[-1]
            assert kernel.text("%agent compact").startswith("Compacted ")
            kernel.run("%%agent --wait\nQ2: what else?")
        finally:
            kernel.close()
    sent = llm.requests[-1]
    assert sent.last_user_text() == "Q2: what else?"
    assert lists_every_variable(notes(sent)[-1]), notes(sent)


def test_a_compaction_during_a_turn_gives_that_question_every_variable(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        llm.set_responder(answer)
        kernel = kernel_for(llm, tmp_path, AGENTIK_CONTEXT_TOKENS="5000")
        try:
            for i in range(8):
                kernel.run(f"%%agent --wait\nQ{i}: tell me about sales")
            kernel.run("%%agent --wait\nQ8: and now?")
        finally:
            kernel.close()
    asked = [r for r in llm.requests if not r.last_user_text().startswith(SUMMARY_HEADING)]
    summaries = [i for i, r in enumerate(llm.requests) if r.last_user_text().startswith(SUMMARY_HEADING)]
    assert summaries, "the small budget never compacted"
    after = llm.requests[summaries[0] + 1]  # the turn that compacted, sent with its summary
    assert lists_every_variable(notes(after)[-1]), notes(after)
    # the summariser read what the notes said was in the kernel
    assert "- sales: " in llm.requests[summaries[0]].last_user_text()
    # later turns keep the full note in their history (it was saved with the turn), however many compactions
    for request in asked[1:]:
        assert any(lists_every_variable(note) for note in notes(request)), notes(request)


def test_after_a_rewind_the_next_note_lists_every_variable(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        llm.set_responder(answer)
        kernel = kernel_for(llm, tmp_path)
        try:
            kernel.run("%%agent --wait\nQ0: how big is sales?")
            kernel.run("%%agent --wait\nQ1: and its mean?")
            kernel.run("%%agent --wait\nQ2: and its max?")
            assert UNCHANGED in notes(llm.requests[-1])[-1]
            assert "back to before turn 2" in kernel.text("%agent rewind 2")
            kernel.run("%%agent --wait\nQ3: what else?")
        finally:
            kernel.close()
    sent = llm.requests[-1]
    assert sent.last_user_text() == "Q3: what else?"
    assert lists_every_variable(notes(sent)[-1]), notes(sent)
