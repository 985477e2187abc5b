"""Typed provider errors. Each carries a short message a user can act on.

Messages are built from the provider's error body and our own words; every URL in a
message is shown without its userinfo and query values (`security.urls`), and the API key
and other secrets are scrubbed from it (`security.scrub`) before an error is raised.
"""

from __future__ import annotations

from typing import Any

from agentik_jupyter.security.scrub import scrub  # also re-exported: callers that import it from here use the one scrubber
from agentik_jupyter.security.urls import redact_urls


class AgentikError(Exception):
    """Base of every error the agent reports to the user."""

    code: str = "error"

    def __init__(self, message: str) -> None:
        self.message = scrub(redact_urls(message))
        super().__init__(self.message)


class ConfigurationError(AgentikError):
    """A required LLM_* variable is missing or has an unknown value."""

    code = "configuration"


class ProviderError(AgentikError):
    """The provider or the network failed; `status` is the HTTP status if there was one."""

    code = "provider"
    partial: Any = None
    """What had been assembled before a stream failed (a ProviderChatResponse), if anything."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        in_stream: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.in_stream = in_stream
        self.retry_after = retry_after


class AuthenticationError(ProviderError):
    code = "authentication"


class PermissionDeniedError(ProviderError):
    code = "permission_denied"


class RateLimitError(ProviderError):
    code = "rate_limit"


class BadRequestError(ProviderError):
    code = "bad_request"


class NotFoundError(ProviderError):
    code = "not_found"


class ServerError(ProviderError):
    code = "server"


class ProviderTimeoutError(ProviderError):
    code = "timeout"


class ProviderConnectionError(ProviderError):
    code = "connection"


class MalformedResponseError(ProviderError):
    code = "malformed_response"


class RedirectError(ProviderError):
    """The provider answered 3xx: requests carry the key, so they never follow a redirect."""

    code = "redirect"


class StreamError(ProviderError):
    """An error event inside a 200 stream, or a stream that broke midway."""

    code = "stream"
