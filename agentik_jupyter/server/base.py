"""What every /agentik/api/* handler shares: the resource Jupyter's Authorizer is asked about.

`@authorized` (jupyter_server.auth.decorator) asks the server's Authorizer (JupyterHub RBAC,
or a custom class) whether the user may read/write the resource "agentik", so a logged-in
user without that permission gets 403 before a key is spent or a sessions file is read.
"""

from __future__ import annotations

from jupyter_server.base.handlers import APIHandler

from .sse import EVENT_STREAM

AUTH_RESOURCE = "agentik"


class AgentikHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    def start_event_stream(self) -> None:
        self.set_header("Content-Type", EVENT_STREAM)
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # proxies (nginx) must not buffer events
