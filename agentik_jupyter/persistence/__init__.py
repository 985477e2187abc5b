"""Sessions that survive: an SQLite file beside the notebook.

``locate_db`` finds the file, ``SessionDB`` (threads) / ``AsyncSessionDB`` (the kernel's
event loop) read and write it, ``context_budget`` says how much working memory to send.
"""

from agentik_jupyter.errors import (
    ConversationNotFoundError,
    DatabaseBusyError,
    NotASessionDBError,
    SchemaVersionError,
    SessionDBError,
    TemporaryConversationError,
    TurnNotFoundError,
    TurnStateError,
    WorkingMemoryError,
)
from agentik_jupyter.persistence.async_session import AsyncSessionDB
from agentik_jupyter.persistence.budget import (
    CONTEXT_TOKENS_ENV,
    TokenEstimator,
    context_budget,
    context_window,
    estimate_tokens,
)
from agentik_jupyter.persistence.models import AuditEntry, AuditPage, AuditRef, ConversationInfo, TurnUsage
from agentik_jupyter.persistence.pairing import check_turn, complete_pairs
from agentik_jupyter.persistence.paths import DB_PATH_ENV, DBLocation, db_path_for, find_notebook_path, locate_db
from agentik_jupyter.persistence.reader import MAX_PAGE_SIZE, PAGE_SIZE, SessionReader
from agentik_jupyter.persistence.rewind import REWOUND_CODE, TurnRow
from agentik_jupyter.persistence.schema import CURRENT_VERSION
from agentik_jupyter.persistence.sqlite_session import INTERRUPTED_CODE, INTERRUPTED_MESSAGE, SessionDB, default_title

__all__ = [
    "AsyncSessionDB",
    "AuditEntry",
    "AuditPage",
    "AuditRef",
    "CONTEXT_TOKENS_ENV",
    "CURRENT_VERSION",
    "ConversationInfo",
    "ConversationNotFoundError",
    "DBLocation",
    "DB_PATH_ENV",
    "DatabaseBusyError",
    "INTERRUPTED_CODE",
    "INTERRUPTED_MESSAGE",
    "MAX_PAGE_SIZE",
    "NotASessionDBError",
    "PAGE_SIZE",
    "REWOUND_CODE",
    "SchemaVersionError",
    "SessionDB",
    "SessionDBError",
    "SessionReader",
    "TemporaryConversationError",
    "TokenEstimator",
    "TurnNotFoundError",
    "TurnRow",
    "TurnStateError",
    "TurnUsage",
    "WorkingMemoryError",
    "check_turn",
    "complete_pairs",
    "context_budget",
    "context_window",
    "db_path_for",
    "default_title",
    "estimate_tokens",
    "find_notebook_path",
    "locate_db",
]
