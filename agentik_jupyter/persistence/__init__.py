"""Sessions that survive: an SQLite file beside the notebook.

``locate_db`` finds the file, ``SessionDB`` (threads) / ``AsyncSessionDB`` (the kernel's
event loop) read and write it, ``context_budget`` says how much working memory to send.
"""

from .async_session import AsyncSessionDB
from .budget import CONTEXT_TOKENS_ENV, TokenEstimator, context_budget, context_window, estimate_tokens
from .errors import (
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
from .models import AuditEntry, AuditPage, AuditRef, ConversationInfo
from .pairing import check_turn, complete_pairs
from .paths import DB_PATH_ENV, DBLocation, db_path_for, find_notebook_path, locate_db
from .reader import MAX_PAGE_SIZE, PAGE_SIZE, SessionReader
from .schema import CURRENT_VERSION
from .sqlite_session import INTERRUPTED_CODE, INTERRUPTED_MESSAGE, SessionDB, default_title

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
    "SchemaVersionError",
    "SessionDB",
    "SessionDBError",
    "SessionReader",
    "TemporaryConversationError",
    "TokenEstimator",
    "TurnNotFoundError",
    "TurnStateError",
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
