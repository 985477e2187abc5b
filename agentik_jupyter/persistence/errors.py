"""Which session-store error a failure to open the sessions file is (the errors themselves are in errors.py)."""

from __future__ import annotations

from pathlib import Path

from agentik_jupyter.errors import NotASessionDBError, SessionDBError


def open_error(path: Path, exc: Exception) -> SessionDBError:
    """The right error for a failure to open ``path``: foreign file, or a place we cannot write."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and (code & 0xFF) in (26, 11):  # SQLITE_NOTADB, SQLITE_CORRUPT
        return NotASessionDBError(path, str(exc))
    return SessionDBError(
        f"cannot open the sessions file {path} ({exc}); if its folder is read-only, "
        "set AGENTIK_DB_PATH to a writable location"
    )
