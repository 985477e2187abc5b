"""`@name` mentions attach the variable's description to the question the model gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentik_jupyter.notebook.mentions import HEADER, MAX_MENTIONS, attach_mentions, mentioned_names
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import NotebookKernel, kernel_env, transcript, user_texts


def test_mentions_are_user_variables_only_and_emails_are_not_mentions() -> None:
    known = {"sales", "model"}.__contains__
    text = "Compare @sales.price with @model and @sales again; mail bob@example.com, not @nothing"
    assert mentioned_names(text, known) == ["sales.price", "model", "sales"]


async def test_attachments_stay_within_budget_and_failures_are_reported() -> None:
    async def describe(name: str) -> str:
        if name == "bad":
            raise PermissionError("private attributes are not inspected")
        return "x" * 50_000

    names = ["bad"] + [f"v{i}" for i in range(MAX_MENTIONS + 2)]
    text = await attach_mentions("question", names, describe)
    assert text.startswith("question\n\n" + HEADER)
    assert "### @bad\ncould not be read: private attributes are not inspected" in text
    assert len(text) < 8_000 and "more mention(s) not attached" in text


@pytest.mark.timeout(120)
def test_a_mentioned_frame_reaches_the_model_with_its_profile(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        llm.push(Reply.text("Two prices are missing."))
        kernel = NotebookKernel(kernel_env(llm), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(
                "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's', 'e'], 'price': [1.5, None, None]})"
            )
            cell = kernel.run("%%agent --wait\nWhy are prices missing in @sales? Write to bob@example.com")
        finally:
            kernel.close()
        (request,) = llm.requests
    (question,) = user_texts(request)
    assert question.startswith("Why are prices missing in @sales? Write to bob@example.com")
    assert HEADER in question and "### @sales" in question
    assert "price" in question and "region" in question and "3 rows" in question
    assert "@example" not in question.split(HEADER, 1)[1]
    shown = transcript(cell.outputs)["text/plain"]  # the cell shows the question as typed, and the answer
    assert "Two prices are missing." in shown and HEADER not in shown


async def test_every_turn_of_a_session_expands_mentions_panel_sends_included() -> None:
    from agentik_jupyter.core.session import Session
    from agentik_jupyter.testing.scripted import ScriptedTransport, Step
    from agentik_jupyter.tools.registry import ToolRegistry

    transport = ScriptedTransport([Step.say("Seen.")])
    session = Session(transport, ToolRegistry(), temporary=True)

    async def expander(question: str) -> str:
        return question + "\n\n" + HEADER + "\n\n### @sales\n3 rows"

    session.expander = expander  # what KernelAgent sets; the panel calls start_turn without `expand`
    await session.start_turn("How big is @sales?")
    (user,) = [m for m in session.chat_store.messages if m.role == "user"]
    assert user.content.endswith("### @sales\n3 rows")
