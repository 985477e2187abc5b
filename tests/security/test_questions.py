"""What the user types (or attaches with @mentions) passes the scrubber before it reaches the model."""

from __future__ import annotations

import pytest


async def test_a_key_pasted_into_a_question_or_attached_by_a_mention_never_reaches_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentik_jupyter.core.session import Session
    from agentik_jupyter.testing.scripted import ScriptedTransport, Step
    from agentik_jupyter.tools.registry import ToolRegistry

    key = "sk-agentik-PASTED-0123456789abcdef"
    monkeypatch.setenv("LLM_API_KEY", key)
    transport = ScriptedTransport([Step.say("Noted.")])
    session = Session(transport, ToolRegistry(), temporary=True)

    async def mention(question: str) -> str:  # an @mention of a variable that holds the key
        return question + f"\n\n### @creds\n{{'key': '{key}'}}"

    session.expander = mention
    await session.start_turn(f"Why does {key} fail?")
    sent = " ".join(m.content for m in transport.requests[0].messages)
    assert key not in sent and sent.count("[hidden: LLM_API_KEY]") == 2
