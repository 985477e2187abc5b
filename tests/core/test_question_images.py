"""A question's images reach the model as image parts of the user message, in both wire formats,
are saved with the question, and are refused with a clear line for a model without vision."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentik_jupyter.core.compaction import transcript_text
from agentik_jupyter.core.session import Session
from agentik_jupyter.core.transport import InProcessTransport
from agentik_jupyter.persistence import AsyncSessionDB
from agentik_jupyter.persistence.budget import IMAGE_TOKENS, message_tokens
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.testing.pytest_plugin import PROVIDERS
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.tools.vision import MAX_BYTES, MAX_SIDE_PX, fit_image
from agentik_jupyter.types import ChatMessage, ImagePart, Question
from tests.image_support import png_base64, png_size

both_formats = pytest.mark.parametrize("llm_provider", PROVIDERS)


def chart() -> ImagePart:
    part = fit_image(png_base64(1600, 900))  # as the panel fits a picked file
    assert part is not None
    return part


@both_formats
async def test_an_attached_image_reaches_the_model_and_the_sessions_file(
    fake_llm: FakeLLMServer, llm_env: dict[str, str], tmp_path: Path
) -> None:
    fake_llm.push(Reply.text("A red box."), Reply.text("Still a red box."))
    image = chart()
    assert max(png_size(image.data)) <= MAX_SIDE_PX and len(image.data) * 3 // 4 <= MAX_BYTES
    db = await AsyncSessionDB.open(tmp_path / "s.agentik.db")
    session = Session(InProcessTransport(), ToolRegistry(), db=db)
    outcome = await session.start_turn("What is in this chart?", images=[image])
    assert outcome.reason == "complete"
    (first,) = fake_llm.requests
    assert first.user_images() == [(image.mime, image.data)]
    assert first.last_user_text().strip() == "What is in this chart?"
    await session.send("And now?")  # the history keeps the image: the model can refer back to it
    history = str(fake_llm.requests[1].messages)
    assert history.count(image.data) == 1 and fake_llm.requests[1].user_images() == []
    await db.aclose()

    db = await AsyncSessionDB.open(tmp_path / "s.agentik.db")  # a new kernel resumes it
    resumed = Session(InProcessTransport(), ToolRegistry(), db=db)
    await resumed.resume()
    asked = [m for m in resumed.chat_store.messages if m.role == "user"]
    assert [m.content for m in asked] == ["What is in this chart?", "And now?"]
    assert asked[0].images == [image] and not asked[1].images
    await db.aclose()


@both_formats
async def test_a_model_without_vision_gets_no_image_and_the_user_is_told(
    fake_llm: FakeLLMServer, llm_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_VISION", "0")
    fake_llm.push(Reply.text("I cannot see images."))
    session = Session(InProcessTransport(), ToolRegistry(), temporary=True)
    outcome = await session.start_turn("What is in this chart?", images=[chart()])
    assert outcome.reason == "complete"
    (request,) = fake_llm.requests
    assert request.user_images() == [] and "image" not in str(request.messages).replace("image(s)", "")
    assert "not sent because this model has no vision (LLM_VISION=0)" in request.last_user_text()
    notices = [m.notice for m in session.chat_store.messages if m.notice]
    assert notices == [
        "1 image(s) not sent: this model has no vision (LLM_VISION=0). The question was sent without them."
    ]
    (user,) = [m for m in session.chat_store.messages if m.role == "user"]
    assert not user.images and user.content.startswith("What is in this chart?")


@both_formats
async def test_an_expander_brings_images_and_the_count_is_bounded(
    fake_llm: FakeLLMServer, llm_env: dict[str, str]
) -> None:
    fake_llm.push(Reply.text("Five charts."))
    session = Session(InProcessTransport(), ToolRegistry(), temporary=True)

    async def expander(text: str) -> Question:  # as `@out[n]` mentions do
        return Question(text=text + "\n\nAttached by @out mention: 3 images", images=[chart()] * 3)

    session.expander = expander
    await session.start_turn("Compare @out[1] with this", images=[chart()] * 2)
    (request,) = fake_llm.requests
    assert len(request.user_images()) == 4  # at most MAX_QUESTION_IMAGES
    notices = [m.notice for m in session.chat_store.messages if m.notice]
    assert notices == ["1 image(s) not sent: a question carries at most 4."]


def test_a_questions_images_count_in_the_budget_and_the_summary_names_them() -> None:
    plain = ChatMessage(role="user", content="What is in this chart?")
    with_image = plain.model_copy(update={"images": [chart()]})
    added = message_tokens(with_image) - message_tokens(plain)
    assert IMAGE_TOKENS <= added <= IMAGE_TOKENS + 1  # billed by pixels, not by the base64's length
    assert transcript_text([with_image]) == "User: What is in this chart? [1 image(s) attached]"
