"""Which sessions file a `?path=` names: resolved inside the server root as Jupyter does.

Jupyter's contents manager joins the API path to the root and refuses results whose
*absolute* (not symlink-resolved) path leaves the root: `..` escapes are refused, while a
symlinked folder inside the root opens, as it does in the file browser. The sessions file
is the kernel's: `<notebook dir>/<stem>.agentik.db`, or `AGENTIK_DB_PATH` (a relative value
is taken from the notebook's folder, the cwd of its kernel).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import tornado.web

from agentik_jupyter.persistence import db_path_for


def notebook_os_path(root_dir: str, api_path: str) -> Path:
    """The notebook's file for an API path, or a 400 naming what is wrong."""
    rel = api_path.strip().strip("/")
    if not rel.endswith(".ipynb"):
        raise tornado.web.HTTPError(400, "query argument 'path' must name a notebook (.ipynb)")
    if "\0" in rel or os.path.splitdrive(rel)[0] or os.path.isabs(rel):
        raise tornado.web.HTTPError(400, "query argument 'path' must be relative to the server's root")
    root = os.path.abspath(os.path.expanduser(root_dir))
    os_path = os.path.abspath(os.path.join(root, *rel.split("/")))
    if not os_path.startswith(root.rstrip(os.sep) + os.sep):
        raise tornado.web.HTTPError(400, "path is outside the server's root")
    return Path(os_path)


def sessions_file(root_dir: str, api_path: str, environ: Mapping[str, str] | None = None) -> Path:
    """The sessions file a kernel running this notebook would use."""
    notebook = notebook_os_path(root_dir, api_path)
    return db_path_for(notebook, os.environ if environ is None else environ, notebook.parent)
