"""The trust card: what a project `mcp.json` would run, and Trust / Don't trust.

It lists each server as written in the file: the command and arguments or the
URL, the folder it would run in, the names of the environment variables it would
read (never their values), every variable it sets with its value (a secret-named
literal masked, mcp/project.py), a warning for each one that changes how a program
starts or what it loads (LD_PRELOAD, NODE_OPTIONS…: security/trust.py), and the policy
it asks for. A click may arrive on another
thread (JupyterLab sends widget messages on a kernel subshell), so the buttons
hand the decision to the kernel's main loop (`kernel.mainloop`), as every widget does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ipywidgets import HTML, Button, HBox, Layout, VBox

from agentik_jupyter.core.mainloop import main_thread_callback, run_on_main
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.shared import ACCEPT_CLASSES, APPROVAL_CLASSES, PLAIN_CLASSES, button_style, layout

log = logging.getLogger(__name__)

Decide = Callable[[bool], Awaitable[str]]
"""`decide(trusted)` records the choice and returns the line the card shows afterwards."""


CODE = '<code style="white-space:pre-wrap;word-break:break-all">{}</code>'
WARN = "color:var(--jp-warn-color0,#b35900);font-weight:bold"


def _env_cell(server: Any) -> str:
    """One line per variable set, `NAME=value`, the warned ones marked ⚠."""
    if not server.env:
        return "none"
    warned = dict(server.warnings)
    lines = []
    for name, value in server.env:
        mark = f'<span style="{WARN}">⚠ </span>' if name in warned else ""
        lines.append(mark + CODE.format(escape(f"{name}={value}")))
    return "<br>".join(lines)


def _warnings(servers: list[Any]) -> str:
    """A list above the table: each variable that changes how a server starts, and why."""
    items = [
        f"<li>⚠ <b>{escape(server.name)}</b> sets <code>{escape(name)}</code>: {escape(why)}</li>"
        for server in servers
        for name, why in server.warnings
    ]
    if not items:
        return ""
    return (
        f'<div style="{WARN}">This file sets variables that change how its servers start:</div>'
        '<ul style="margin:2px 0">' + "".join(items) + "</ul>"
    )


def trust_html(path: str, servers: list[Any]) -> str:
    """The question, the warnings and one row per server, all escaped."""
    rows = []
    for server in servers:
        reads = ", ".join(f"${{{name}}}" for name in server.reads) or "none"
        policy = server.policy or "ask (default)"
        if policy == "auto":
            policy = "auto: its tools would run without asking"
        cwd = (
            CODE.format(escape(server.cwd))
            if server.cwd
            else "the kernel's folder"
            if server.transport == "stdio"
            else "-"
        )
        rows.append(
            "<tr>"
            f"<td><b>{escape(server.name)}</b></td><td>{escape(server.transport)}</td>"
            f"<td>{CODE.format(escape(server.target))}</td><td>{cwd}</td>"
            f"<td>{_env_cell(server)}</td><td>{escape(reads)}</td><td>{escape(policy)}</td>"
            "</tr>"
        )
    table = (
        '<table style="border-collapse:collapse"><tr><th>server</th><th>kind</th><th>command or URL</th>'
        "<th>runs in</th><th>sets env</th><th>reads env</th><th>policy</th></tr>" + "".join(rows) + "</table>"
    )
    return (
        f"<div><b>Trust this MCP config?</b> <code>{escape(path)}</code> came with the project. "
        "Until you trust it, none of its servers is started and none of its variables is read.</div>"
        + _warnings(servers)
        + table
    )


class TrustCard:
    """A live card for one version (path + sha256) of a project file; `widget` is what to display."""

    def __init__(self, path: str, servers: list[Any], decide: Decide) -> None:
        self._decide = decide
        self._task: Any = None
        self.decided = False
        self.question = HTML(value=trust_html(path, servers))
        # JupyterLab's accept / plain buttons (index.css), like the approval card's, not ipywidgets' loud colours
        self.trust_button = Button(
            description="Trust", icon="check", _dom_classes=ACCEPT_CLASSES, style=button_style("accept")
        )
        self.decline_button = Button(
            description="Don't trust", icon="times", layout=Layout(width="auto"), _dom_classes=PLAIN_CLASSES
        )
        self.trust_button.on_click(main_thread_callback(lambda _: self._start(True)))
        self.decline_button.on_click(main_thread_callback(lambda _: self._start(False)))
        self.buttons = HBox(children=(self.trust_button, self.decline_button))
        self.outcome = HTML(value="")
        self.widget = VBox(
            children=(self.question, self.buttons, self.outcome),
            layout=layout("approval"),  # the frame inline too (widgets/look.py)
            _dom_classes=APPROVAL_CLASSES,
        )

    def _start(self, trusted: bool) -> None:
        """On the main loop: decide once, then record the decision in a task there."""
        if self.decided:
            return
        self.decided = True
        self.buttons.layout.display = "none"
        self.outcome.value = "Trusting…" if trusted else "Not trusted."
        self._task = run_on_main(self._run(trusted))  # held: the loop keeps only a weak reference

    async def _run(self, trusted: bool) -> None:
        try:
            line = await self._decide(trusted)
        except Exception as exc:
            log.exception("recording the trust decision failed")
            line = f"Could not record the decision: {type(exc).__name__}"
        self.outcome.value = f"<div>{escape(line)}</div>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
