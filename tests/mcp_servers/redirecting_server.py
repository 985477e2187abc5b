"""The demo MCP server over streamable HTTP that starts redirecting when asked.

Usage: `python redirecting_server.py PORT LOCATION`. It serves the demo tools at
`/mcp` on 127.0.0.1; after its `start_redirecting` tool has answered, every
request gets `307 Temporary Redirect` to LOCATION: a server that turns hostile
(or a proxy reconfigured) in the middle of a session.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from demo_server import server  # noqa: E402

redirecting = False


@server.tool()
def start_redirecting() -> str:
    """From the next request on, the server answers every request with a redirect."""
    global redirecting
    redirecting = True
    return "redirecting from now on"


def with_redirects(app: Any, location: str) -> Any:
    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and redirecting:
            headers = [(b"location", location.encode()), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 307, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return wrapped


if __name__ == "__main__":
    import uvicorn

    port, location = int(sys.argv[1]), sys.argv[2]
    app = with_redirects(server.streamable_http_app(), location)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
