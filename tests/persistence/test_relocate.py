"""Moving, copying and setting aside a sessions file keeps every committed row (real SQLite files), and
a notebook is never handed a sessions file that records another notebook."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from agentik_jupyter.persistence import SessionDB
from agentik_jupyter.persistence.binding import file_binding
from agentik_jupyter.persistence.owner import open_for_notebook
from agentik_jupyter.persistence.relocate import copy_sessions_file, move_sessions_file
from agentik_jupyter.types import UserMessage


def filled(path: Path, turns: int = 3) -> tuple[SessionDB, str]:
    """A file with `turns` questions whose rows are still in the WAL (the writer stays open)."""
    db = SessionDB(path)
    conversation = db.create_conversation("Kept")
    for i in range(turns):
        db.begin_turn(conversation.id, UserMessage(content=f"question {i}"))
    assert path.with_name(path.name + "-wal").stat().st_size > 0
    return db, conversation.id


def notebook_with_id(path: Path, notebook_id: str | None) -> Path:
    nb = nbformat.v4.new_notebook()
    if notebook_id is not None:
        nb.metadata["agentik"] = {"notebook_id": notebook_id}
    path.write_text(nbformat.writes(nb))
    return path


def test_a_moved_file_keeps_the_rows_still_in_its_wal(tmp_path: Path) -> None:
    db, conversation = filled(tmp_path / "a.agentik.db")
    db.close()
    (tmp_path / "sub").mkdir()
    assert move_sessions_file(tmp_path / "a.agentik.db", tmp_path / "sub" / "b.agentik.db")
    assert not list(tmp_path.glob("a.agentik.db*"))
    with SessionDB(tmp_path / "sub" / "b.agentik.db") as moved:
        assert moved.get_conversation(conversation).message_count == 3


def test_the_writer_moves_its_own_open_file_and_writes_on_there(tmp_path: Path) -> None:
    db, conversation = filled(tmp_path / "a.agentik.db")
    db.relocate(tmp_path / "b.agentik.db")
    db.begin_turn(conversation, UserMessage(content="after the move"))
    db.close()
    assert not list(tmp_path.glob("a.agentik.db*"))
    with SessionDB(tmp_path / "b.agentik.db") as moved:
        assert moved.get_conversation(conversation).message_count == 4


def test_a_move_never_overwrites_a_file_already_there(tmp_path: Path) -> None:
    SessionDB(tmp_path / "a.agentik.db").close()
    SessionDB(tmp_path / "b.agentik.db").close()
    try:
        move_sessions_file(tmp_path / "a.agentik.db", tmp_path / "b.agentik.db")
    except FileExistsError:
        pass
    else:
        raise AssertionError("the move overwrote b.agentik.db")
    assert (tmp_path / "a.agentik.db").exists()


def test_a_copy_holds_the_rows_of_an_open_writer(tmp_path: Path) -> None:
    db, conversation = filled(tmp_path / "a.agentik.db")
    try:
        assert copy_sessions_file(tmp_path / "a.agentik.db", tmp_path / "copy.agentik.db")
    finally:
        db.close()
    with SessionDB(tmp_path / "copy.agentik.db") as copy:
        assert copy.get_conversation(conversation).message_count == 3


def test_a_file_recording_another_notebook_is_set_aside_and_a_new_one_started(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "a.agentik.db") as old:
        old.bind_notebook("the-old-notebook")
        old.create_conversation("Someone else's")
    notebook = notebook_with_id(tmp_path / "a.ipynb", "the-new-notebook")

    db, note = open_for_notebook(tmp_path / "a.agentik.db", notebook)
    try:
        assert db.list_conversations() == []
        assert db.binding() is not None and db.binding().notebook_id == "the-new-notebook"  # type: ignore[union-attr]
    finally:
        db.close()
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("a.agentik-aside-")]
    assert len(kept) == 1 and note is not None and kept[0].name in note
    with SessionDB(kept[0]) as aside:
        assert [c.title for c in aside.list_conversations()] == ["Someone else's"]


def test_the_notebooks_own_file_opens_as_it_is(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "a.agentik.db") as old:
        old.bind_notebook("same")
        old.create_conversation("Mine")
    db, note = open_for_notebook(tmp_path / "a.agentik.db", notebook_with_id(tmp_path / "a.ipynb", "same"))
    with db:
        assert [c.title for c in db.list_conversations()] == ["Mine"] and note is None


def test_a_new_file_records_a_notebook_without_an_id_under_a_new_one(tmp_path: Path) -> None:
    notebook = notebook_with_id(tmp_path / "a.ipynb", None)
    db, note = open_for_notebook(tmp_path / "a.agentik.db", notebook)
    db.close()
    binding = file_binding(tmp_path / "a.agentik.db")
    assert note is None and binding is not None and len(binding.notebook_id) == 32
    assert "agentik" not in json.loads(notebook.read_text())["metadata"]  # the kernel never writes the notebook
