"""Which images a question may send: all of them within the count, or none for a model without vision.

The images come fitted to the budget (tools/vision.py: pasted or attached in the panel,
an `@out[n]` figure); this is the one place that decides whether they go to the model. With
`LLM_VISION=0` none is sent: the model reads a line saying so, and the user a notice in the turn.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentik_jupyter.tools.vision import MAX_IMAGES_PER_RESULT, VISION_ENV, vision_enabled
from agentik_jupyter.types import ImagePart, Question

MAX_QUESTION_IMAGES = MAX_IMAGES_PER_RESULT
NO_VISION_NOTICE = "{n} image(s) not sent: this model has no vision ({env}=0). The question was sent without them."
TOO_MANY_NOTICE = "{n} image(s) not sent: a question carries at most {limit}."
NO_VISION_NOTE = (
    "\n\nAttached by the user: {n} image(s), not sent because this model has no vision ({env}=0). "
    "Say so if the question needs them."
)


def merged(asked: Question, expanded: str | Question) -> Question:
    """The question asked (with the images attached to it) after an expander's work."""
    if isinstance(expanded, str):
        return asked.model_copy(update={"text": expanded})
    return Question(text=expanded.text, images=[*asked.images, *expanded.images], withheld=expanded.withheld)


def admit_images(
    question: Question, environ: Mapping[str, str] | None = None
) -> tuple[str, list[ImagePart], str | None]:
    """(the text the model gets, the images it gets, a notice for the user or None). The question's
    `withheld` images were left out already (an `@out[n]` figure, described in the text instead)."""
    text, images, withheld = question.text, question.images, question.withheld
    if not vision_enabled(environ):
        if not images and not withheld:
            return text, [], None
        notice = NO_VISION_NOTICE.format(n=len(images) + withheld, env=VISION_ENV)
        return (text + NO_VISION_NOTE.format(n=len(images), env=VISION_ENV) if images else text), [], notice
    if not images:
        return text, [], None
    if len(images) > MAX_QUESTION_IMAGES:
        extra = len(images) - MAX_QUESTION_IMAGES
        return text, images[:MAX_QUESTION_IMAGES], TOO_MANY_NOTICE.format(n=extra, limit=MAX_QUESTION_IMAGES)
    return text, images, None
