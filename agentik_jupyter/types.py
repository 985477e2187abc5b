"""The single source of truth for the data that flows through the agent.

Stores, orchestrator, registry, providers, persistence and the server all import
their shapes from here, so a field renamed here is renamed everywhere.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ExecutionState = Literal["idle", "sending", "processing", "responding", "error"]
ParameterType = Literal["string", "integer", "number", "boolean", "array", "object"]
ApprovalPolicy = Literal["auto", "ask", "deny"]
DEFAULT_POLICY: ApprovalPolicy = "ask"
AgentMode = Literal["ask", "agent", "auto", "plan"]
"""How much the agent may do without asking: a session's setting (tools/modes.py)."""
"""The policy of a tool that names none: it may have side effects the user never saw, so it asks
before each run. Built-in and MCP definitions state theirs (the registry's, mcp/tools.py)."""
Role = Literal["user", "assistant", "tool"]


def new_id(prefix: str = "") -> str:
    """A short random id; the prefix tells a reader of the DB what it names."""
    return f"{prefix}{uuid.uuid4().hex[:16]}"


def now() -> float:
    return time.time()


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Model):
    """A call the model asked for; `args` are already parsed from JSON."""

    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ImagePart(_Model):
    """An image the model sees (a plot, or one attached to a question), already fitted to the budget
    by tools/vision.py; base64 data."""

    mime: str
    data: str
    width: int | None = None
    height: int | None = None


class ToolResult(_Model):
    """What a tool returned (or why it did not run).

    `result` is what the model is sent; `display` is an optional MIME bundle for
    the tool card (an HTML table, an image) that the model never sees.
    """

    tool_call_id: str
    name: str
    result: Any = None
    error: str | None = None
    display: dict[str, Any] | None = None
    duration_ms: float | None = None
    images: list[ImagePart] | None = None


class ChatMessage(_Model):
    """One message of the conversation as the model sees it.

    A `tool` message carries the ToolResult that answers one of the previous
    assistant message's tool calls. An assistant message with `error` set stands
    for a failed turn in a resumed transcript; it is never sent to the model. One with
    `notice` set is something the user should know that is no failure (the session was
    deleted, the turn starts a new one); never sent to the model either.
    """

    id: str = Field(default_factory=lambda: new_id("msg_"))
    role: Role
    content: str = ""
    context_note: str | None = None
    """A user message's notebook context when it was asked (cell, variables, changes): sent to the
    model before the question, never shown as the question. It rides with the question, after the
    history, so the system prompt and the history stay a prefix the provider can cache."""
    images: list[ImagePart] | None = None
    """A user message's images (pasted, attached or `@out[n]`), sent after its text as image parts."""
    tool_calls: list[ToolCall] | None = None
    tool_result: ToolResult | None = None
    reasoning: str | None = None
    provider_blocks: list[dict[str, Any]] | None = None
    error: str | None = None
    summary_of: list[str] | None = None
    """A compaction summary: the ids of the messages it stands for in working memory (the audit log keeps them)."""
    notice: str | None = None
    timestamp: float = Field(default_factory=now)


class Question(_Model):
    """A question as the model gets it, from an expander: the text with its attached sections, and
    the images attached to it (an `@out[n]` figure), already fitted to the budget."""

    text: str
    images: list[ImagePart] = Field(default_factory=list)
    withheld: int = 0
    """Images found for the question but not sent (a model without vision): the user is told."""


class VariableSummary(_Model):
    name: str
    type: str
    shape: str | None = None


class AgentContext(_Model):
    """Where in the notebook the question was asked and what data is loaded."""

    notebook_path: str | None = None
    cell_id: str | None = None
    variables: list[VariableSummary] = Field(default_factory=list)
    execution_count: int | None = None
    instructions: str | None = None
    session_key: str | None = None
    """A stable key per session, for providers that route requests to a warm prompt cache."""
    mode: AgentMode | None = None
    """The turn's mode, which the system prompt explains (None: Agent, today's behaviour)."""


class ToolParameter(_Model):
    key: str
    type: ParameterType
    required: bool = True
    description: str = ""
    enum: list[Any] | None = None
    json_schema: dict[str, Any] | None = None


class ToolSchema(_Model):
    """The provider-agnostic form of a tool that adapters convert to their wire format."""

    name: str
    description: str = ""
    parameters: list[ToolParameter] = Field(default_factory=list)


class ToolOutput(_Model):
    """A tool's answer with two faces: bounded text for the model, rich MIME for the card."""

    text: str
    display: dict[str, Any] | None = None
    images: list[ImagePart] | None = None


ToolFunction = Callable[..., Any | Awaitable[Any]]


class ToolDefinition(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    description: str = ""
    parameters: list[ToolParameter] = Field(default_factory=list)
    execute: ToolFunction = Field(exclude=True)
    policy: ApprovalPolicy = DEFAULT_POLICY
    source: str = "user"
    origin: str | None = Field(default=None, exclude=True)
    thread: bool = Field(default=False, exclude=True)  # a sync tool that runs in a worker thread
    quick: bool = Field(default=False, exclude=True)  # returns in milliseconds: reads no object's data
    read_only: bool = Field(default=False, exclude=True)  # an MCP tool whose server declares readOnlyHint

    def schema_(self) -> ToolSchema:
        return ToolSchema(name=self.name, description=self.description, parameters=self.parameters)


class Usage(_Model):
    """Tokens of one or more model calls. `input_tokens` counts every input token, those served
    from the provider's prompt cache (`cached_tokens`) and written to it (`cache_write_tokens`)
    included, whatever the wire format (Anthropic reports the three apart; we add them up)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


def add_usage(total: Usage, part: Usage) -> Usage:
    """Two counts added field by field; a field neither reported stays None."""

    def plus(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    return Usage(
        input_tokens=plus(total.input_tokens, part.input_tokens),
        output_tokens=plus(total.output_tokens, part.output_tokens),
        cached_tokens=plus(total.cached_tokens, part.cached_tokens),
        cache_write_tokens=plus(total.cache_write_tokens, part.cache_write_tokens),
    )


# ---- Events: what the orchestrator emits for the UI and for persistence ----


class StartReasoning(_Model):
    type: Literal["start_reasoning"] = "start_reasoning"


class StartResponse(_Model):
    type: Literal["start_response"] = "start_response"
    iteration: int = 0


class AppendText(_Model):
    type: Literal["append_text"] = "append_text"
    text: str
    reasoning: bool = False


class ToolCallEvent(_Model):
    type: Literal["tool_call"] = "tool_call"
    call: ToolCall


class ToolResultEvent(_Model):
    type: Literal["tool_result"] = "tool_result"
    result: ToolResult


class ErrorEvent(_Model):
    type: Literal["error"] = "error"
    message: str
    code: str | None = None


EndReason = Literal["complete", "max_iterations", "interrupted", "error"]


class End(_Model):
    type: Literal["end"] = "end"
    reason: EndReason = "complete"
    usage: Usage | None = None


Event = Annotated[
    StartReasoning | StartResponse | AppendText | ToolCallEvent | ToolResultEvent | ErrorEvent | End,
    Field(discriminator="type"),
]

# ---- Persisted messages: rows of the audit log ----


class UserMessage(_Model):
    kind: Literal["user"] = "user"
    id: str = Field(default_factory=lambda: new_id("msg_"))
    content: str
    context: AgentContext | None = None
    context_note: str | None = None
    images: list[ImagePart] | None = None
    timestamp: float = Field(default_factory=now)

    def chat_message(self) -> ChatMessage:
        """The question as the model is sent it (working memory, the live transcript): same id."""
        return ChatMessage(
            id=self.id,
            role="user",
            content=self.content,
            context_note=self.context_note,
            images=self.images,
            timestamp=self.timestamp,
        )


class AssistantMessage(_Model):
    kind: Literal["assistant"] = "assistant"
    id: str = Field(default_factory=lambda: new_id("msg_"))
    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] | None = None
    provider_blocks: list[dict[str, Any]] | None = None
    usage: Usage | None = None
    timestamp: float = Field(default_factory=now)


class ToolCallRecord(_Model):
    kind: Literal["tool_call"] = "tool_call"
    id: str = Field(default_factory=lambda: new_id("msg_"))
    call: ToolCall
    timestamp: float = Field(default_factory=now)


class ToolResultRecord(_Model):
    kind: Literal["tool_result"] = "tool_result"
    id: str = Field(default_factory=lambda: new_id("msg_"))
    result: ToolResult
    timestamp: float = Field(default_factory=now)


class ErrorRecord(_Model):
    kind: Literal["error"] = "error"
    id: str = Field(default_factory=lambda: new_id("msg_"))
    message: str
    code: str | None = None
    timestamp: float = Field(default_factory=now)


PersistedMessage = Annotated[
    UserMessage | AssistantMessage | ToolCallRecord | ToolResultRecord | ErrorRecord,
    Field(discriminator="kind"),
]

# ---- The chat route's request and response bodies ----


class ChatRequest(_Model):
    messages: list[ChatMessage] = Field(min_length=1)
    context: AgentContext | None = None
    model: str | None = None
    tools: list[ToolSchema] | None = None


class ChatResponseBody(BaseModel):
    content: str
    toolCalls: list[ToolCall] | None = None
