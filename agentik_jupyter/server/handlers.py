"""Tornado handlers. Jupyter's auth guards every route; bodies are validated by chat.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ..chat import ChatRouteError, error_body, handle
from ..persistence import SessionDB, SessionDBError, db_path_for


class ChatHandler(APIHandler):
    """POST {messages, context?, tools?} -> {content, toolCalls?}; 400 invalid body, 502 provider/config."""

    @tornado.web.authenticated
    async def post(self) -> None:
        try:
            result = await handle(self.request.body)
        except ChatRouteError as exc:
            self.set_status(exc.status)
            self.finish(json.dumps(exc.body))
            return
        except Exception as exc:
            self.log.exception("agentik chat route failed")
            self.set_status(500)
            self.finish(json.dumps(error_body(exc)))
            return
        self.finish(json.dumps(result))


class _SessionsBase(APIHandler):
    def _db_path(self) -> Path | None:
        rel = self.get_query_argument("path", "").strip().lstrip("/")
        if not rel.endswith(".ipynb"):
            raise tornado.web.HTTPError(400, "query argument 'path' must name a notebook (.ipynb)")
        root = Path(self.settings.get("server_root_dir") or self.serverapp.root_dir).expanduser().resolve()
        notebook = (root / rel).resolve()
        if root not in notebook.parents:
            raise tornado.web.HTTPError(400, "path is outside the server's root")
        db = db_path_for(notebook, {}, notebook.parent)
        return db if db.exists() else None

    def _reply(self, data: Any) -> None:
        self.finish(json.dumps(data))


def _list(path: Path) -> list[dict[str, Any]]:
    with SessionDB(path) as db:
        return [c.model_dump() for c in db.list_conversations()]


def _history(path: Path, conversation_id: str, limit: int, before: int | None) -> dict[str, Any]:
    with SessionDB(path) as db:
        return db.audit_log(conversation_id, limit=limit, before_seq=before).model_dump(mode="json")


class SessionsHandler(_SessionsBase):
    """GET ?path=nb.ipynb -> the notebook's sessions, newest first."""

    @tornado.web.authenticated
    async def get(self) -> None:
        db = self._db_path()
        if db is None:
            self._reply({"sessions": []})
            return
        try:
            sessions = await asyncio.to_thread(_list, db)
        except SessionDBError as exc:
            raise tornado.web.HTTPError(500, str(exc)) from None
        self._reply({"sessions": sessions})


class SessionHistoryHandler(_SessionsBase):
    """GET /<id>?path=nb.ipynb[&before=SEQ&limit=N] -> one page of the audit log, oldest first."""

    @tornado.web.authenticated
    async def get(self, conversation_id: str) -> None:
        db = self._db_path()
        if db is None:
            raise tornado.web.HTTPError(404, "no sessions file for this notebook")
        try:
            limit = min(500, max(1, int(self.get_query_argument("limit", "100"))))
            before_raw = self.get_query_argument("before", "")
            before = int(before_raw) if before_raw else None
        except ValueError:
            raise tornado.web.HTTPError(400, "limit and before must be integers") from None
        try:
            page = await asyncio.to_thread(_history, db, conversation_id, limit, before)
        except SessionDBError as exc:
            raise tornado.web.HTTPError(404, str(exc)) from None
        self._reply(page)


def setup_handlers(web_app: Any, serverapp: Any = None) -> None:
    base = web_app.settings["base_url"]
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "agentik/api/chat"), ChatHandler),
            (url_path_join(base, "agentik/api/sessions"), SessionsHandler),
            (url_path_join(base, r"agentik/api/sessions/([^/]+)"), SessionHistoryHandler),
        ],
    )
