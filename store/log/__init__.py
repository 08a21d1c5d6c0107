"""The event log: sessions as hash-chained, append-only streams over a recorder.

The append path (encode, chain, pack bodies, write once), reading and replay (folds from
snapshots), the bodies of content kept apart from events, redaction and purge, verification
of chains and checkpoints, export and import of our own JSONL format, and storage statistics.
It never decides what a context should hold; that is `sessionstore.context`.

The append path, replay and verification need the models (pydantic) and the folds; listing
sessions needs neither. Their names are imported from their modules on first use (PEP 562), so
`sessionstore ls` loads only what a listing reads.
"""

from __future__ import annotations

import typing

from sessionstore.events import lazy_exports as _lazy_exports
from sessionstore.log._session_id import check_session_id
from sessionstore.log._stats import SessionSummary, StoreStats, session_summaries, store_stats

if typing.TYPE_CHECKING:  # what type checkers see; at run time `__getattr__` imports them
    from sessionstore.log._append import (
        Clock,
        Encoded,
        EventLike,
        chain,
        check_text_size,
        encode_batch,
        encode_event,
        event_row,
    )
    from sessionstore.log._bodies import decode_stored, pack_all
    from sessionstore.log._log import MAX_SEQ, EventLog
    from sessionstore.log._redact import plan_redaction, redacted_parts
    from sessionstore.log._search import SearchHit, index_rows, search
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
    "dated_links",
    "decode_stored",
    "encode_batch",
    "encode_event",
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

_HOMES: dict[str, tuple[str, ...]] = {
    "sessionstore.log._append": (
        "Clock",
        "Encoded",
        "EventLike",
        "chain",
        "check_text_size",
        "encode_batch",
        "encode_event",
        "event_row",
    ),
    "sessionstore.log._bodies": (
        "decode_stored",
        "pack_all",
    ),
    "sessionstore.log._log": (
        "MAX_SEQ",
        "EventLog",
    ),
    "sessionstore.log._redact": (
        "plan_redaction",
        "redacted_parts",
    ),
    "sessionstore.log._search": (
        "SearchHit",
        "index_rows",
        "search",
    ),
    "sessionstore.log._transfer": (
        "dated_links",
        "export_lines",
        "insert_links",
        "json_object",
        "read_export",
    ),
    "sessionstore.log._verify": (
        "Checkpoint",
        "SessionHead",
        "VerifyReport",
        "holds",
        "missing_session",
        "verify_session",
    ),
}
"""The modules imported on first use, and the names of ours each defines."""
__getattr__, __dir__ = _lazy_exports(__name__, _HOMES, globals())
