"""Opening a notebook's sessions file only if it is that notebook's (binding.py), and binding a new one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from agentik_jupyter.persistence.binding import aside_note, new_notebook_id, read_notebook_id, set_aside_if_stranger
from agentik_jupyter.persistence.sqlite_session import SessionDB

log = logging.getLogger(__name__)


def open_for_notebook(db_path: Path, notebook: Path | None, **options: Any) -> tuple[SessionDB, str | None]:
    """The sessions file of `notebook`, and a note when a stranger's file had to be set aside first.

    A file that records no notebook yet is bound to this one: to the id in its metadata, or to a
    new id that the server writes into the notebook when it is next saved.
    """
    notebook_id = read_notebook_id(notebook)
    note = None
    aside = set_aside_if_stranger(db_path, notebook_id)
    if aside is not None:
        note = aside_note(db_path, aside)
        log.warning("agentik: %s", note)
    db = SessionDB(db_path, **options)
    try:
        if notebook is not None and db.binding() is None:
            db.bind_notebook(notebook_id or new_notebook_id())
    except BaseException:
        db.close()
        raise
    return db, note
