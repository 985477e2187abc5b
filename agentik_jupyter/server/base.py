"""What every /agentik/api/* handler shares: the resource Jupyter's Authorizer is asked about,
and a log whose lines carry no secret.

`@authorized` (jupyter_server.auth.decorator) asks the server's Authorizer (JupyterHub RBAC,
or a custom class) whether the user may read/write the resource "agentik", so a logged-in
user without that permission gets 403 before a key is spent or a sessions file is read.

Our handlers log to a child of the server's logger that masks secrets (`scrubbed_logger`):
their own lines, the access log line Jupyter writes for each request (its URI, query and
`Referer`), its "wrote error" line and tornado's uncaught-exception report all pass it.
"""

from __future__ import annotations

import logging
from types import TracebackType

import tornado.web
from jupyter_server.base.handlers import APIHandler

from agentik_jupyter.security.scrub import scrubbed_logger
from agentik_jupyter.server.sse import EVENT_STREAM

AUTH_RESOURCE = "agentik"


class AgentikHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def log(self) -> logging.Logger:
        return scrubbed_logger(super().log)

    def log_exception(
        self, typ: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Tornado reports errors to its own loggers; ours go through the masked log."""
        if isinstance(value, tornado.web.HTTPError):
            message = value.get_message()
            if message:
                self.log.warning("%d %s: %s", value.status_code, self._request_summary(), message)
            return
        self.log.error("Uncaught exception %s\n%r", self._request_summary(), self.request, exc_info=(typ, value, tb))  # type: ignore[arg-type]

    def start_event_stream(self) -> None:
        self.set_header("Content-Type", EVENT_STREAM)
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # proxies (nginx) must not buffer events
