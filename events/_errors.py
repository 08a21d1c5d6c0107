"""Every error sessionstore raises on purpose, in one tree:

    SessionStoreError
     ├── InvalidArgument (ValueError, TypeError)
     │    │                               an argument of the wrong type or out of range
     │    └── InvalidSearchQuery          a search query with no word to look for
     ├── InvalidEvent (ValueError)        wrong shape, NUL or broken UTF-8, unstable floats
     │    ├── UnknownEventType            a `type` this vocabulary does not know
     │    ├── UnsupportedSchemaVersion    written by a newer sessionstore
     │    └── PayloadTooLarge             over the store's `max_payload_bytes`
     ├── InvalidSessionId (ValueError)
     ├── InvalidReplayPoint (ValueError)  `at=` outside the session's history
     ├── UnknownEncoding (ValueError)     a tokenizer tiktoken cannot load offline
     ├── ImportRefused (ValueError)       a file to import is malformed or its chain broken
     ├── InvalidCheckpoint (ValueError)   a checkpoint file `verify --against` cannot read
     ├── SessionExists                    creating or importing a session id already held
     ├── UnknownSession (LookupError)
     ├── NotInContext (LookupError)       a message or part id not in the live context
     ├── ConcurrencyError                 stale `expected_version`; carries the actual one
     ├── CompactionError                  the summarizer failed or returned no text
     ├── CompactionRefused                a refused compaction, stopped (`sessionstore.context`)
     ├── IdempotencyError                 an `event_id` reused for different content
     ├── SchemaMismatch                   the database is not at this code's migration head
     └── DatabaseUnavailable              the database cannot be opened, reached or written

Every error raised by an append leaves the store exactly as it was, and so does every error
raised by a call whose arguments are wrong: arguments are checked before any I/O. The one
exception is an automatic context check (`before_llm_call`) whose compaction fails after it
pruned: its `CompactionError.check` says what it appended.

Which error for what: an argument of the wrong type or out of range is `InvalidArgument`;
content that is well typed but cannot be stored as sent (a NUL, a lone surrogate, a NaN, a
config the vocabulary refuses in an event) is `InvalidEvent`.
"""

from __future__ import annotations


class SessionStoreError(Exception):
    """Base of every error sessionstore raises on purpose."""


class InvalidArgument(SessionStoreError, ValueError, TypeError):
    """An argument the caller passed is of the wrong type or out of range; nothing was written.

    One class for both, and both built-in bases, so every `except` written before keeps
    working: pydantic's errors (what a bad value raised before) are `ValueError`s, and Python
    raises `TypeError` for an argument of the wrong type. The message says which it was.
    """


class InvalidSearchQuery(InvalidArgument):
    """A search query holds no word to look for (it is empty, or only punctuation, which the
    index does not keep), or more words than a search takes; nothing was searched."""


class InvalidEvent(SessionStoreError, ValueError):
    """An event the store refuses: wrong shape, bad text, unstable numbers, too big."""


class UnknownEventType(InvalidEvent):
    """An event `type` that this version of the vocabulary does not know."""

    def __init__(self, event_type: str) -> None:
        shown = event_type if len(event_type) <= 80 else event_type[:77] + "..."
        super().__init__(f"unknown event type {shown!r}")
        self.event_type = event_type


class UnsupportedSchemaVersion(InvalidEvent):
    """A stored event written by a newer vocabulary than this one can read."""

    def __init__(self, event_type: str, stored: int, current: int) -> None:
        super().__init__(
            f"{event_type} schema_version {stored} is newer than this code's {current}; "
            "upgrade sessionstore to read it"
        )
        self.event_type = event_type
        self.stored = stored
        self.current = current


class PayloadTooLarge(InvalidEvent):
    def __init__(self, size: int, limit: int, event_type: str) -> None:
        super().__init__(
            f"{event_type} payload is {size:,} bytes, over the store's limit of {limit:,} "
            "(SessionStore(max_payload_bytes=...))"
        )
        self.size = size
        self.limit = limit


class InvalidSessionId(SessionStoreError, ValueError):
    """Session ids are 1 to 128 characters of printable text."""


class UnknownSession(SessionStoreError, LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r} in this store")
        self.session_id = session_id

    def __str__(self) -> str:  # LookupError would quote the whole message
        return str(self.args[0])


class NotInContext(SessionStoreError, LookupError):
    """A message or part the call names is not in the session's live context (never appended,
    compacted away or reverted)."""

    def __str__(self) -> str:
        return str(self.args[0])


class InvalidReplayPoint(SessionStoreError, ValueError):
    """`at=` names no point of the session: a seq outside 1..version, or a time before it began."""


class UnknownEncoding(SessionStoreError, ValueError):
    """tiktoken cannot load the session's encoding without a download."""


class ImportRefused(SessionStoreError, ValueError):
    """A file to import is malformed, or its hash chain is broken; nothing was written.
    `line` is the 1-based line of the file at fault, when there is one (for a JSON list of
    messages, `unit` is "message" and `line` the message's 1-based index)."""

    def __init__(self, reason: str, line: int | None = None, unit: str = "line") -> None:
        super().__init__(f"{unit} {line}: {reason}" if line is not None else reason)
        self.reason = reason
        self.line = line
        self.unit = unit


class InvalidCheckpoint(SessionStoreError, ValueError):
    """A checkpoint to verify against is not one `Checkpoint.dumps` wrote."""


class SessionExists(SessionStoreError):
    """A new session (created or imported) names a session id this store holds already;
    nothing was written."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} is in this store already")
        self.session_id = session_id


class CompactionError(SessionStoreError):
    """A compaction could not be made; no compaction event was appended. Raised by an
    automatic check, it carries in `check` what that check did before (a prune, say)."""

    check: object = None


class ConcurrencyError(SessionStoreError):
    """Another writer appended first. Re-read the session and decide again."""

    def __init__(self, session_id: str, expected: int, actual: int) -> None:
        super().__init__(
            f"session {session_id!r} is at version {actual}, not the expected {expected}"
        )
        self.session_id = session_id
        self.expected = expected
        self.actual = actual


class IdempotencyError(SessionStoreError):
    """An `event_id` that is already stored was sent again with different content."""

    def __init__(self, session_id: str, event_id: str, detail: str) -> None:
        super().__init__(f"session {session_id!r}, event {event_id}: {detail}")
        self.session_id = session_id
        self.event_id = event_id


class SchemaMismatch(SessionStoreError):
    """The database schema is not the one this code expects."""


class DatabaseUnavailable(SessionStoreError):
    """The database could not be opened, reached or written: unreachable, locked past the
    timeout, read-only, full, or not a database."""


def one_line(exc: BaseException) -> str:
    """`TypeName: the first line of its message` (at most 200 characters), for log lines."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__
