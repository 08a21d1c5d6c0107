"""The event log: sessions as hash-chained, append-only streams over a recorder.

The append path (encode, chain, pack bodies, write once), reading and replay (folds from
snapshots), the bodies of content kept apart from events, redaction and purge, verification
of chains and checkpoints, export and import of our own JSONL format, and storage statistics.
It never decides what a context should hold; that is `sessionstore.context`.
"""

from sessionstore.log._append import (
    Clock,
    Encoded,
    EventLike,
    chain,
    check_session_id,
    check_text_size,
    encode_batch,
    event_row,
)
from sessionstore.log._bodies import decode_stored, pack_all
from sessionstore.log._log import MAX_SEQ, EventLog
from sessionstore.log._redact import collect_bodies, plan_redaction, redacted_parts
from sessionstore.log._search import SearchHit, index_rows, search
from sessionstore.log._stats import SessionSummary, StoreStats, session_summaries, store_stats
from sessionstore.log._transfer import (
    dated_links,
    export_lines,
    insert_links,
    json_object,
    read_export,
)
from sessionstore.log._verify import (
    Checkpoint,
    SessionHead,
    VerifyReport,
    holds,
    missing_session,
    verify_session,
)

__all__ = [
    "MAX_SEQ",
    "Checkpoint",
    "Clock",
    "Encoded",
    "EventLike",
    "EventLog",
    "SearchHit",
    "SessionHead",
    "SessionSummary",
    "StoreStats",
    "VerifyReport",
    "chain",
    "check_session_id",
    "check_text_size",
    "collect_bodies",
    "dated_links",
    "decode_stored",
    "encode_batch",
    "event_row",
    "export_lines",
    "holds",
    "index_rows",
    "insert_links",
    "json_object",
    "missing_session",
    "pack_all",
    "plan_redaction",
    "read_export",
    "redacted_parts",
    "search",
    "session_summaries",
    "store_stats",
    "verify_session",
]
