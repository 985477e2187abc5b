"""Resume shows each message once.

The quickstart is run twice with nbclient and the demo model; the second run resumes
the session saved beside the notebook. Every `--wait` cell's transcript must hold
exactly its own turn, entry for entry as the audit log recorded it: no answer twice,
no earlier turn's messages or errors.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agentik_jupyter.persistence import AuditEntry
from agentik_jupyter.types import AssistantMessage, ErrorRecord, UserMessage
from agentik_jupyter.widgets.transcript import holds_answer
from tests.kernel_support import KERNEL, START_TIMEOUT, audit, transcripts
from tests.notebook_env import NOTEBOOKS, notebook_env

pytestmark = pytest.mark.timeout(300)


def run(path: Path, env: dict[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=60,
        startup_timeout=START_TIMEOUT,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(path.parent)}},
        shutdown_kernel="immediate",
    )
    client.execute(env=env, cwd=str(path.parent))
    return nb


def from_audit(rows: list[AuditEntry]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for row in rows:
        r = row.record
        if isinstance(r, UserMessage):
            out.append(("user", r.content.strip()))
        elif isinstance(r, AssistantMessage):
            if r.content.strip():
                out.append(("assistant", r.content.strip()))
            out.extend(("tool", c.name) for c in r.tool_calls or [])
        elif isinstance(r, ErrorRecord):
            out.append(("error", r.message))
    return out


def from_transcript(payload: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for e in payload["entries"]:
        if e["role"] in {"user", "assistant"}:
            out.append((e["role"], e["content"].strip()))
        elif e["role"] == "tool":
            out.append(("tool", e["name"]))
        else:
            out.append(("error", e["message"]))
    return out


def test_quickstart_twice_every_transcript_matches_its_turn(tmp_path: Path) -> None:
    notebook = tmp_path / "quickstart.ipynb"
    shutil.copy(NOTEBOOKS / "quickstart.ipynb", notebook)
    db_path = tmp_path / "quickstart.agentik.db"
    env = notebook_env(db_path, notebook)
    runs = [run(notebook, env), run(notebook, env)]

    turns: dict[str, list[AuditEntry]] = {}
    for entry in audit(db_path):
        turns.setdefault(entry.turn_id, []).append(entry)
    by_question: dict[str, list[list[AuditEntry]]] = {}
    for rows in turns.values():
        first = rows[0].record
        assert isinstance(first, UserMessage)
        by_question.setdefault(first.content.strip(), []).append(rows)

    checked = 0
    for n, nb in enumerate(runs):
        for cell in nb.cells:
            if cell.cell_type != "code" or not cell.source.startswith("%%agent --wait"):
                continue
            if "--temp" in cell.source.split("\n", 1)[0]:
                continue  # a temporary turn has no audit rows to compare with
            (bundle,) = transcripts(cell.outputs)
            payload = bundle["application/vnd.agentik.transcript+json"]
            question = cell.source.split("\n", 1)[1].strip()
            # the user message may carry more than the cell's text (e.g. expanded @mentions)
            (key,) = [k for k in by_question if k.startswith(question)]
            rows = by_question[key][n]
            shown, recorded = from_transcript(payload), from_audit(rows)
            assert [r for r, _ in shown] == [r for r, _ in recorded], (n, question, shown, recorded)
            for (role, text), (_, saved) in zip(shown, recorded):
                # the recorded question may go on with what @mentions attached; an answer's JSON
                # entry may keep only its start (the whole answer is the bundle's HTML)
                if role == "assistant":
                    assert saved == text or holds_answer(bundle, saved), (n, question, role)
                else:
                    assert saved.startswith(text) if role == "user" else saved == text, (n, question, role)
            checked += 1
    assert checked >= 6


def test_a_failed_turn_after_a_restart_shows_only_its_own_error(tmp_path: Path) -> None:
    from agentik_jupyter.testing import FakeLLMServer, Reply
    from tests.kernel_support import NotebookKernel, kernel_env, transcript

    db_path = tmp_path / "fail.agentik.db"
    with FakeLLMServer() as server:
        for question in ("Summarise the data.", "Summarise the data."):  # the same notebook, run again
            server.push(Reply.fault("401"))
            kernel = NotebookKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
            try:
                kernel.run("%load_ext agentik_jupyter")
                cell = kernel.run(f"%%agent --wait\n{question}")
                entries = transcript(cell.outputs)["application/vnd.agentik.transcript+json"]["entries"]
                assert [e["role"] for e in entries] == ["user", "error"], entries
                assert entries[0]["content"].strip() == question
            finally:
                kernel.close()
