"""Re-execute notebooks/ with the demo model and save their outputs (what nbval compares).

Run after changing anything that shows in a notebook's output:
    .venv/bin/python scripts/refresh_notebooks.py [NAME.ipynb ...]

The saved run is the one a reader should see, so it runs as a user's would: approvals are
answered on their card (this client presses **Approve**, as the user would; no
AGENTIK_APPROVE, so `%agent tools` shows run_code's real policy), the sessions file is the
default one beside the notebook (moved aside and put back if you have one), and the saved
copy names it relative to the repository instead of this machine's path. The notebook's
kernelspec is the installed one and the widget state keeps only the widgets the outputs
show, so JupyterLab opens the notebook without rewriting it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.notebook_env import NOTEBOOKS, notebook_env  # noqa: E402

KERNEL = "python3"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class ApprovingClient(NotebookClient):
    """nbclient that presses every approval card's Approve button, as the user would."""

    approvals = 0

    def handle_comm_msg(self, outs: list[Any], msg: dict[str, Any], cell_index: int) -> None:
        super().handle_comm_msg(outs, msg, cell_index)
        state = msg["content"].get("data", {}).get("state", {})
        if (
            msg["msg_type"] == "comm_open"
            and state.get("_model_name") == "ButtonModel"
            and state.get("description") == "Approve"
        ):
            click = {"comm_id": msg["content"]["comm_id"], "data": {"method": "custom", "content": {"event": "click"}}}
            self.kc.shell_channel.send(self.kc.session.msg("comm_msg", click))
            self.approvals += 1


def _references(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value[len("IPY_MODEL_") :]] if value.startswith("IPY_MODEL_") else []
    if isinstance(value, list):
        return [ref for item in value for ref in _references(item)]
    if isinstance(value, dict):
        return [ref for item in value.values() for ref in _references(item)]
    return []


def prune_widget_state(nb: nbformat.NotebookNode) -> None:
    """Keep the state of the widgets an output shows (and the models they use), no others:
    nbclient keeps every widget the run ever opened, closed ones included."""
    widgets = nb.metadata.get("widgets", {}).get(WIDGET_STATE)
    if not widgets:
        return
    state = widgets["state"]
    todo = [
        o["data"][WIDGET_VIEW]["model_id"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if WIDGET_VIEW in o.get("data", {})
    ]
    kept: set[str] = set()
    while todo:
        model_id = todo.pop()
        if model_id in kept or model_id not in state:
            continue
        kept.add(model_id)
        todo += _references(state[model_id].get("state", {}))
    widgets["state"] = {k: v for k, v in state.items() if k in kept}


def normalize(nb: nbformat.NotebookNode, folder: Path) -> None:
    """What JupyterLab would otherwise rewrite on open, and this machine's paths."""
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    nb.metadata["kernelspec"] = {"display_name": spec.display_name, "language": spec.language, "name": KERNEL}
    prune_widget_state(nb)
    local = (f"{folder}{os.sep}", f"{folder.parent}{os.sep}")
    if "widgets" in nb.metadata:
        nb.metadata["widgets"] = _relative(nb.metadata["widgets"], local)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            for key in ("text", "data"):
                if key in out:
                    out[key] = _relative(out[key], local)


def _relative(value: Any, local: tuple[str, ...]) -> Any:
    """Paths beside the notebook (the sessions file) relative to it, others in the repository (a
    traceback's library frames) relative to the repository: not this machine's."""
    if isinstance(value, str):
        for prefix in local:
            value = value.replace(prefix, "")
        return value
    if isinstance(value, list):
        return [_relative(v, local) for v in value]
    if isinstance(value, dict):
        return {k: _relative(v, local) for k, v in value.items()}
    return value


def refresh(path: Path) -> int:
    """Run `path` as a reader would and save it; returns how many approvals were pressed."""
    env = notebook_env(Path("unused"), path)
    for name in ("AGENTIK_APPROVE", "AGENTIK_DB_PATH"):
        env.pop(name, None)
    db = path.with_suffix(".agentik.db")
    with tempfile.TemporaryDirectory() as keep:
        aside = list(path.parent.glob(f"{db.name}*"))
        for p in aside:
            shutil.move(p, Path(keep) / p.name)
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            nb = nbformat.read(path, as_version=4)
            client = ApprovingClient(
                nb, timeout=120, kernel_name=KERNEL, resources={"metadata": {"path": str(path.parent)}}
            )
            client.execute()
        finally:
            os.environ.clear()
            os.environ.update(saved)
            for p in path.parent.glob(f"{db.name}*"):
                p.unlink()
            for p in aside:
                shutil.move(Path(keep) / p.name, p)
    normalize(nb, path.parent)
    nbformat.write(nb, path)
    return client.approvals


def main(names: list[str]) -> int:
    paths = [NOTEBOOKS / n for n in names] if names else sorted(NOTEBOOKS.glob("*.ipynb"))
    for path in paths:
        approvals = refresh(path)
        print(f"refreshed {path.name}" + (f" ({approvals} approval(s) pressed)" if approvals else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
