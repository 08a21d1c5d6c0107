"""sessionstore: an append-only, event-sourced store for LLM agent sessions.

from store import SessionStore
store = SessionStore()                      # $SESSIONSTORE_URL, else ./sessions.db
store.append(session_id, [SessionStarted(title="fix bug")], expected_version=0)
"""

from events import ChainReport, NewEvent, RecordedEvent
from store._errors import (
    ConcurrencyError,
    DatabaseUnavailable,
    IdempotencyError,
    InvalidEvent,
    InvalidSessionId,
    PayloadTooLarge,
    SchemaMismatch,
    SessionStoreError,
    UnknownEventType,
    UnknownSession,
    UnsupportedSchemaVersion,
)
from store._rows import SessionInfo
from store._store import SessionStore

__all__ = [
    "ChainReport",
    "ConcurrencyError",
    "DatabaseUnavailable",
    "IdempotencyError",
    "InvalidEvent",
    "InvalidSessionId",
    "NewEvent",
    "PayloadTooLarge",
    "RecordedEvent",
    "SchemaMismatch",
    "SessionInfo",
    "SessionStore",
    "SessionStoreError",
    "UnknownEventType",
    "UnknownSession",
    "UnsupportedSchemaVersion",
]
