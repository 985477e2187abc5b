"""Exceptions of the session store, each with a message a notebook user can act on."""

from __future__ import annotations

from pathlib import Path


class SessionDBError(Exception):
    """Base class: anything the session store refuses or cannot do."""


class NotASessionDBError(SessionDBError):
    """The file exists but is not an SQLite database; it is left untouched."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(
            f"{path} is not an agentik session database ({detail}); the file was left untouched. "
            "Move it away or point AGENTIK_DB_PATH elsewhere."
        )
        self.path = path


class SymlinkedFileError(NotASessionDBError):
    """The sessions file, or a -wal/-shm/-journal beside it, is a symbolic link: refused, never followed.

    SQLite follows links, so a shipped ``nb.agentik.db`` linking elsewhere (or nowhere yet) would
    have every turn written wherever it points. A NotASessionDBError, so callers treat it as a
    file they must leave alone (the server answers 409).
    """

    def __init__(self, path: Path, link: Path, target: str) -> None:
        where = "" if link == path else f" beside the sessions file {path}"
        SessionDBError.__init__(
            self,
            f"{link}{where} is a symbolic link (to {target}); agentik does not open sessions files through "
            "symbolic links, so nothing was written through it. Replace the link with the file itself, "
            "or point AGENTIK_DB_PATH at the real file.",
        )
        self.path = path
        self.link = link


def open_error(path: Path, exc: Exception) -> SessionDBError:
    """The right error for a failure to open ``path``: foreign file, or a place we cannot write."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and (code & 0xFF) in (26, 11):  # SQLITE_NOTADB, SQLITE_CORRUPT
        return NotASessionDBError(path, str(exc))
    return SessionDBError(
        f"cannot open the sessions file {path} ({exc}); if its folder is read-only, "
        "set AGENTIK_DB_PATH to a writable location"
    )


class SchemaVersionError(SessionDBError):
    """The file was written by a newer agentik_jupyter; we refuse to touch it."""

    def __init__(self, path: Path, found: int, supported: int) -> None:
        super().__init__(
            f"{path} has session schema version {found}, but this agentik_jupyter only knows "
            f"versions up to {supported}. The file was left untouched; upgrade agentik_jupyter "
            "(pip install -U agentik_jupyter) to open it."
        )
        self.path = path
        self.found = found
        self.supported = supported


class DatabaseBusyError(SessionDBError):
    """Another process held the write lock for longer than we were willing to wait."""


class ConversationNotFoundError(SessionDBError, LookupError):
    """No conversation with that id in this file."""

    def __init__(self, conversation_id: str, path: Path) -> None:
        super().__init__(f"no session {conversation_id!r} in {path}")
        self.conversation_id = conversation_id


class TurnNotFoundError(SessionDBError, LookupError):
    """append/commit/fail named a turn that begin_turn never started."""

    def __init__(self, conversation_id: str, turn_id: str) -> None:
        super().__init__(f"turn {turn_id!r} was not begun in session {conversation_id!r}")
        self.conversation_id = conversation_id
        self.turn_id = turn_id


class TurnStateError(SessionDBError):
    """The turn cannot take this write (e.g. its working memory is already committed)."""


class TemporaryConversationError(SessionDBError):
    """Temporary sessions are never written; the caller should keep them in memory."""


class WorkingMemoryError(SessionDBError, ValueError):
    """A turn's working memory breaks an invariant the providers rely on (e.g. an unpaired tool call)."""
