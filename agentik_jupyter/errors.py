"""Every error agentik reports to a user, in one tree.

Each carries a `message` a notebook user can act on and a short `code`. Where a builtin
family fits, the error is also one of them, so `except ValueError` and the like keep working.

AgentikError
├── ConfigurationError ............ a required LLM_* variable is missing or has an unknown value
├── ProviderError ................. the provider or the network failed (`status`, `partial`)
│   ├── AuthenticationError         401
│   ├── PermissionDeniedError       403
│   ├── RateLimitError              429 (`retry_after`)
│   ├── BadRequestError             400 / 422
│   ├── NotFoundError               404: the model or the URL
│   ├── ServerError                 5xx
│   ├── ProviderTimeoutError
│   ├── ProviderConnectionError
│   ├── MalformedResponseError
│   ├── RedirectError               3xx: never followed, requests carry the key
│   └── StreamError                 an error event in a 200 stream, or a stream broken midway
├── SessionDBError ................ the sessions file refused or failed
│   ├── NotASessionDBError          not an SQLite file: left untouched
│   │   └── SymlinkedFileError      a symbolic link: never followed
│   ├── SchemaVersionError          written by a newer agentik_jupyter
│   ├── DatabaseBusyError
│   ├── ConversationNotFoundError   (also LookupError) no session with that id
│   ├── TurnNotFoundError           (also LookupError)
│   ├── TurnStateError
│   ├── TemporaryConversationError
│   └── WorkingMemoryError          (also ValueError) an unpaired tool call, …
├── InvalidSessionIdError ......... (also ValueError; in ids.py, beside the rule it checks)
├── OptionsError .................. (also ValueError) `%%agent` options
├── ChatRouteError ................ the HTTP status and JSON body the server route answers with
├── DuplicateToolError ............ (also ValueError) a second tool of one name without replace=True
├── CodeExecutionError ............ model-written code raised: a short traceback for the model
├── ReadTimeout ................... (also TimeoutError) reading a user object overran its budget
├── InspectionRefused ............. (also PermissionError) a path outside the user's data
├── NoFrontend .................... no page with our extension answered
├── NotebookReadError ............. the notebook could not be read
└── MCP servers
    ├── MCPConfigError              (also ValueError) mcp.json cannot be used
    ├── MCPNotInstalledError        (also ImportError; in mcp/connection.py) the `mcp` extra is missing
    ├── MCPServerError              (also RuntimeError) not running, crashed, timed out
    ├── MCPToolError                (also RuntimeError) the tool answered isError
    └── MCPRedirectError            (also RuntimeError) an MCP HTTP server answered 3xx

ConfigurationError and ProviderError mask the key and URL credentials in their message when
they are made (their messages quote provider bodies and URLs); the others hold what agentik wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentik_jupyter.security.scrub import scrub, scrub_value
from agentik_jupyter.security.urls import redact_urls


class AgentikError(Exception):
    """Base of every error the agent reports to the user."""

    code: str = "error"

    def __init__(self, message: str = "", *args: object) -> None:
        self.message = message
        super().__init__(message, *args)


def _masked(message: str) -> str:
    """A message that may quote a provider's body or a URL, without the key or URL credentials."""
    return scrub(redact_urls(message))


class ConfigurationError(AgentikError):
    """A required LLM_* variable is missing or has an unknown value."""

    code = "configuration"

    def __init__(self, message: str) -> None:
        super().__init__(_masked(message))


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
        super().__init__(_masked(message))
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


class SessionDBError(AgentikError):
    """Base class: anything the session store refuses or cannot do."""


class NotASessionDBError(SessionDBError):
    """The file exists but is not an SQLite database; it is left untouched."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(
            f"{path} is not an agentik session database ({detail}); the file was left untouched. "
            "Move it away or point AGENTIK_DB_PATH elsewhere."
        )
        self.path = path


class SymlinkedFileError(NotASessionDBError):
    """The sessions file, or a -wal/-shm/-journal beside it, is a symbolic link: refused, never followed.

    SQLite follows links, so a shipped ``nb.agentik.db`` linking elsewhere (or nowhere yet) would
    have every turn written wherever it points. A NotASessionDBError, so callers treat it as a
    file they must leave alone (the server answers 409).
    """

    def __init__(self, path: Path, link: Path, target: str) -> None:
        where = "" if link == path else f" beside the sessions file {path}"
        SessionDBError.__init__(
            self,
            f"{link}{where} is a symbolic link (to {target}); agentik does not open sessions files through "
            "symbolic links, so nothing was written through it. Replace the link with the file itself, "
            "or point AGENTIK_DB_PATH at the real file.",
        )
        self.path = path
        self.link = link


class SchemaVersionError(SessionDBError):
    """The file was written by a newer agentik_jupyter; we refuse to touch it."""

    def __init__(self, path: Path, found: int, supported: int) -> None:
        super().__init__(
            f"{path} has session schema version {found}, but this agentik_jupyter only knows "
            f"versions up to {supported}. The file was left untouched; upgrade agentik_jupyter "
            "(pip install -U agentik_jupyter) to open it."
        )
        self.path = path
        self.found = found
        self.supported = supported


class DatabaseBusyError(SessionDBError):
    """Another process held the write lock for longer than we were willing to wait."""


class ConversationNotFoundError(SessionDBError, LookupError):
    """No conversation with that id in this file."""

    def __init__(self, conversation_id: str, path: Path) -> None:
        super().__init__(f"no session {conversation_id!r} in {path}")
        self.conversation_id = conversation_id


class TurnNotFoundError(SessionDBError, LookupError):
    """append/commit/fail named a turn that begin_turn never started."""

    def __init__(self, conversation_id: str, turn_id: str) -> None:
        super().__init__(f"turn {turn_id!r} was not begun in session {conversation_id!r}")
        self.conversation_id = conversation_id
        self.turn_id = turn_id


class TurnStateError(SessionDBError):
    """The turn cannot take this write (e.g. its working memory is already committed)."""


class TemporaryConversationError(SessionDBError):
    """Temporary sessions are never written; the caller should keep them in memory."""


class WorkingMemoryError(SessionDBError, ValueError):
    """A turn's working memory breaks an invariant the providers rely on (e.g. an unpaired tool call)."""


class OptionsError(AgentikError, ValueError):
    """The options of `%%agent` could not be parsed; the message says which and why."""


class ChatRouteError(AgentikError):
    """A failure with the HTTP status and JSON body the server route answers with."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        body = scrub_value(body)
        super().__init__(body.get("message") or body.get("error") or "")
        self.status = status
        self.body = body


class DuplicateToolError(AgentikError, ValueError):
    """A tool of that name is registered already; `replace=True` swaps it."""


class CodeExecutionError(AgentikError):
    """The user-level code raised; the message is a short traceback the model can act on."""


class ReadTimeout(AgentikError, TimeoutError):
    """Reading a user object took longer than its budget; the message names the object."""


class InspectionRefused(AgentikError, PermissionError):
    """The path leads outside the user's data; the message says why and what is allowed."""


class NoFrontend(AgentikError):
    """No extension answered: the notebook is not open in JupyterLab / Notebook 7 with agentik."""


class NotebookReadError(AgentikError):
    """The notebook could not be read; the message says which file and why."""


class MCPConfigError(AgentikError, ValueError):
    """The config file as a whole cannot be used (missing, not JSON, wrong shape)."""


class MCPServerError(AgentikError, RuntimeError):
    """The server could not answer: not running, crashed, timed out, or refused the call."""


class MCPToolError(AgentikError, RuntimeError):
    """The tool ran and reported an error (`isError`); its message goes to the model."""


class MCPRedirectError(AgentikError, RuntimeError):
    """An MCP HTTP server answered 3xx; the redirect was not followed."""

    def __init__(self, status: int, target: str) -> None:
        super().__init__(
            f"the server answered HTTP {status}, a redirect to {target}; redirects are not followed "
            "(the request carries this server's headers). If that address is the server, "
            "put it in mcp.json as its url."
        )
        self.status = status
        self.target = target
