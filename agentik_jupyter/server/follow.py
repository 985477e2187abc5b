"""Sessions files follow their notebooks: Jupyter Server's contents events move, copy and remove them.

Jupyter Server emits an event for each contents action that succeeds (schema
`contents_service/v1`: rename, copy, delete, save, …), whatever client asked (JupyterLab's
Rename and Duplicate, a drag to another folder, the REST API). For a notebook's sessions file:

- rename or move: the file (and SQLite's side files) moves to the new name. A live kernel of the
  notebook is told first (over the kernel link): it takes the new path as its notebook and, when
  it has the file open, moves it itself after the writes already asked for, so no turn's rows are
  lost and its next turn writes to the new place. Jupyter's own session takes the new path too, so
  a restarted kernel starts with it.
- copy: the copy gets a copy of the file, each session's title saying where it was copied from.
- delete: the file goes the way the notebook went: to the trash when the server sends files
  there (`delete_to_trash`), else it is removed.
- save: a notebook saved where none was (a new notebook, an upload, a copy) under a name whose
  sessions file is still there, or a notebook whose id differs from the one that file records,
  does not take that file: it is set aside (kept, renamed; persistence/binding.py). A notebook that
  has a sessions file gets that file's id in its metadata when it is saved.

A file already at the new name is never overwritten: it is set aside first. `AGENTIK_DB_PATH` set
for the server means the files are not per notebook: nothing is moved.
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
from pathlib import Path
from typing import Any

import tornado.web
from send2trash import send2trash  # type: ignore[import-untyped]  # no stubs; a dependency of jupyter_server

from agentik_jupyter.persistence import DB_PATH_ENV, SessionDB
from agentik_jupyter.persistence.binding import (
    ID_KEY,
    METADATA_KEY,
    file_binding,
    notebook_id_in,
    read_notebook_id,
)
from agentik_jupyter.persistence.relocate import (
    any_exists,
    copy_sessions_file,
    move_sessions_file,
    remove_sessions_file,
    set_aside,
)
from agentik_jupyter.server.kernel_link import KernelGone, KernelLinks
from agentik_jupyter.server.paths import notebook_os_path, sessions_file
from agentik_jupyter.server.turns import LINKS_SETTING, TARGET

log = logging.getLogger(__name__)

CONTENTS_SCHEMA = "https://events.jupyter.org/jupyter_server/contents_service/v1"
TELL_TIMEOUT_S = 20.0
"""How long a live kernel has to take a rename; one busy for longer learns it when free (the file
is moved for it meanwhile, side files and all, which its open connection follows)."""
COPIED_NOTE = "copied from {}"


def _is_notebook(path: Any) -> bool:
    return isinstance(path, str) and path.strip().strip("/").endswith(".ipynb")


class NotebookFollower:
    """Keeps each sessions file with its notebook, for one Jupyter server."""

    def __init__(self, serverapp: Any) -> None:
        self.app = serverapp
        self._lock = asyncio.Lock()
        self._asides: dict[str, Path] = {}  # files the pre-save hook found a stranger's, by API path

    def install(self) -> None:
        self.app.event_logger.add_listener(schema_id=CONTENTS_SCHEMA, listener=self.on_event)
        contents = self.app.contents_manager
        if hasattr(contents, "register_pre_save_hook"):
            contents.register_pre_save_hook(self.pre_save)

    @property
    def root(self) -> str:
        return str(getattr(self.app.contents_manager, "root_dir", None) or self.app.root_dir)

    def _paths(self, api_path: str) -> tuple[Path, Path] | None:
        """(notebook, sessions file) for an API path, or None when there is no per-notebook file."""
        if os.environ.get(DB_PATH_ENV, "").strip() or not _is_notebook(api_path):
            return None
        try:
            return notebook_os_path(self.root, api_path), sessions_file(self.root, api_path)
        except tornado.web.HTTPError:
            return None

    # ---- the events ----

    async def on_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        action, path, source = data.get("action"), str(data.get("path") or ""), str(data.get("source_path") or "")
        if action not in ("rename", "copy", "delete", "save", "create", "upload"):
            return  # ("get", the most frequent, never waits for the lock)
        try:
            async with self._lock:  # one change at a time, in the order they happened
                if action == "rename":
                    await self.renamed(source, path)
                elif action == "copy":
                    await self.copied(source, path)
                elif action == "delete":
                    await self.deleted(path)
                elif action in ("save", "create", "upload"):
                    await self.saved(path)
        except Exception:
            log.exception("agentik: could not keep the sessions file with %s (%s)", path, action)

    async def renamed(self, source: str, path: str) -> None:
        old, new = self._paths(source), self._paths(path)
        moves: list[tuple[str, str]] = []
        if old is not None and new is not None and old[1] != new[1]:
            moves = [(source, path)]
            if any_exists(new[1]):
                aside = await asyncio.to_thread(set_aside, new[1])
                log.warning("agentik: %s was not %s's: kept as %s", new[1].name, path, aside)
        elif os.path.isdir(os.path.join(self.root, path)):  # a folder: its sessions files went with it
            moves = [(s, path + s[len(source) :]) for s in await self._session_paths() if s.startswith(source + "/")]
        held = False
        for old_api, new_api in moves:
            held = await self._follow_kernels(old_api, new_api) or held
        if old is not None and new is not None and old[1] != new[1] and not held:
            if await asyncio.to_thread(move_sessions_file, old[1], new[1]):
                log.info("agentik: sessions file moved with its notebook to %s", new[1])

    async def copied(self, source: str, path: str) -> None:
        old, new = self._paths(source), self._paths(path)
        if old is None or new is None or old[1] == new[1]:
            return
        if any_exists(new[1]):
            await asyncio.to_thread(set_aside, new[1])
        await asyncio.to_thread(_copy, old[1], new[0], new[1], COPIED_NOTE.format(source.strip("/")))

    async def deleted(self, path: str) -> None:
        paths = self._paths(path)
        if paths is None or os.path.lexists(paths[0]):
            return
        to_trash = bool(getattr(self.app.contents_manager, "delete_to_trash", False))
        remove = _to_trash if to_trash else os.unlink
        if await asyncio.to_thread(remove_sessions_file, paths[1], remove):
            log.info("agentik: sessions file %s %s with its notebook", paths[1], "trashed" if to_trash else "removed")

    async def saved(self, path: str) -> None:
        aside = self._asides.pop(path.strip("/"), None)
        if aside is not None and any_exists(aside):
            kept = await asyncio.to_thread(set_aside, aside)
            log.warning("agentik: %s belonged to another notebook that had the name %s: kept as %s", aside, path, kept)

    # ---- the save hook ----

    def pre_save(self, model: dict[str, Any], path: str, contents_manager: Any = None, **kwargs: Any) -> None:
        """Bind a notebook that has a sessions file to it (its id in the metadata), or mark a stranger's.

        Runs inside every save, so it only reads: setting a file aside waits for the save event.
        """
        content = model.get("content") if model.get("type") == "notebook" else None
        paths = self._paths(path) if isinstance(content, dict) else None
        if paths is None or not isinstance(content, dict) or not any_exists(paths[1]):
            return
        notebook, db = paths
        metadata = content.setdefault("metadata", {})
        existed = notebook.exists()
        ours = notebook_id_in(metadata) or (read_notebook_id(notebook) if existed else None)
        recorded = file_binding(db)
        stranger = (not existed and ours is None) or (
            ours is not None and recorded is not None and recorded.notebook_id != ours
        )
        if stranger:
            self._asides[path.strip("/")] = db
            return
        if ours is None and recorded is not None:
            ours = recorded.notebook_id
        section = metadata.get(METADATA_KEY)
        if ours is not None and (section is None or isinstance(section, dict)):
            metadata[METADATA_KEY] = {**(section or {}), ID_KEY: ours}

    # ---- kernels ----

    async def _session_paths(self) -> list[str]:
        return [str(s.get("path") or "").strip("/") for s in await self.app.session_manager.list_sessions()]

    async def _follow_kernels(self, source: str, path: str) -> bool:
        """Tell the notebook's live kernels its new path, and give Jupyter's session the new path.

        True when a kernel moved the sessions file itself."""
        sessions = await self.app.session_manager.list_sessions()
        held = False
        for session in sessions:
            where = str(session.get("path") or "").strip("/")
            if where not in (source.strip("/"), path.strip("/")):
                continue
            if where != path.strip("/"):  # as JupyterLab does; the kernel's environment follows
                await self.app.session_manager.update_session(session["id"], path=path, name=posixpath.basename(path))
            kernel = session.get("kernel") or {}
            if kernel.get("id"):
                held = await self._tell(kernel["id"], source, path) or held
        return held

    async def _tell(self, kernel_id: str, source: str, path: str) -> bool:
        old, new = notebook_os_path(self.root, source), notebook_os_path(self.root, path)
        links = self.app.web_app.settings.setdefault(LINKS_SETTING, KernelLinks())
        try:
            return await asyncio.wait_for(self._ask(links, kernel_id, str(old), str(new)), TELL_TIMEOUT_S)
        except (TimeoutError, KernelGone):
            return False
        except Exception as exc:
            log.warning("agentik: could not tell kernel %s its notebook moved: %s", kernel_id, type(exc).__name__)
            return False

    async def _ask(self, links: KernelLinks, kernel_id: str, old: str, new: str) -> bool:
        link = await links.get(self.app.kernel_manager, kernel_id)
        comm_id, queue = link.open(TARGET, {"action": "moved", "from": old, "to": new})
        try:
            kind, data = await link.next(queue)
        finally:
            link.close(comm_id, tell_kernel=False)
        return kind == "comm_msg" and data.get("event") == "moved" and bool(data.get("held"))


def _to_trash(path: Path) -> None:
    send2trash(os.fspath(path))


def _copy(src: Path, notebook: Path, dst: Path, note: str) -> None:
    """Copy the sessions file, bind the copy to the copied notebook and say so in every title; made
    under a hidden name and moved into place once whole, so no one lists a half-made copy."""
    making = dst.with_name(f".{dst.name}.copying")
    if any_exists(making):
        remove_sessions_file(making, os.unlink)  # a copy a crash left half made
    if not copy_sessions_file(src, making):
        return
    with SessionDB(making) as db:
        old = db.binding()
        notebook_id = read_notebook_id(notebook) or (old.notebook_id if old else None)
        if notebook_id is not None:
            db.bind_notebook(notebook_id, note)
        sessions, offset = [], 0
        while rows := db.list_conversations(limit=200, offset=offset):
            sessions += rows
            offset += len(rows)
        for info in sessions:  # renaming reorders the list: read it whole first
            db.rename_conversation(info.id, f"{info.title} ({note})" if info.title else f"({note})")
    move_sessions_file(making, dst)
