"""How much history the model is sent: a token budget per model, spent on whole turns.

Tokens are estimated, not counted: a provider-exact tokenizer would be a dependency per
provider, and the budget is a safety margin, not a bill. The estimate is ``chars / 4`` of what
is sent (`wire_text`: a message as it goes on the wire, with its context note, each tool result
once and no HTML display), not of the stored record, which holds each tool result twice and its
HTML and ran about twice the real size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentik_jupyter.types import ChatMessage

TokenEstimator = Callable[[str], int]

CONTEXT_TOKENS_ENV = "AGENTIK_CONTEXT_TOKENS"
UNKNOWN_MODEL_BUDGET = 16_000
MAX_DEFAULT_BUDGET = 100_000

# Context windows by a substring of the model name, first match wins (so specific names
# come before their families). History gets half the window: the rest is for the system
# prompt, tool schemas, tool results of the running turn and the answer itself.
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude", 200_000),
    ("gpt-4.1", 1_000_000),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-3.5", 16_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gemini", 1_000_000),
    ("deepseek", 128_000),
    ("llama3.1", 128_000),
    ("llama-3.1", 128_000),
    ("llama3.2", 128_000),
    ("llama-3.3", 128_000),
    ("llama3.3", 128_000),
    ("qwen", 32_000),
    ("mistral", 32_000),
    ("mixtral", 32_000),
    ("gpt-oss", 128_000),
    ("gemma3", 128_000),
    ("command-r", 128_000),
    ("grok", 128_000),
    ("kimi", 128_000),
    ("glm-4", 128_000),
)


IMAGE_TOKENS = 1_000
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{512,}={0,2}")


def estimate_tokens(text: str) -> int:
    """≈ chars / 4, rounded up; an embedded image (a long base64 run) counts IMAGE_TOKENS, since
    models bill images by pixels (tools/vision.py keeps them small), not by their base64 length."""
    images = 0
    if len(text) > 512:
        text, images = _BASE64_RUN.subn("", text)
    return (len(text) + 3) // 4 + images * IMAGE_TOKENS


def result_wire_text(message: ChatMessage) -> str:
    """A tool message's text as a provider receives it (errors prefixed, other values as JSON)."""
    result = message.tool_result
    if result is None:
        return message.content
    if result.error is not None:
        return f"Error: {result.error}"
    if result.result is None or isinstance(result.result, str):
        return result.result or ""
    try:
        return json.dumps(result.result, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(result.result)


def wire_text(message: ChatMessage) -> str:
    """The message about as a provider receives it (Chat Completions JSON): the question with its
    context note, the calls' arguments, a tool result's text once. Images are appended as their
    base64, which `estimate_tokens` counts as IMAGE_TOKENS each."""
    wire: dict[str, Any] = {"role": message.role}
    if message.role == "user":
        wire["content"] = f"{message.context_note}\n\n{message.content}" if message.context_note else message.content
    elif message.role == "tool":
        wire["tool_call_id"] = message.tool_result.tool_call_id if message.tool_result else ""
        wire["content"] = result_wire_text(message)
    else:
        wire["content"] = message.content or None
        if message.tool_calls:
            wire["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.args, ensure_ascii=False, default=str)},
                }
                for c in message.tool_calls
            ]
        if message.provider_blocks and message.reasoning:  # signed thinking goes back to Anthropic
            wire["reasoning"] = message.reasoning
    text = json.dumps(wire, ensure_ascii=False, default=str)
    images = message.tool_result.images if message.tool_result is not None else message.images
    return text + "".join(" " + image.data for image in images or [])


def message_tokens(message: ChatMessage, estimator: TokenEstimator | None = None) -> int:
    """Tokens the message costs in a request."""
    return (estimator or estimate_tokens)(wire_text(message))


class CachedEstimate:
    """An estimator that remembers its answers: history is estimated again before every
    request, and its stored payloads (a turn's JSON) do not change. At most `size` kept."""

    def __init__(self, estimator: TokenEstimator, size: int = 4_096) -> None:
        self.estimator = estimator
        self.size = size
        self._known: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        tokens = self._known.get(text)
        if tokens is None:
            if len(self._known) >= self.size:
                self._known.clear()
            tokens = self._known[text] = self.estimator(text)
        return tokens


def context_window(model: str | None) -> int | None:
    """The model's context window if we know its family, else None."""
    name = (model or "").lower()
    for needle, window in _CONTEXT_WINDOWS:
        if needle in name:
            return window
    return None


def context_budget(model: str | None, environ: Mapping[str, str]) -> int:
    """Tokens of working memory to send to ``model``; ``AGENTIK_CONTEXT_TOKENS`` overrides.

    Known families get half their window (at most 100k, to keep turns fast and cheap);
    unknown models (often local servers with small windows) get 16k.
    """
    raw = environ.get(CONTEXT_TOKENS_ENV, "").strip()
    if raw:
        try:
            value = int(raw.replace("_", ""))
        except ValueError:
            value = 0
        if value <= 0:
            raise ValueError(f"{CONTEXT_TOKENS_ENV} must be a positive integer (tokens), got {raw!r}")
        return value
    window = context_window(model)
    if window is None:
        return UNKNOWN_MODEL_BUDGET
    return min(window // 2, MAX_DEFAULT_BUDGET)


def first_turn_to_keep(turn_costs: Sequence[int], budget: int | None) -> int:
    """Index of the oldest turn to send: the newest turns that fit, and always the latest one.

    Turns are kept contiguous from the newest backwards; one turn too big to fit ends the
    run, so the model never sees a history with a hole in it.
    """
    if budget is None or not turn_costs:
        return 0
    start = len(turn_costs) - 1
    total = turn_costs[start]
    while start > 0 and total + turn_costs[start - 1] <= budget:
        start -= 1
        total += turn_costs[start]
    return start
