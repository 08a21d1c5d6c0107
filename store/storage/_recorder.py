"""The seam between the store and a database: what a recorder must do.

All SQL and every dialect difference live behind this protocol, one recorder per backend:
`sessionstore.storage._sqlite.SqliteRecorder` and
`sessionstore.storage._postgres.PostgresRecorder`, both built on the shared Core statements of
`sessionstore.storage._sql`, and `sessionstore.storage._memory.MemoryRecorder`, plain Python
structures with the same semantics. Above it the store speaks of sessions, heads and rows, never
of connections or engines (no SQLAlchemy type appears here, so a recorder need not be SQL);
each recorder turns its driver's errors into the store's own in one place (`DatabaseUnavailable`
for a database that cannot be reached, opened or written, `LostRace` for a write that lost to
another writer), the way eventsourcing's recorders do.

`tests/recorders/recorder_contract.py` states this contract once; every recorder passes it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from sessionstore.events import Phrases, SearchEntry
from sessionstore.storage._rows import SessionInfo


class Head(NamedTuple):
    """A session's head: its last event's seq and hash, and when it was recorded."""

    seq: int
    hash: str
    updated_at: datetime


class EventRow(NamedTuple):
    """One `events` row as it is written: `payload` is its JSON text, stored as is (the
    canonical JSON the hash covers)."""

    session_id: str
    seq: int
    event_id: str
    type: str
    schema_version: int
    recorded_at: datetime
    prev_hash: str
    hash: str
    payload: str


class StoredEvent(NamedTuple):
    """One `events` row as it is read back: `position` is its place in the whole log, and
    `payload` the stored JSON as text (PostgreSQL's JSONB gives it back normalised, keys
    reordered and spaces added: `canonical_json` of it is again the text the hash covers)."""

    position: int
    session_id: str
    seq: int
    event_id: str
    type: str
    schema_version: int
    recorded_at: datetime
    prev_hash: str
    hash: str
    payload: str


class BodyRow(NamedTuple):
    """One stored body: its digest (SHA-256 of its UTF-8 bytes), their number, and `data`,
    those bytes as `compression` ("zlib" or "none") left them."""

    digest: str
    size: int
    compression: str
    data: bytes


class NewSession(NamedTuple):
    """The `sessions` row a session's first write creates."""

    title: str
    parent_id: str | None
    parent_seq: int | None
    context_window: int | None = None


class SessionMetadata(NamedTuple):
    """What a session is listed by: the `sessions` row's `app` and `user_id`, its tags."""

    app: str | None = None
    user: str | None = None
    tags: tuple[str, ...] = ()


class ListingKey(NamedTuple):
    """Where a session stands in a listing (newest update first, ties by id): a page that
    ends with it is continued from there (keyset pagination)."""

    updated_at: datetime
    id: str


class SessionFilter(NamedTuple):
    """Which sessions a listing returns, newest update first: those of `app`, of `user`, with
    `tag` (each `None`: any), only those listed after `after` (`None`: from the first),
    `offset` of them skipped and at most `limit` (`None`: all)."""

    app: str | None = None
    user: str | None = None
    tag: str | None = None
    limit: int | None = None
    offset: int = 0
    after: ListingKey | None = None


ALL_SESSIONS = SessionFilter()


class SearchFilter(NamedTuple):
    """What a search looks for: events with a text that holds every one of `phrases`, in
    sessions of `app`, of `user`, with `tag`, in messages of `role`, recorded at or after
    `since` (each `None`: any); at most `limit` of them, newest first."""

    phrases: Phrases
    app: str | None = None
    user: str | None = None
    tag: str | None = None
    role: str | None = None
    since: datetime | None = None
    limit: int = 20


class SearchRow(NamedTuple):
    """An event a search found (once, however many of its texts hold the phrases), with its
    session's title as the `sessions` row has it now."""

    session_id: str
    seq: int
    event_type: str
    recorded_at: datetime
    title: str


COMPACTION = "ContextCompacted"
"""The event type the `sessions` row's `compactions` counts."""


def compactions_in(rows: Sequence[EventRow]) -> int:
    """How many of `rows` are compactions: what a write adds to the row's `compactions`."""
    return sum(row.type == COMPACTION for row in rows)


class StoreCounts(NamedTuple):
    """What a store holds: `payload_bytes` of the events' JSON, and the bodies they refer to
    (texts, each stored once per session), `body_bytes` of them before compression and
    `stored_body_bytes` as kept."""

    sessions: int
    events: int
    payload_bytes: int
    bodies: int = 0
    body_bytes: int = 0
    stored_body_bytes: int = 0


class LostRace(Exception):
    """A write found the head moved, or a unique key taken (a seq, an event id, a session id):
    another writer was first. Nothing was written."""


class Recorder(Protocol):
    """What the store needs of a database. Every method is one short transaction of its own
    (events never change, so reads need no common snapshot); a write is atomic."""

    @property
    def shown_url(self) -> str:
        """The database's URL as messages show it: without its password."""
        ...

    # writing

    def write(
        self,
        session_id: str,
        after: Head | None,
        rows: Sequence[EventRow],
        new: NewSession | None = None,
        bodies: Sequence[BodyRow] = (),
        forget: Sequence[str] = (),
        metadata: SessionMetadata | None = None,
        title: str | None = None,
        live_tokens: int | None = None,
        index: Sequence[SearchEntry] = (),
        unindex: Sequence[str] = (),
    ) -> list[int]:
        """Insert `rows` (which continue the session from `after`) and move the head to the
        last of them, atomically, only if the head is still `after`; a new session (`after`
        is `None`) gets its `sessions` row from `new`. Returns the rows' positions. `LostRace`
        when the head moved or a key is taken, with nothing written.

        The row's counters move with the head: `compactions` by the `ContextCompacted` rows
        among `rows`, `live_tokens` to the figure given (`None`: not counted, for the next
        listing to count).

        In the same transaction: `bodies` are stored as the session's (a digest the session
        holds already is kept); the session's bodies `forget` names are deleted (`rows` must
        hold the `ContentRedacted` event that names them: the database refuses any other
        deletion).
        `metadata`, when given, replaces the session's listing metadata (`rows` hold the
        event that sets it); `title`, when given, replaces its title (`rows` hold the
        redaction that deleted the old one).

        The search index moves with the log: the session's index rows read from the bodies
        `unindex` names are deleted (a redaction's, with nothing of them left in the index's
        storage), then `index` (rows of `rows`' events) is inserted."""
        ...

    def save_snapshot(
        self,
        session_id: str,
        projection: str,
        version: int,
        seq: int,
        state: str,
        now: datetime,
    ) -> None:
        """Store a snapshot's JSON `state`; one already stored under the same key is kept.
        Nothing is stored when the session holds a `ContentRedacted` event after `seq`: the
        fold was read before that redaction and may hold by value (its state, its header)
        what it deleted, and the redaction's `forget_snapshots` may have run already. The
        check and the insert are one transaction that a redaction's append cannot overtake,
        so a snapshot is either refused here or stored before the redaction commits (and
        then forgotten by it)."""
        ...

    def forget_snapshots(self, session_ids: Sequence[str]) -> None:
        """Delete the sessions' snapshots (a cache: after a redaction they describe content
        the log no longer holds)."""
        ...

    # reading

    def head(self, session_id: str) -> Head | None: ...

    def events(self, session_id: str, from_seq: int, to_seq: int) -> Iterator[StoredEvent]:
        """The session's events with `from_seq <= seq <= to_seq`, in seq order, read a page at
        a time (no connection is held between pages)."""
        ...

    def events_at(self, session_id: str, seqs: Sequence[int]) -> Iterator[StoredEvent]:
        """The session's events at `seqs` (any order, missing ones skipped), in seq order."""
        ...

    def events_by_id(self, session_id: str, event_ids: Sequence[str]) -> list[StoredEvent]: ...

    def bodies(self, session_id: str, digests: Sequence[str]) -> list[BodyRow]:
        """The bodies among `digests` that the session references (a redacted one is not)."""
        ...

    def body_digests(self, session_id: str) -> list[str]:
        """Every body the session references."""
        ...

    def scrub(self, *, wait: bool = True) -> bool:
        """Make deleted bodies unreadable in the database's files too (SQLite: its WAL
        checkpointed and truncated; deleted pages are zeroed as they are freed). `False`
        when that could not finish now (a reader still holds old pages, or, with
        `wait=False`, a writer is busy). Idempotent: it can run any time, again and again."""
        ...

    def event_hash(self, session_id: str, seq: int) -> str | None:
        """The hash of the session's event `seq`, `None` when there is none."""
        ...

    def seq_at(self, session_id: str, moment: datetime) -> int | None:
        """The last seq recorded at or before `moment` (aware, within years 1..9999 in UTC)."""
        ...

    def session(self, session_id: str) -> SessionInfo | None: ...

    def sessions(self, where: SessionFilter = ALL_SESSIONS) -> list[SessionInfo]:
        """The sessions `where` selects, most recently updated first."""
        ...

    def search(self, where: SearchFilter) -> list[SearchRow]:
        """The events `where` finds, newest first (ties: by session id, then newest seq)."""
        ...

    def indexed(self, session_id: str) -> list[tuple[int, int, int, str | None]]:
        """The session's search index rows as (seq, part, chunk, digest), in that order: what
        `verify` compares with the rows its events give."""
        ...

    def each_indexed(self, session_id: str) -> Iterator[tuple[int, int, int, str | None]]:
        """The session's search index rows as (seq, part, chunk, digest), in any order, read
        as they are consumed: `verify` sums them without holding the rows of a long session
        (the table has no index by seq to read them a page of seqs at a time)."""
        ...

    def session_ids(self) -> list[str]:
        """Every id with a `sessions` row or events, sorted: what `verify_all` checks."""
        ...

    def forks_of(self, session_ids: Sequence[str]) -> list[str]:
        """The sessions whose parent is one of `session_ids` (their forks, one level down)."""
        ...

    def count_live_tokens(self, session_id: str, head_seq: int, live_tokens: int | None) -> bool:
        """Write the session's live tokens as counted at `head_seq` (`None`: forget them),
        only if its head is still there; whether it was."""
        ...

    def uncounted_sessions(self) -> list[tuple[str, int]]:
        """(id, head seq) of every session whose live tokens are not counted, by id."""
        ...

    def forget_live_tokens(self, session_ids: Sequence[str]) -> None:
        """Mark the sessions' live tokens not counted (their forks' history changed: a parent
        was redacted), for the next listing to count."""
        ...

    def newest_snapshot(
        self, session_id: str, projection: str, version: int, to_seq: int
    ) -> tuple[int, str] | None:
        """(seq, state JSON) of the newest snapshot at or before `to_seq`."""
        ...

    def snapshots(self, session_id: str, projection: str, version: int) -> list[tuple[int, str]]:
        """(seq, state JSON) of every snapshot of the session, oldest first."""
        ...

    # figures

    def counts(self) -> StoreCounts:
        """Sessions, events and the bytes of their payloads' JSON text (UTF-8)."""
        ...

    def payloads_of_type(
        self, types: Sequence[str], session_id: str | None = None
    ) -> Iterator[tuple[str, int, str]]:
        """(type, schema_version, payload JSON) of every event of `types` (of `session_id`
        alone when given), in any order."""
        ...

    def count_of_type(self, event_type: str, session_id: str | None) -> dict[str, int]:
        """Per session (or just `session_id`), how many of its events are of `event_type`."""
        ...

    # lifecycle

    def migrate(self, revision: str, *, refuse: ForeignCheck) -> None:
        """Run the Alembic revisions up to `revision` in one write transaction, with other
        migrating processes kept out; `refuse` looks at the database first, under the lock.
        A recorder with no schema to migrate (memory) is always at head: `refuse` looks, and
        nothing else happens."""
        ...

    def database_state(self) -> DatabaseState:
        """What the database holds, found without changing it."""
        ...

    def close(self) -> None: ...


class DatabaseState(NamedTuple):
    """What opening a database needs to know about it."""

    exists: bool
    """False only for a SQLite file that is not there (nothing else can be told apart)."""
    revision: str | None
    """The Alembic revision stored in it, if any."""
    tables: frozenset[str]
    """Its tables and views, `alembic_version` aside."""
    file: str | None = None
    """The file it lives in, as the URL names it (a SQLite file); `None` for any other."""
    distributed: frozenset[str] | None = None
    """Its tables that Citus spreads over workers, and the redaction's function once Citus
    delegates it to them (`REDACTED_BODIES`), on a database with the Citus extension
    (`PostgresRecorder.distribute`); `None` where there is no Citus."""


class ForeignCheck(Protocol):
    def __call__(self, state: DatabaseState, /) -> None: ...


__all__ = [
    "BodyRow",
    "DatabaseState",
    "EventRow",
    "ForeignCheck",
    "Head",
    "ListingKey",
    "LostRace",
    "NewSession",
    "Recorder",
    "SearchFilter",
    "SearchRow",
    "StoreCounts",
    "StoredEvent",
]
