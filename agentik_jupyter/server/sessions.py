"""The sessions API: list, one session's messages, rename, delete, and a live events stream.

GETs read the file read-only (persistence.SessionReader): they never migrate, never take
the write lock and work on a file the server cannot write. PATCH and DELETE go through
SessionDB, the kernels' own store, so they take the same locks and leave the same change
log rows. The events stream follows the change log from the position the client gives
(`after=`, or the `Last-Event-ID` header a reconnecting EventSource sends), polling it
read-only, so a reconnect misses nothing.

Session ids are data from a file a project may ship: only ids that are session ids (ids.py)
are listed or streamed (the list says how many rows it hides), and a route given any other
id answers 400 before the file is opened.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from tornado.iostream import StreamClosedError

from agentik_jupyter.ids import InvalidSessionIdError, check_session_id
from agentik_jupyter.persistence import (
    MAX_PAGE_SIZE,
    PAGE_SIZE,
    ConversationNotFoundError,
    DatabaseBusyError,
    NotASessionDBError,
    SchemaVersionError,
    SessionDB,
    SessionDBError,
    SessionReader,
)
from agentik_jupyter.server.base import AgentikHandler
from agentik_jupyter.server.paths import sessions_file
from agentik_jupyter.server.sse import EVENT_STREAM, encode

POLL_INTERVAL_S = 0.25
HEARTBEAT_S = 15.0
RETRY_MS = 1000
TITLE_MAX_CHARS = 200


def _status(exc: SessionDBError) -> int:
    if isinstance(exc, ConversationNotFoundError):
        return 404
    if isinstance(exc, DatabaseBusyError):
        return 503
    if isinstance(exc, (NotASessionDBError, SchemaVersionError)):
        return 409
    return 500


class _SessionsBase(AgentikHandler):
    def _db_path(self) -> Path:
        root = self.settings.get("server_root_dir") or self.serverapp.root_dir  # type: ignore[union-attr]  # set while serving
        return sessions_file(str(root), self.get_query_argument("path", ""))

    def _int(self, name: str, default: int | None, low: int = 0, high: int | None = None) -> int | None:
        raw = self.get_query_argument(name, "").strip()
        if not raw:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise tornado.web.HTTPError(400, f"query argument {name!r} must be an integer") from None
        value = max(low, value)
        return min(high, value) if high is not None else value

    async def _run(self, fn: Any, *args: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except SessionDBError as exc:
            raise tornado.web.HTTPError(_status(exc), str(exc)) from None

    def _reply(self, data: Any) -> None:
        self.finish(json.dumps(data))


class SessionsHandler(_SessionsBase):
    """GET ?path=nb.ipynb[&offset=&limit=] -> {sessions, offset, limit, total, position, hidden},
    newest first; `hidden` counts the rows not listed because their id is not a session id."""

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        reader = SessionReader(self._db_path())
        offset = self._int("offset", 0)
        limit = self._int("limit", PAGE_SIZE, 1, MAX_PAGE_SIZE)
        listing = await self._run(reader.list_page, limit, offset)  # one read of the file
        self._reply(
            {
                "sessions": [s.model_dump() for s in listing.sessions],
                "offset": offset,
                "limit": limit,
                "total": listing.total,
                "position": listing.position,
                "hidden": listing.hidden,
            }
        )


def _session_id(value: str) -> str:
    """The route's id, or 400: an id that is not a session id never reaches the file."""
    try:
        return check_session_id(value)
    except InvalidSessionIdError as exc:
        raise tornado.web.HTTPError(400, str(exc)) from None


class SessionHandler(_SessionsBase):
    """One session: GET its messages (paged), PATCH {"title"} to rename, DELETE it."""

    @tornado.web.authenticated
    @authorized
    async def get(self, conversation_id: str) -> None:
        conversation_id = _session_id(conversation_id)
        reader = SessionReader(self._db_path())
        limit = self._int("limit", PAGE_SIZE, 1, MAX_PAGE_SIZE)
        before = self._int("before", None)
        after = self._int("after", None)
        if before is not None and after is not None:
            raise tornado.web.HTTPError(400, "give 'before' or 'after', not both")
        info = await self._run(reader.get_conversation, conversation_id)
        page = await self._run(
            lambda: reader.audit_log(conversation_id, limit or PAGE_SIZE, before_seq=before, after_seq=after)
        )
        self._reply({"session": info.model_dump(), **page.model_dump(mode="json")})

    @tornado.web.authenticated
    @authorized
    async def patch(self, conversation_id: str) -> None:
        conversation_id = _session_id(conversation_id)
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            raise tornado.web.HTTPError(400, 'body must be JSON: {"title": ...}') from None
        title = body.get("title") if isinstance(body, dict) else None
        if not isinstance(body, dict) or "title" not in body or not (title is None or isinstance(title, str)):
            raise tornado.web.HTTPError(400, 'body must be {"title": string or null}')
        if title is not None and len(title) > TITLE_MAX_CHARS:
            raise tornado.web.HTTPError(400, f"title is longer than {TITLE_MAX_CHARS} characters")
        path = self._existing()
        info = await self._run(_write, path, lambda db: db.rename_conversation(conversation_id, title))
        self._reply(info.model_dump())

    @tornado.web.authenticated
    @authorized
    async def delete(self, conversation_id: str) -> None:
        conversation_id = _session_id(conversation_id)
        path = self._existing()
        if not await self._run(_write, path, lambda db: db.delete_conversation(conversation_id)):
            raise tornado.web.HTTPError(404, f"no session {conversation_id!r}")
        self.set_status(204)
        self.finish()

    def _existing(self) -> Path:
        path = self._db_path()
        if not path.is_file():
            raise tornado.web.HTTPError(404, "no sessions file for this notebook")
        return path


def _write(path: Path, change: Any) -> Any:
    with SessionDB(path) as db:
        return change(db)


class EventsHandler(_SessionsBase):
    """GET ?path=nb.ipynb[&after=POSITION] -> SSE: created, renamed, deleted, message, mode (id = position)."""

    _closed: asyncio.Event | None = None

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        reader = SessionReader(self._db_path())
        after = self._int("after", None)
        if after is None:
            after = self._int_header("Last-Event-ID")
        if after is None:
            after = await self._run(reader.position)
        self._closed = asyncio.Event()
        self.start_event_stream()
        try:
            await self._follow(reader, after)
        except StreamClosedError:
            return
        if not self._finished:
            self.finish(set_content_type=EVENT_STREAM)

    def _int_header(self, name: str) -> int | None:
        raw = (self.request.headers.get(name) or "").strip()
        return int(raw) if raw.isdigit() else None

    async def _follow(self, reader: SessionReader, position: int) -> None:
        assert self._closed is not None
        self.write(f"retry: {RETRY_MS}\n: from position {position}\n\n".encode())
        await self.flush()
        quiet_since = time.monotonic()
        while not self._closed.is_set():
            try:
                events = await asyncio.to_thread(reader.changes_after, position)
            except SessionDBError as exc:
                self.write(encode(position, "error", {"message": str(exc)}))
                await self.flush()
                return
            for event in events:
                position = event["position"]
                self.write(encode(position, event["type"], event))
            if events:
                await self.flush()
                quiet_since = time.monotonic()
                continue
            if time.monotonic() - quiet_since > HEARTBEAT_S:
                self.write(b": keep-alive\n\n")
                await self.flush()
                quiet_since = time.monotonic()
            try:
                await asyncio.wait_for(self._closed.wait(), POLL_INTERVAL_S)
            except TimeoutError:
                pass

    def on_connection_close(self) -> None:
        if self._closed is not None:
            self._closed.set()
        super().on_connection_close()
