"""Public testing utilities: a fake LLM server speaking the real wire formats, and pytest fixtures.

See `fake_server` for the server and `pytest_plugin` for the `fake_llm` / `llm_env` fixtures.
"""

from .fake_server import FAULTS, FakeLLMServer, Fault, RecordedRequest, Reply, Responder, ToolCallReply, echo_responder
from .scripted import ScriptedTransport, SentRequest, Step

__all__ = ["FAULTS", "FakeLLMServer", "Fault", "RecordedRequest", "Reply", "Responder", "ToolCallReply", "echo_responder",
           "ScriptedTransport", "SentRequest", "Step"]
