"""`agentik-jupyter mcp`: the MCP endpoint for clients that start their servers as commands (stdio).

It finds the running Jupyter server as `jupyter server list` does (the newest one, or the one
serving `--root`), or takes `--url` and `--token`, then relays MCP messages between its stdin and
stdout and the server's `/agentik/mcp` (the official SDK's transports at both ends). The token
comes from Jupyter's runtime files or `--token` / `JUPYTER_TOKEN`; it is never printed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ENDPOINT = "agentik/mcp"
NO_SERVER = (
    "agentik-jupyter mcp: no running Jupyter server found; start JupyterLab (jupyter lab) first, or pass "
    "--url and --token."
)


def find_server(root: str | None = None) -> tuple[str, str] | None:
    """(base url, token) of a running Jupyter server: the newest one, or the one serving `root`."""
    from jupyter_server.serverapp import list_running_servers

    servers = list(list_running_servers())
    if root is not None:
        wanted = Path(root).resolve()
        servers = [s for s in servers if Path(str(s.get("root_dir") or "")).resolve() == wanted]
    if not servers:
        return None
    newest = servers[-1]
    return str(newest["url"]), str(newest.get("token") or "")


def endpoint_url(base: str) -> str:
    return base.rstrip("/") + "/" + ENDPOINT


async def relay(url: str, token: str) -> None:
    """Copy messages both ways until the client closes stdin (or the server goes)."""
    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server

    headers = {"Authorization": f"token {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=None)) as http,
        streamable_http_client(url, http_client=http) as (from_server, to_server),
        stdio_server() as (from_client, to_client),
        anyio.create_task_group() as group,
    ):

        async def pump(source: Any, sink: Any, last: bool) -> None:
            async for message in source:
                if isinstance(message, Exception):
                    print(f"agentik-jupyter mcp: {type(message).__name__}: {message}", file=sys.stderr)
                    continue
                await sink.send(message)
            if last:
                group.cancel_scope.cancel()

        group.start_soon(pump, from_client, to_server, True)  # stdin closed: the client is done
        group.start_soon(pump, from_server, to_client, True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentik-jupyter", description="agentik-jupyter's command line")
    commands = parser.add_subparsers(dest="command", required=True)
    mcp = commands.add_parser("mcp", help="relay an MCP client on stdio to the running Jupyter server")
    mcp.add_argument("--url", help="the Jupyter server's address (default: the running one, as jupyter server list)")
    mcp.add_argument("--token", help="its token (default: from Jupyter's runtime files, or JUPYTER_TOKEN)")
    mcp.add_argument("--root", help="with several servers running: the one serving this folder")
    args = parser.parse_args(argv)
    url, token = args.url, args.token or os.environ.get("JUPYTER_TOKEN", "")
    if url is None:
        found = find_server(args.root)
        if found is None:
            print(NO_SERVER, file=sys.stderr)
            return 2
        url, token = found[0], args.token or found[1] or token
    import anyio

    try:
        anyio.run(relay, endpoint_url(url), token)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        print(f"agentik-jupyter mcp: could not reach {endpoint_url(url)}: {type(exc).__name__}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
