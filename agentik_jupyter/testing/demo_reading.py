"""What the demo model reads from a request: the user's own question and what was done since.

A request is the whole conversation in a wire format (OpenAI chat completions or Anthropic
Messages). The demo is stateless, so it finds where it is from the request alone: the last
question the user typed (not a tool result, not the image follow-up a provider adds after
tool results), what was attached to it for the model (@mentions, a fix's details), and the
tool calls made since, with their results.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agentik_jupyter.core.orchestrator import DENIED as DENIED_PREFIX
from agentik_jupyter.core.prompt import NOTE_HEADING
from agentik_jupyter.notebook.attachments import shown_text
from agentik_jupyter.testing.demo_images import TOOL_IMAGES, SeenImage, seen_image
from agentik_jupyter.testing.replies import RecordedRequest

_VARIABLE = re.compile(r"^- (\w+): ([\w.]+)(?: (.*))?$", re.M)
DENIED = f"Error: {DENIED_PREFIX}"  # how a denied call reads in the tool result the model gets


@dataclass(frozen=True)
class Step:
    """One tool call since the question and what it answered."""

    name: str
    args: dict[str, Any]
    result: str
    images: int = 0

    @property
    def denied(self) -> bool:
        return self.result.startswith(DENIED)

    @property
    def failed(self) -> bool:
        return self.result.startswith("Error") and not self.denied


@dataclass
class Asked:
    """The question being answered, and everything the demo may use to answer it."""

    question: str
    attached: str
    steps: list[Step] = field(default_factory=list)
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    variables: list[tuple[str, str]] = field(default_factory=list)
    images: list[SeenImage] = field(default_factory=list)  # sent with the question

    @property
    def offered(self) -> set[str]:
        return set(self.tools)

    def frames(self) -> list[str]:
        return [name for name, kind in self.variables if kind.endswith(("DataFrame", "LazyFrame"))]

    def last(self, name: str | None = None) -> Step | None:
        for step in reversed(self.steps):
            if name is None or step.name == name:
                return step
        return None


def _system_text(request: RecordedRequest) -> str:
    body = request.body if isinstance(request.body, dict) else {}
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system if isinstance(b, dict))
    for message in request.messages:
        if message.get("role") == "system" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def _text_of(blocks: Any) -> str:
    if isinstance(blocks, str):
        return blocks
    if isinstance(blocks, list):
        return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _tools(request: RecordedRequest) -> dict[str, dict[str, Any]]:
    """Offered tools by name, with their JSON-schema parameters (both wire formats)."""
    body = request.body if isinstance(request.body, dict) else {}
    found: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        spec = nested if isinstance(nested := tool.get("function"), dict) else tool
        name = spec.get("name")
        if isinstance(name, str):
            found[name] = spec.get("parameters") or spec.get("input_schema") or {}
    return found


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def read_request(request: RecordedRequest) -> Asked:
    """The question (as typed, and what was attached), and the tool calls made since it."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    asked = Asked(question="", attached="", tools=_tools(request))
    known: dict[str, str] = {m.group(1): m.group(2) for m in _VARIABLE.finditer(_system_text(request))}

    def result(call_id: str, content: Any) -> None:
        name, args = calls.get(call_id, ("tool", {}))
        images = (
            [b for b in content if isinstance(b, dict) and b.get("type") == "image"]
            if isinstance(content, list)
            else []
        )
        asked.steps.append(Step(name, args, _text_of(content), len(images)))

    for message in request.messages:
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                calls[call.get("id", "")] = (function.get("name", ""), _args(function.get("arguments")))
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls[block.get("id", "")] = (block.get("name", ""), _args(block.get("input")))
        elif role == "tool":
            result(message.get("tool_call_id", ""), content)
        elif role == "user":
            blocks = content if isinstance(content, list) else []
            outcomes = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
            images = [b for b in blocks if isinstance(b, dict) and b.get("type") in ("image_url", "image")]
            for block in outcomes:
                result(block.get("tool_use_id", ""), block.get("content"))
            follow_up = images and TOOL_IMAGES.match(_text_of(blocks))
            if outcomes or follow_up:  # tool results, or the images that follow them: not a question
                if follow_up and asked.steps and not outcomes:
                    last = asked.steps[-1]
                    asked.steps[-1] = Step(last.name, last.args, last.result, last.images + len(images))
                continue
            texts = [content] if isinstance(content, str) else [_text_of([b]) for b in blocks]
            for note in (t.split("\n\n", 1)[0] for t in texts if t.startswith(NOTE_HEADING)):
                _read_note(note, known)
            text = "\n\n".join(_without_note(t) for t in texts if not t.startswith(NOTE_HEADING) or "\n\n" in t)
            text = text.strip()
            if text or images:
                asked.question = shown_text(text).strip()
                asked.attached = text[len(shown_text(text)) :].strip()
                asked.steps = []
                asked.images = [seen for seen in map(seen_image, images) if seen is not None]
    asked.variables = list(known.items())
    return asked


def _without_note(text: str) -> str:
    return text.split("\n\n", 1)[1] if text.startswith(NOTE_HEADING) else text


def _read_note(note: str, known: dict[str, str]) -> None:
    """The variables a question's context note lists (all, or what changed since the last question)."""
    deleted = re.search(r"^Deleted since the last question: (.*)$", note, re.M)
    if note.count("Variables in the kernel"):
        known.clear()
    for m in _VARIABLE.finditer(note):
        known[m.group(1)] = m.group(2)
    for name in deleted.group(1).split(", ") if deleted else []:
        known.pop(name.strip(" …"), None)
