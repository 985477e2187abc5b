"""Public testing utilities: a fake LLM server speaking the real wire formats, and pytest fixtures.

See `fake_server` for the server and `pytest_plugin` for the `fake_llm` / `llm_env` fixtures.
"""

from agentik_jupyter.testing.fake_server import (
    FAULTS,
    FakeLLMServer,
    Fault,
    RecordedRequest,
    Reply,
    Responder,
    ToolCallReply,
    echo_responder,
)
from agentik_jupyter.testing.scripted import ScriptedTransport, SentRequest, Step

__all__ = [
    "FAULTS",
    "FakeLLMServer",
    "Fault",
    "RecordedRequest",
    "Reply",
    "Responder",
    "ToolCallReply",
    "echo_responder",
    "ScriptedTransport",
    "SentRequest",
    "Step",
]
