"""The session store: one SQLite file per notebook, an audit log and a working memory.

- The audit log (table ``message``) is append-only and holds everything that happened,
  failed turns' errors included; the panel replays it on resume.
- Working memory (table ``working_memory``) is what the model is sent. The user message
  enters it when the turn begins (so a retry after a failure still has the question); the
  rest of the turn follows in one transaction when the turn completes, so it never holds an
  unpaired tool call, and a failed turn leaves only its question there.

Every method is synchronous and thread-safe (one connection behind a lock). Code on the
kernel's event loop uses ``AsyncSessionDB`` instead. Temporary sessions (``%%agent --temp``)
are never written: keep them in memory and do not call this store for them.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from agentik_jupyter.errors import (
    ConversationNotFoundError,
    SessionDBError,
    TemporaryConversationError,
    TurnNotFoundError,
    TurnStateError,
)
from agentik_jupyter.ids import is_session_id, valid_id_sql
from agentik_jupyter.persistence.binding import Binding, binding_row, write_binding
from agentik_jupyter.persistence.budget import (
    CachedEstimate,
    TokenEstimator,
    estimate_tokens,
    first_turn_to_keep,
    wire_text,
)
from agentik_jupyter.persistence.connection import (
    DEFAULT_BUSY_TIMEOUT_S,
    DEFAULT_RETRY_DEADLINE_S,
    connect,
    read_snapshot,
    with_retry,
    write_transaction,
)
from agentik_jupyter.persistence.models import AuditPage, AuditRef, ConversationInfo, TurnUsage
from agentik_jupyter.persistence.pages import read_page
from agentik_jupyter.persistence.pairing import check_turn, complete_pairs
from agentik_jupyter.persistence.relocate import move_sessions_file
from agentik_jupyter.persistence.rewind import REWOUND_CODE, TurnRow, drop_working, list_turns
from agentik_jupyter.persistence.schema import CONVERSATION_SELECT, LISTED, check_version, conversation_info, migrate
from agentik_jupyter.persistence.usage import record_usage, turn_usages
from agentik_jupyter.persistence.working import insert_working, is_committed, replace_working
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.types import ChatMessage, ErrorRecord, PersistedMessage, Usage, UserMessage, new_id, now

T = TypeVar("T")

INTERRUPTED_CODE = "interrupted"
INTERRUPTED_MESSAGE = "Interrupted by the user"
TITLE_MAX_CHARS = 60


def default_title(text: str, limit: int = TITLE_MAX_CHARS) -> str | None:
    """The first line of the first user message, whitespace collapsed, cut at ``limit``."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    line = " ".join(lines[0].split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


class SessionDB:
    """All sessions of one notebook, in one SQLite file; safe to share with other processes."""

    def __init__(
        self,
        path: Path | str,
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        retry_deadline_s: float = DEFAULT_RETRY_DEADLINE_S,
        estimator: TokenEstimator = estimate_tokens,
    ) -> None:
        self.path = Path(path)
        self.estimator = estimator
        self._costs = CachedEstimate(lambda payload: estimator(wire_text(ChatMessage.model_validate_json(payload))))
        self._retry_deadline_s = retry_deadline_s
        self._busy_timeout_s = busy_timeout_s
        self._lock = threading.Lock()
        check_version(self.path)
        self._conn: sqlite3.Connection | None = connect(self.path, busy_timeout_s)
        try:
            self.schema_version = with_retry(
                lambda: migrate(self._require_open(), self.path), deadline_s=retry_deadline_s, what=str(self.path)
            )
        except BaseException:
            self.close()
            raise

    # ---- plumbing ----

    def close(self) -> None:
        """Close the connection (SQLite checkpoints the WAL when the last one closes)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def relocate(self, new_path: Path) -> None:
        """Move the file (side files too, no committed row left behind) and go on writing there."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()  # ours closed first, so the checkpoint can empty the WAL
                self._conn = None
            try:
                # (already there when its folder was renamed: the files went with it)
                if move_sessions_file(self.path, new_path) or os.path.lexists(new_path):
                    self.path = new_path
            finally:
                self._conn = connect(self.path, self._busy_timeout_s)

    def binding(self) -> Binding | None:
        """The notebook this file belongs to (binding.py), if it records one."""
        return self._read(binding_row)

    def bind_notebook(self, notebook_id: str, origin: str | None = None) -> None:
        self._write(lambda conn: write_binding(conn, notebook_id, origin))

    def __enter__(self) -> SessionDB:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _require_open(self) -> sqlite3.Connection:
        if self._conn is None:
            raise SessionDBError(f"the sessions file {self.path} is closed")
        return self._conn

    def _write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            conn = self._require_open()
            return with_retry(
                lambda: write_transaction(conn, body), deadline_s=self._retry_deadline_s, what=str(self.path)
            )

    def _read(self, body: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            conn = self._require_open()
            return with_retry(lambda: read_snapshot(conn, body), deadline_s=self._retry_deadline_s, what=str(self.path))

    def _conversation_row(self, conn: sqlite3.Connection, conversation_id: str) -> tuple:
        row = None
        if is_session_id(conversation_id):
            row = conn.execute(CONVERSATION_SELECT + " WHERE c.id = ?", (conversation_id,)).fetchone()
        if row is None:
            raise ConversationNotFoundError(conversation_id, self.path)
        return row

    def _writable_row(self, conn: sqlite3.Connection, conversation_id: str) -> tuple:
        row = self._conversation_row(conn, conversation_id)
        if row[2]:
            raise TemporaryConversationError(
                f"session {conversation_id!r} is temporary: keep it in memory, do not write it"
            )
        return row

    @staticmethod
    def _touch(conn: sqlite3.Connection, conversation_id: str) -> None:
        conn.execute("UPDATE conversation SET updated_at = ? WHERE id = ?", (now(), conversation_id))

    @staticmethod
    def _require_turn(conn: sqlite3.Connection, conversation_id: str, turn_id: str) -> None:
        row = conn.execute(
            "SELECT 1 FROM message WHERE conversation_id = ? AND turn_id = ? AND role = 'user' LIMIT 1",
            (conversation_id, turn_id),
        ).fetchone()
        if row is None:
            raise TurnNotFoundError(conversation_id, turn_id)

    @staticmethod
    def _insert_record(
        conn: sqlite3.Connection, conversation_id: str, turn_id: str, record: PersistedMessage
    ) -> AuditRef:
        payload = scrub(record.model_dump_json())
        existing = conn.execute(
            "SELECT conversation_id, turn_id, seq, payload_json FROM message WHERE id = ?", (record.id,)
        ).fetchone()
        if existing is not None:
            if existing[:2] == (conversation_id, turn_id) and existing[3] == payload:
                return AuditRef(message_id=record.id, seq=existing[2], turn_id=turn_id)
            raise TurnStateError(f"message id {record.id!r} is already recorded with other content")
        seq = conn.execute(
            "SELECT coalesce(max(seq), 0) + 1 FROM message WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO message (id, conversation_id, turn_id, seq, role, payload_json, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (record.id, conversation_id, turn_id, seq, record.kind, payload, now()),
        )
        return AuditRef(message_id=record.id, seq=seq, turn_id=turn_id)

    # ---- conversations ----

    def create_conversation(
        self, title: str | None = None, is_temporal: bool = False, mode: str | None = None
    ) -> ConversationInfo:
        """A new, empty session; without a title it takes the first user message's first line."""
        conversation_id = new_id("conv_")
        stamp = now()

        def body(conn: sqlite3.Connection) -> ConversationInfo:
            conn.execute(
                "INSERT INTO conversation (id, title, is_temporal, created_at, updated_at, mode)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, title, int(is_temporal), stamp, stamp, mode),
            )
            return conversation_info(self._conversation_row(conn, conversation_id))

        return self._write(body)

    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        """The session with this id; raises ConversationNotFoundError."""
        return self._read(lambda conn: conversation_info(self._conversation_row(conn, conversation_id)))

    def latest_conversation(self) -> ConversationInfo | None:
        """The most recently updated non-temporary session: the one ``%%agent`` resumes."""

        def body(conn: sqlite3.Connection) -> ConversationInfo | None:
            row = conn.execute(
                CONVERSATION_SELECT + " WHERE " + LISTED + " ORDER BY c.updated_at DESC, c.rowid DESC LIMIT 1"
            ).fetchone()
            return conversation_info(row) if row else None

        return self._read(body)

    def list_conversations(
        self, limit: int = 50, offset: int = 0, include_temporal: bool = False
    ) -> list[ConversationInfo]:
        """Sessions, most recently updated first, with their message counts."""
        where = " WHERE " + (valid_id_sql("c.id") if include_temporal else LISTED)
        sql = CONVERSATION_SELECT + where + " ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ? OFFSET ?"
        return self._read(lambda conn: [conversation_info(row) for row in conn.execute(sql, (limit, offset))])

    def rename_conversation(self, conversation_id: str, title: str | None) -> ConversationInfo:
        """Set the title (blank clears it) and bump updated_at, as the spec's rename does."""
        clean = " ".join((title or "").split()) or None

        def body(conn: sqlite3.Connection) -> ConversationInfo:
            self._conversation_row(conn, conversation_id)
            conn.execute(
                "UPDATE conversation SET title = ?, updated_at = ? WHERE id = ?", (clean, now(), conversation_id)
            )
            return conversation_info(self._conversation_row(conn, conversation_id))

        return self._write(body)

    def set_mode(self, conversation_id: str, mode: str | None) -> ConversationInfo:
        """Save the session's mode (None: back to the default); the session's place in the list stays."""

        def body(conn: sqlite3.Connection) -> ConversationInfo:
            self._conversation_row(conn, conversation_id)
            conn.execute("UPDATE conversation SET mode = ? WHERE id = ?", (mode, conversation_id))
            return conversation_info(self._conversation_row(conn, conversation_id))

        return self._write(body)

    def delete_conversation(self, conversation_id: str) -> bool:
        """Remove the session and all its rows in one transaction; False if it did not exist."""
        return self._write(
            lambda conn: conn.execute("DELETE FROM conversation WHERE id = ?", (conversation_id,)).rowcount > 0
        )

    # ---- turns ----

    def begin_turn(self, conversation_id: str, user: UserMessage) -> str:
        """Start a turn: the user message goes to the audit log and to working memory (as the
        spec says, so "try again" after a failure reaches the model with the question); returns
        the new turn id."""
        turn_id = new_id("turn_")
        question = user.chat_message()

        def body(conn: sqlite3.Connection) -> str:
            row = self._writable_row(conn, conversation_id)
            self._insert_record(conn, conversation_id, turn_id, user)
            insert_working(conn, conversation_id, turn_id, [question])
            if row[1] is None:
                conn.execute(
                    "UPDATE conversation SET title = ? WHERE id = ?",
                    (default_title(scrub(user.content)), conversation_id),
                )
            self._touch(conn, conversation_id)
            return turn_id

        return self._write(body)

    def append(self, conversation_id: str, turn_id: str, record: PersistedMessage) -> AuditRef:
        """Append an assistant, tool_call, tool_result or error record to the turn's audit log.

        Idempotent per record id: appending the same record again returns the first AuditRef.
        """
        if isinstance(record, UserMessage):
            raise TurnStateError("a turn has one user message; start a new turn with begin_turn")

        def body(conn: sqlite3.Connection) -> AuditRef:
            self._require_turn(conn, conversation_id, turn_id)
            ref = self._insert_record(conn, conversation_id, turn_id, record)
            self._touch(conn, conversation_id)
            return ref

        return self._write(body)

    def commit_turn(self, conversation_id: str, turn_id: str, working: Sequence[ChatMessage]) -> None:
        """Write the finished turn's working memory (tool pairs, answer; the user message is
        there since begin_turn) in one transaction.

        Raises WorkingMemoryError, before writing anything, if a tool call lacks its result.
        A ChatMessage whose id equals an audit record's id is linked to it (source_message_id).
        """
        check_turn(working)

        def body(conn: sqlite3.Connection) -> None:
            self._require_turn(conn, conversation_id, turn_id)
            insert_working(conn, conversation_id, turn_id, working)
            self._touch(conn, conversation_id)

        self._write(body)

    def fail_turn(self, conversation_id: str, turn_id: str | None, message: str, code: str | None = None) -> AuditRef:
        """Record a failed turn: an error row in the audit log; working memory keeps only the
        question begin_turn wrote, so the next turn ("try again") still has it.

        ``turn_id=None`` is for failures before any turn began (e.g. empty input): the error
        gets a turn of its own.
        """
        record = ErrorRecord(message=message, code=code)

        def body(conn: sqlite3.Connection) -> AuditRef:
            self._writable_row(conn, conversation_id)
            turn = turn_id or new_id("turn_")
            if turn_id is not None:
                self._require_turn(conn, conversation_id, turn_id)
            ref = self._insert_record(conn, conversation_id, turn, record)
            self._touch(conn, conversation_id)
            return ref

        return self._write(body)

    def interrupt_turn(
        self,
        conversation_id: str,
        turn_id: str,
        working: Sequence[ChatMessage],
        message: str = INTERRUPTED_MESSAGE,
    ) -> AuditRef:
        """Close a stopped turn in one transaction: its complete pairs to working memory and
        an error row with code "interrupted" to the audit log.

        Unanswered tool calls are dropped (see ``complete_pairs``). If nothing beyond the user
        message survives, working memory keeps only the question, as for a failed turn; pass a partial
        answer as an assistant message if the model should see it. A turn already committed
        (Stop pressed after the answer was saved) only gets the marker.
        """
        kept = complete_pairs(working) if working else []
        record = ErrorRecord(message=message, code=INTERRUPTED_CODE)

        def body(conn: sqlite3.Connection) -> AuditRef:
            self._require_turn(conn, conversation_id, turn_id)
            if len(kept) > 1 and not is_committed(conn, conversation_id, turn_id):
                insert_working(conn, conversation_id, turn_id, kept)
            ref = self._insert_record(conn, conversation_id, turn_id, record)
            self._touch(conn, conversation_id)
            return ref

        return self._write(body)

    def turns(self, conversation_id: str) -> list[TurnRow]:
        """The session's turns, numbered from 1, with whether each was rewound."""

        def body(conn: sqlite3.Connection) -> list[TurnRow]:
            self._conversation_row(conn, conversation_id)
            return list_turns(conn, conversation_id)

        return self._read(body)

    def rewind_turns(self, conversation_id: str, turn_ids: Sequence[str], message: str) -> None:
        """Take turns back in one transaction: out of working memory, a "rewound" record on each in
        the audit log (which keeps all their messages)."""
        ids = list(turn_ids)

        def body(conn: sqlite3.Connection) -> None:
            self._writable_row(conn, conversation_id)
            for turn_id in ids:
                self._require_turn(conn, conversation_id, turn_id)
            drop_working(conn, conversation_id, ids)
            for turn_id in ids:
                self._insert_record(conn, conversation_id, turn_id, ErrorRecord(message=message, code=REWOUND_CODE))
            self._touch(conn, conversation_id)

        self._write(body)

    # ---- reads ----

    def audit_log(
        self, conversation_id: str, limit: int = 50, before_seq: int | None = None, *, whole_turns: bool = False
    ) -> AuditPage:
        """The newest ``limit`` audit rows older than ``before_seq`` (all if None), oldest first.

        Start with ``before_seq=None`` for the latest page; page back with the returned
        ``next_before_seq`` until it is None. ``whole_turns`` widens a page that would start
        mid-turn back to the turn's first row (see ``pages.read_page``).
        """
        if limit <= 0:
            raise ValueError("limit must be positive")

        def body(conn: sqlite3.Connection) -> AuditPage:
            self._conversation_row(conn, conversation_id)
            return read_page(conn, conversation_id, limit, before_seq, whole_turns=whole_turns)

        return self._read(body)

    def record_usage(
        self, conversation_id: str, turn_id: str, usage: Usage, model: str | None = None, requests: int = 1
    ) -> None:
        """Save the tokens a turn spent (when it ends), so a resumed session keeps its totals."""

        def body(conn: sqlite3.Connection) -> None:
            self._conversation_row(conn, conversation_id)
            record_usage(conn, conversation_id, turn_id, usage, model, requests)

        self._write(body)

    def turn_usages(self, conversation_id: str) -> list[TurnUsage]:
        """The tokens each recorded turn of the conversation spent, oldest first."""

        def body(conn: sqlite3.Connection) -> list[TurnUsage]:
            self._conversation_row(conn, conversation_id)
            return turn_usages(conn, conversation_id)

        return self._read(body)

    def working_memory(self, conversation_id: str, budget_tokens: int | None = None) -> list[ChatMessage]:
        return self.working_memory_cut(conversation_id, budget_tokens)[0]

    def working_memory_cut(
        self, conversation_id: str, budget_tokens: int | None = None
    ) -> tuple[list[ChatMessage], int]:
        """What the model is sent: committed turns in order, the oldest whole turns dropped
        until the rest fits ``budget_tokens`` (None: no limit). The latest turn is always kept.

        The budget covers history only: subtract the system prompt and tool schemas first.
        """

        def body(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            self._conversation_row(conn, conversation_id)
            return conn.execute(
                "SELECT turn_id, payload_json FROM working_memory WHERE conversation_id = ? ORDER BY order_idx",
                (conversation_id,),
            ).fetchall()

        rows = self._read(body)
        turns: list[list[str]] = []
        previous: str | None = None
        for turn_id, payload in rows:
            if turn_id != previous:
                turns.append([])
                previous = turn_id
            turns[-1].append(payload)
        costs = [sum(self._costs(payload) for payload in turn) for turn in turns]
        start = first_turn_to_keep(costs, budget_tokens)
        return [ChatMessage.model_validate_json(payload) for turn in turns[start:] for payload in turn], start

    def working_turns(self, conversation_id: str) -> list[tuple[str, list[ChatMessage]]]:
        """Working memory as whole turns, oldest first: (turn id, its messages)."""

        def body(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            self._conversation_row(conn, conversation_id)
            return conn.execute(
                "SELECT turn_id, payload_json FROM working_memory WHERE conversation_id = ? ORDER BY order_idx",
                (conversation_id,),
            ).fetchall()

        turns: list[tuple[str, list[ChatMessage]]] = []
        for turn_id, payload in self._read(body):
            if not turns or turns[-1][0] != turn_id:
                turns.append((turn_id, []))
            turns[-1][1].append(ChatMessage.model_validate_json(payload))
        return turns

    def compact(
        self,
        conversation_id: str,
        turn_ids: Sequence[str],
        summary: ChatMessage,
        shortened: Sequence[ChatMessage] = (),
    ) -> str:
        """Replace these turns in working memory with one summary message, where the first of them
        was, and store the `shortened` versions of kept messages (the audit log keeps every
        original); returns the summary's turn id."""
        summary_turn = new_id("turn_summary_")

        def body(conn: sqlite3.Connection) -> str:
            self._writable_row(conn, conversation_id)
            marks = ",".join("?" for _ in turn_ids)
            first = conn.execute(
                f"SELECT min(order_idx) FROM working_memory WHERE conversation_id = ? AND turn_id IN ({marks})",
                (conversation_id, *turn_ids),
            ).fetchone()[0]
            if first is None:
                raise TurnStateError("nothing to compact: those turns are not in working memory")
            conn.execute(
                f"DELETE FROM working_memory WHERE conversation_id = ? AND turn_id IN ({marks})",
                (conversation_id, *turn_ids),
            )
            conn.execute(
                "INSERT INTO working_memory"
                " (conversation_id, turn_id, order_idx, source_message_id, payload_json, created_at)"
                " VALUES (?, ?, ?, NULL, ?, ?)",
                (conversation_id, summary_turn, first, scrub(summary.model_dump_json()), now()),
            )
            replace_working(conn, conversation_id, shortened)
            self._touch(conn, conversation_id)
            return summary_turn

        return self._write(body)
