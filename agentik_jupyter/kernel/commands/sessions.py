"""`%agent status|sessions|resume|new|rename|delete|stop`: the session and its turns."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import textwrap
from typing import TYPE_CHECKING, Any

from agentik_jupyter.core.transport import KEY_IN_SERVER, key_location, key_origin
from agentik_jupyter.errors import ConfigurationError
from agentik_jupyter.ids import InvalidSessionIdError, is_session_id
from agentik_jupyter.kernel.turns import show_transcript_again
from agentik_jupyter.providers.config import load_config
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.tools.modes import label

if TYPE_CHECKING:
    from agentik_jupyter.kernel.agent import KernelAgent


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


async def status_command(agent: KernelAgent, args: list[str]) -> None:
    where = key_location()
    if where == KEY_IN_SERVER:
        provider = os.environ.get("LLM_PROVIDER") or "set in the server"
        model = os.environ.get("LLM_MODEL") or "set in the server"
        print(f"provider: {scrub(provider)}\nmodel:    {scrub(model)}\nendpoint: the Jupyter server's chat route")
    else:
        try:
            config = load_config()
            print(f"provider: {config.provider}\nmodel:    {config.model}\nendpoint: {scrub(config.shown_url)}")
        except ConfigurationError as exc:
            print(f"provider: not configured ({exc.message})")
    print(f"key:      {where}")
    origin = key_origin()
    if origin:
        print(textwrap.fill(origin, width=100, initial_indent="key from: ", subsequent_indent=" " * 10))
    session = agent.session
    if session is not None and session.conversation_id:
        print(f"session:  {session.conversation_id} {session.title or ''}".rstrip())
    elif session is not None and session.temporary:
        print("session:  temporary (not saved)")
    else:
        print("session:  none yet (the next %%agent cell starts one)")
    if session is not None:
        print(f"mode:     {label(session.effective_mode)}")
    print(agent.location.describe())
    if agent.binding_note:
        print(f"note:     {agent.binding_note}")
    found = agent.instructions.current()
    if found is not None:
        print(found.describe())
    if session is not None and session.busy:
        print(f"status:   {session.agent_store.status} (a turn is running; %agent stop stops it)")


async def sessions_command(agent: KernelAgent, args: list[str]) -> None:
    db = await agent.open_db()
    rows = await db.list_conversations()
    if not rows:
        print(f"No sessions yet in {db.path}.")
        return
    current = agent.session.conversation_id if agent.session else None
    print(f"{'':2}{'id':<22} {'updated':<16} {'msgs':>4}  title")
    for info in rows:
        mark = "* " if info.id == current else "  "
        print(f"{mark}{info.id:<22} {_when(info.updated_at):<16} {info.message_count:>4}  {info.title or ''}")


async def resume_command(agent: KernelAgent, args: list[str]) -> None:
    if args and not is_session_id(args[0]):
        print(f"Not resumed: {InvalidSessionIdError(args[0])}.")
        return
    session = agent.session_for()
    await agent.prepare(session)
    wanted = await _full_id(session.db, args[0]) if args else None
    if args and wanted is None:
        print(f"No session {args[0]!r}; see %agent sessions.")
        return
    info = await session.resume(wanted)
    if info is None:
        print("No session to resume; the next %%agent cell starts one.")
        return
    print(f"Resumed {info.id} {info.title or ''} ({info.message_count} messages).")


async def _full_id(db: Any, prefix: str) -> str | None:
    """An exact id, or the one session whose id starts with `prefix`."""
    matches = [c.id for c in await db.list_conversations(limit=1000) if c.id.startswith(prefix)]
    if prefix in matches:
        return prefix
    return matches[0] if len(matches) == 1 else None


async def new_command(agent: KernelAgent, args: list[str]) -> None:
    session = agent.session_for()
    await agent.prepare(session, new=True)
    print("New session: the next %%agent cell starts it.")


async def rename_command(agent: KernelAgent, args: list[str]) -> None:
    session = agent.session
    if session is None or not session.conversation_id or session.db is None:
        print("No current session to rename.")
        return
    title = " ".join(args).strip() or None
    info = await session.db.rename_conversation(session.conversation_id, title)
    session.title = info.title
    print(f"Renamed {info.id} to {info.title!r}.")


async def delete_command(agent: KernelAgent, args: list[str]) -> None:
    if not args:
        print("Usage: %agent delete ID")
        return
    db = await agent.open_db()
    wanted = await _full_id(db, args[0])
    if wanted is not None and await db.delete_conversation(wanted):
        if agent.session is not None and agent.session.conversation_id == wanted:
            agent.session.new_conversation()
        print(f"Deleted session {wanted}.")
    else:
        print(f"No session {args[0]!r} (or the prefix matches several); see %agent sessions.")


STOP_WAIT_S = 5.0
"""How long `%agent stop` waits for the turns it stopped to end."""


async def stop_command(agent: KernelAgent, args: list[str]) -> None:
    """Stop, then wait (briefly) until the stopped turns have ended: their cells show their
    transcripts while this cell still runs, so a runner (nbclient, papermill) saves them too."""
    session = agent.session
    if session is None:
        print("Nothing is running.")
        return
    stopping = session.turns if args == ["--all"] else session.turns[:1] if session.busy else ()
    if args == ["--all"]:
        count = session.stop_all()
        print(f"Stopped {count} turn(s)." if count else "Nothing is running.")
    else:
        stopped = session.stop()
        queued = f" {session.queued} queued turn(s) follow; %agent stop --all stops them." if session.queued else ""
        print(("Stopped." if stopped else "Nothing is running.") + queued)
    if stopping:
        await asyncio.wait(stopping, timeout=STOP_WAIT_S)
        for task in stopping:  # from this cell: a runner saving it saves their transcripts
            show_transcript_again(task)
