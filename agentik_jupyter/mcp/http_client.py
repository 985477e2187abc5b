"""The HTTP client an MCP server's streamable-HTTP transport uses: it never follows a redirect.

An HTTP server's `headers` in `mcp.json` often carry a secret (`Bearer ${LLM_API_KEY}`).
The MCP SDK follows a redirect that stays on the endpoint's origin, but an origin is not a
service (a reverse proxy routes `/mcp` and `/other` to different programs), and the client's
own `follow_redirects=False` is not consulted by the SDK. So every response passes a hook
that turns any 3xx into `MCPRedirectError` before the SDK sees it: the request with the
headers went only to the configured URL, and the error names the status and the target host,
never its path, query or userinfo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentik_jupyter.errors import MCPRedirectError

if TYPE_CHECKING:
    import httpx2

    from agentik_jupyter.mcp.config import HttpServerConfig

CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 300.0


def redirect_target(response: httpx2.Response) -> str:
    """`scheme://host:port` the response points to (never its path, query or userinfo)."""
    location = response.headers.get("location")
    if not location:
        return "no Location given"
    try:
        target = response.request.url.join(location)
    except Exception:
        return "an unreadable address"
    port = f":{target.port}" if target.port else ""
    return f"{target.scheme}://{target.host}{port}"


async def refuse_redirects(response: httpx2.Response) -> None:
    """A response hook: any 3xx ends the request with `MCPRedirectError`."""
    if 300 <= response.status_code < 400:
        await response.aclose()
        raise MCPRedirectError(response.status_code, redirect_target(response))


def make_http_client(config: HttpServerConfig) -> httpx2.AsyncClient:
    """The client for one HTTP server: its headers, no redirects, bounded waits."""
    import httpx2

    return httpx2.AsyncClient(
        headers=config.headers,
        timeout=httpx2.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT),
        follow_redirects=False,
        event_hooks={"response": [refuse_redirects]},
    )
