"""Storage: where events are kept, and nothing above it.

The recorder protocol every backend implements (insert-only events, each session's bodies,
snapshots, metadata), the SQL base shared by the SQL backends, SQLite and PostgreSQL (each
dialect's differences in its own module), the memory recorder (the same contract on Python
structures), the schema, the Alembic migration runner, and the choice of backend from a URL.
It knows events and bytes, not sessions' meaning.
"""

from sessionstore.storage._backends import (
    MAX_PARTITIONS,
    PARTITIONS,
    database_file,
    migration_connection,
    open_recorder,
    resolve_url,
)
from sessionstore.storage._migrate import (
    counts_missing,
    distribute,
    ensure_schema,
    grant,
    head_revision,
    refuse_foreign,
    upgrade,
)
from sessionstore.storage._recorder import (
    COMPACTION,
    BodyRow,
    EventRow,
    Head,
    ListingKey,
    LostRace,
    NewSession,
    Recorder,
    SearchFilter,
    SearchRow,
    SessionFilter,
    SessionMetadata,
    StoredEvent,
)
from sessionstore.storage._rows import SessionInfo, as_utc, chain_link
from sessionstore.storage._schema import (
    DISTRIBUTION,
    REDACTED_BODIES,
    SESSION_ID_LENGTH,
    compared,
    metadata,
)
from sessionstore.storage._sqlite import SqliteSynchronous

__all__ = [
    "COMPACTION",
    "DISTRIBUTION",
    "MAX_PARTITIONS",
    "PARTITIONS",
    "REDACTED_BODIES",
    "SESSION_ID_LENGTH",
    "BodyRow",
    "EventRow",
    "Head",
    "ListingKey",
    "LostRace",
    "NewSession",
    "Recorder",
    "SearchFilter",
    "SearchRow",
    "SessionFilter",
    "SessionInfo",
    "SessionMetadata",
    "SqliteSynchronous",
    "StoredEvent",
    "as_utc",
    "chain_link",
    "compared",
    "counts_missing",
    "database_file",
    "distribute",
    "ensure_schema",
    "grant",
    "head_revision",
    "metadata",
    "migration_connection",
    "open_recorder",
    "refuse_foreign",
    "resolve_url",
    "upgrade",
]
