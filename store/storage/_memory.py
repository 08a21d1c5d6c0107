"""The memory recorder: the recorder contract on Python dicts and lists, for tests and
throwaway stores (`memory://`, `memory://NAME`).

It keeps what the SQL recorders keep, with their semantics: events insert-only, positions
increasing across sessions, one head per session moved only from the head a write read
(`LostRace` otherwise), each event's seq and id unique in its session, bodies shared by
digest and referenced per session, deleted only once no session references them and only
when a `ContentRedacted` event names them (what the SQL schema's triggers enforce), first
snapshot under a key kept, sessions listed newest update first with ties by id. A write
checks everything it could lose on before it changes anything, so a lost write leaves no
trace, as a rolled-back transaction does.

One lock serializes every call, reads included: the async face calls the store from worker
threads, and a write must be seen whole or not at all. There is no schema to migrate: a
memory database is always at the head revision.

`memory://` is a private database, new each time it is opened and gone with its recorder
(as SQLite's `sqlite://` is). `memory://NAME` is the database of that name in this process:
every store opened on the same URL shares it, and it lives until the process ends (or
`discard(NAME)`).
"""

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa

from sessionstore.events import DatabaseUnavailable, SchemaMismatch, SearchEntry, holds_phrases
from sessionstore.storage._migrate import head_revision
from sessionstore.storage._recorder import (
    ALL_SESSIONS,
    BodyRow,
    DatabaseState,
    EventRow,
    ForeignCheck,
    Head,
    LostRace,
    NewSession,
    SearchFilter,
    SearchRow,
    SessionFilter,
    SessionMetadata,
    StoreCounts,
    StoredEvent,
    compactions_in,
)
from sessionstore.storage._rows import SessionInfo, as_utc
from sessionstore.storage._schema import REDACTION
from sessionstore.storage._schema import metadata as schema

MEMORY = "memory"
"""The URL scheme of memory databases."""


@dataclass(slots=True)
class _SessionRow:
    """A `sessions` row, with its tags."""

    title: str
    head_seq: int
    head_hash: str
    parent_id: str | None
    parent_seq: int | None
    created_at: datetime
    updated_at: datetime
    app: str | None = None
    user: str | None = None
    tags: tuple[str, ...] = ()
    context_window: int | None = None
    live_tokens: int | None = None
    compactions: int = 0

    def info(self, session_id: str) -> SessionInfo:
        return SessionInfo(
            id=session_id,
            title=self.title,
            version=self.head_seq,
            parent_id=self.parent_id,
            parent_seq=self.parent_seq,
            created_at=self.created_at,
            updated_at=self.updated_at,
            head_hash=self.head_hash,
            app=self.app,
            user=self.user,
            tags=self.tags,
            context_window=self.context_window,
            live_tokens=self.live_tokens,
            compactions=self.compactions,
        )


@dataclass(slots=True)
class _Stream:
    """One session's events, in seq order, and its indexes."""

    seqs: list[int] = field(default_factory=list)
    events: list[StoredEvent] = field(default_factory=list)
    by_seq: dict[int, StoredEvent] = field(default_factory=dict)
    by_id: dict[str, StoredEvent] = field(default_factory=dict)
    redacted: set[str] = field(default_factory=set)
    """Every digest its `ContentRedacted` events name."""

    def add(self, event: StoredEvent) -> None:
        if not self.seqs or event.seq > self.seqs[-1]:
            self.seqs.append(event.seq)
            self.events.append(event)
        else:  # an import may write seqs out of order: keep them sorted all the same
            at = bisect.bisect(self.seqs, event.seq)
            self.seqs.insert(at, event.seq)
            self.events.insert(at, event)
        self.by_seq[event.seq] = event
        self.by_id[event.event_id] = event

    def between(self, low: int, high: int) -> list[StoredEvent]:
        return self.events[
            bisect.bisect_left(self.seqs, low) : bisect.bisect_right(self.seqs, high)
        ]


@dataclass(slots=True)
class MemoryDatabase:
    """What a memory recorder holds; every access under `lock`."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    last_position: int = 0
    sessions: dict[str, _SessionRow] = field(default_factory=dict)
    streams: dict[str, _Stream] = field(default_factory=dict)
    event_count: int = 0
    payload_bytes: int = 0
    bodies: dict[str, dict[str, BodyRow]] = field(default_factory=dict)
    """Per session, its bodies by digest (each session holds its own, as the `blobs` table)."""
    snapshots: dict[tuple[str, str, int], dict[int, str]] = field(default_factory=dict)
    """Per (session, projection, version), each snapshot's state JSON by seq."""
    index: dict[str, list[tuple[SearchEntry, tuple[str, ...]]]] = field(default_factory=dict)
    """Per session, its search index rows, each with its words split."""


_NAMED: dict[str, MemoryDatabase] = {}
_NAMED_LOCK = threading.Lock()


def database_named(name: str) -> MemoryDatabase:
    """The process's memory database called `name`, made on first use."""
    with _NAMED_LOCK:
        return _NAMED.setdefault(name, MemoryDatabase())


def discard(name: str) -> None:
    """Forget the memory database called `name` (stores still open on it keep it); the next
    open of `memory://NAME` starts empty."""
    with _NAMED_LOCK:
        _NAMED.pop(name, None)


def memory_name(url: sa.URL) -> str:
    """The name a memory URL gives (`""`: a private database); `DatabaseUnavailable` for a
    URL with anything else in it (a path, a port, credentials, options)."""
    if url.username or url.password or url.port or url.database or url.query:
        shown = url.render_as_string(hide_password=True)
        raise DatabaseUnavailable(
            f"{shown}: a memory database's URL is memory:// (private to the store) or "
            "memory://NAME (shared by every store of this process that opens it), nothing more"
        )
    return url.host or ""


def _digests_named(rows: Sequence[EventRow]) -> set[str]:
    """The digests the redactions among `rows` name (their payloads' `digests`)."""
    named: set[str] = set()
    for row in rows:
        if row.type != REDACTION:
            continue
        digests = json.loads(row.payload).get("digests")
        if isinstance(digests, list):
            named.update(digest for digest in digests if isinstance(digest, str))
    return named


class MemoryRecorder:
    """The recorder contract in this process's memory; `Recorder` (in `_recorder`) is the
    contract, `tests/recorders` checks this recorder against it like the others."""

    def __init__(self, url: sa.URL) -> None:
        name = memory_name(url)
        self.name = name
        self._db = database_named(name) if name else MemoryDatabase()

    @property
    def shown_url(self) -> str:
        return f"{MEMORY}://{self.name}"

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
        db = self._db
        with db.lock:
            last = rows[-1]
            row = db.sessions.get(session_id)
            if after is None:
                assert new is not None, "a new session's first write names its sessions row"
                if row is not None:
                    raise LostRace
            elif row is None or row.head_seq != after.seq:
                raise LostRace
            self._refuse_taken_keys(session_id, rows, metadata)
            named = _digests_named(rows)
            self._refuse_unnamed_deletions(session_id, bodies, forget, named)

            # nothing below can fail: the write is whole
            if row is None:
                assert new is not None
                db.sessions[session_id] = _SessionRow(
                    new.title,
                    last.seq,
                    last.hash,
                    new.parent_id,
                    new.parent_seq,
                    as_utc(rows[0].recorded_at),
                    as_utc(last.recorded_at),
                    context_window=new.context_window,
                    live_tokens=live_tokens,
                    compactions=compactions_in(rows),
                )
            else:
                row.head_seq, row.head_hash = last.seq, last.hash
                row.updated_at = as_utc(last.recorded_at)
                row.live_tokens = live_tokens
                row.compactions += compactions_in(rows)
            stream = db.streams.setdefault(session_id, _Stream())
            positions = []
            for event_row in rows:
                db.last_position += 1
                positions.append(db.last_position)
                recorded_at = as_utc(event_row.recorded_at)
                event = StoredEvent(
                    db.last_position, session_id, *event_row[1:5], recorded_at, *event_row[6:]
                )
                stream.add(event)
                db.payload_bytes += len(event.payload.encode("utf-8"))
            db.event_count += len(rows)
            stream.redacted |= named
            held = db.bodies.setdefault(session_id, {})
            for body in bodies:
                held.setdefault(body.digest, body)
            for digest in forget:
                held.pop(digest, None)
            session = db.sessions[session_id]
            if metadata is not None:
                session.app, session.user = metadata.app, metadata.user
                session.tags = tuple(sorted(metadata.tags))
            if title is not None:
                session.title = title
            entries = db.index.setdefault(session_id, [])
            if unindex:
                gone = set(unindex)
                entries[:] = [(e, words) for e, words in entries if e.digest not in gone]
            entries.extend((entry, tuple(entry.terms.split())) for entry in index)
            return positions

    def _refuse_taken_keys(
        self, session_id: str, rows: Sequence[EventRow], metadata: SessionMetadata | None
    ) -> None:
        """`LostRace` for a seq or an event id the session holds already (or twice in `rows`),
        or a tag given twice: the keys the SQL tables hold unique."""
        stream = self._db.streams.get(session_id, _Stream())
        seqs = {row.seq for row in rows}
        ids = {row.event_id for row in rows}
        if len(seqs) < len(rows) or len(ids) < len(rows):
            raise LostRace
        if not seqs.isdisjoint(stream.by_seq) or not ids.isdisjoint(stream.by_id):
            raise LostRace
        if metadata is not None and len(set(metadata.tags)) < len(metadata.tags):
            raise LostRace

    def _refuse_unnamed_deletions(
        self, session_id: str, bodies: Sequence[BodyRow], forget: Sequence[str], named: set[str]
    ) -> None:
        """`LostRace` when the write would delete a body of the session that no redaction of
        the session names, as the SQL schema's triggers refuse it."""
        if not forget:
            return
        stream = self._db.streams.get(session_id, _Stream())
        held = self._db.bodies.get(session_id, {}).keys() | {body.digest for body in bodies}
        for digest in forget:
            if digest in held and digest not in stream.redacted | named:
                raise LostRace

    def scrub(self, *, wait: bool = True) -> bool:
        """Nothing to do: a deleted body's bytes are gone with its row."""
        return True

    def save_snapshot(
        self,
        session_id: str,
        projection: str,
        version: int,
        seq: int,
        state: str,
        now: datetime,
    ) -> None:
        db = self._db
        with db.lock:
            stream = db.streams.get(session_id, _Stream())
            after = stream.events[bisect.bisect_right(stream.seqs, seq) :]
            if any(event.type == REDACTION for event in after):
                return  # see `Recorder.save_snapshot`
            db.snapshots.setdefault((session_id, projection, version), {}).setdefault(seq, state)

    def forget_snapshots(self, session_ids: Sequence[str]) -> None:
        db = self._db
        gone = set(session_ids)
        with db.lock:
            for key in [key for key in db.snapshots if key[0] in gone]:
                del db.snapshots[key]

    # reading

    def head(self, session_id: str) -> Head | None:
        db = self._db
        with db.lock:
            row = db.sessions.get(session_id)
            return None if row is None else Head(row.head_seq, row.head_hash, row.updated_at)

    def events(self, session_id: str, from_seq: int, to_seq: int) -> Iterator[StoredEvent]:
        db = self._db
        with db.lock:
            stream = db.streams.get(session_id)
            found = [] if stream is None else stream.between(from_seq, to_seq)
        yield from found

    def events_at(self, session_id: str, seqs: Sequence[int]) -> Iterator[StoredEvent]:
        db = self._db
        with db.lock:
            stream = db.streams.get(session_id, _Stream())
            found = [stream.by_seq[seq] for seq in sorted(set(seqs)) if seq in stream.by_seq]
        yield from found

    def events_by_id(self, session_id: str, event_ids: Sequence[str]) -> list[StoredEvent]:
        db = self._db
        with db.lock:
            stream = db.streams.get(session_id, _Stream())
            found = {stream.by_id[i] for i in event_ids if i in stream.by_id}
        return sorted(found, key=lambda event: event.seq)

    def bodies(self, session_id: str, digests: Sequence[str]) -> list[BodyRow]:
        db = self._db
        with db.lock:
            held = db.bodies.get(session_id, {})
            return [held[digest] for digest in sorted(set(digests)) if digest in held]

    def body_digests(self, session_id: str) -> list[str]:
        db = self._db
        with db.lock:
            return sorted(db.bodies.get(session_id, ()))

    def event_hash(self, session_id: str, seq: int) -> str | None:
        db = self._db
        with db.lock:
            event = db.streams.get(session_id, _Stream()).by_seq.get(seq)
            return None if event is None else event.hash

    def seq_at(self, session_id: str, moment: datetime) -> int | None:
        db = self._db
        with db.lock:
            stream = db.streams.get(session_id, _Stream())
            seqs = [event.seq for event in stream.events if event.recorded_at <= moment]
        return max(seqs, default=None)

    def session(self, session_id: str) -> SessionInfo | None:
        db = self._db
        with db.lock:
            row = db.sessions.get(session_id)
            return None if row is None else row.info(session_id)

    def sessions(self, where: SessionFilter = ALL_SESSIONS) -> list[SessionInfo]:
        db = self._db
        with db.lock:
            found = [
                row.info(session_id)
                for session_id, row in db.sessions.items()
                if (where.app is None or row.app == where.app)
                and (where.user is None or row.user == where.user)
                and (where.tag is None or where.tag in row.tags)
            ]
        if where.after is not None:
            moment, last_id = where.after
            found = [
                info
                for info in found
                if info.updated_at < moment or (info.updated_at == moment and info.id > last_id)
            ]
        found.sort(key=lambda info: info.id)
        found.sort(key=lambda info: info.updated_at, reverse=True)  # stable: ties stay by id
        end = None if where.limit is None else where.offset + where.limit
        return found[where.offset : end]

    def indexed(self, session_id: str) -> list[tuple[int, int, int, str | None]]:
        with self._db.lock:
            entries = self._db.index.get(session_id, [])
            return sorted((e.seq, e.part, e.chunk, e.digest) for e, _ in entries)

    def each_indexed(self, session_id: str) -> Iterator[tuple[int, int, int, str | None]]:
        yield from self.indexed(session_id)

    def search(self, where: SearchFilter) -> list[SearchRow]:
        """Every index row's words matched against the phrases, one by one (no index: a
        memory store is small)."""
        db = self._db
        found: dict[tuple[str, int], SearchRow] = {}
        with db.lock:
            for session_id, entries in db.index.items():
                row = db.sessions[session_id]
                if (where.app is not None and row.app != where.app) or (
                    where.user is not None and row.user != where.user
                ):
                    continue
                if where.tag is not None and where.tag not in row.tags:
                    continue
                for entry, words in entries:
                    if where.role is not None and entry.role != where.role:
                        continue
                    recorded_at = as_utc(entry.recorded_at)
                    if where.since is not None and recorded_at < where.since:
                        continue
                    if (session_id, entry.seq) in found or not holds_phrases(words, where.phrases):
                        continue
                    found[session_id, entry.seq] = SearchRow(
                        session_id, entry.seq, entry.event_type, recorded_at, row.title
                    )
        hits = sorted(found.values(), key=lambda hit: -hit.seq)
        hits.sort(key=lambda hit: hit.session_id)
        hits.sort(key=lambda hit: hit.recorded_at, reverse=True)  # stable: ties as above
        return hits[: where.limit]

    def session_ids(self) -> list[str]:
        db = self._db
        with db.lock:
            return sorted(db.sessions.keys() | {sid for sid, s in db.streams.items() if s.events})

    def forks_of(self, session_ids: Sequence[str]) -> list[str]:
        parents = set(session_ids)
        with self._db.lock:
            return sorted(i for i, row in self._db.sessions.items() if row.parent_id in parents)

    def count_live_tokens(self, session_id: str, head_seq: int, live_tokens: int | None) -> bool:
        with self._db.lock:
            row = self._db.sessions.get(session_id)
            if row is None or row.head_seq != head_seq:
                return False
            row.live_tokens = live_tokens
            return True

    def uncounted_sessions(self) -> list[tuple[str, int]]:
        with self._db.lock:
            rows = self._db.sessions.items()
            return sorted((i, row.head_seq) for i, row in rows if row.live_tokens is None)

    def forget_live_tokens(self, session_ids: Sequence[str]) -> None:
        with self._db.lock:
            for session_id in session_ids:
                row = self._db.sessions.get(session_id)
                if row is not None:
                    row.live_tokens = None

    def newest_snapshot(
        self, session_id: str, projection: str, version: int, to_seq: int
    ) -> tuple[int, str] | None:
        db = self._db
        with db.lock:
            states = db.snapshots.get((session_id, projection, version), {})
            seq = max((seq for seq in states if seq <= to_seq), default=None)
            return None if seq is None else (seq, states[seq])

    def snapshots(self, session_id: str, projection: str, version: int) -> list[tuple[int, str]]:
        db = self._db
        with db.lock:
            return sorted(db.snapshots.get((session_id, projection, version), {}).items())

    # figures

    def counts(self) -> StoreCounts:
        db = self._db
        with db.lock:
            bodies = [body for held in db.bodies.values() for body in held.values()]
            return StoreCounts(
                len(db.sessions),
                db.event_count,
                db.payload_bytes,
                len(bodies),
                sum(body.size for body in bodies),
                sum(len(body.data) for body in bodies),
            )

    def payloads_of_type(
        self, types: Sequence[str], session_id: str | None = None
    ) -> Iterator[tuple[str, int, str]]:
        db = self._db
        wanted = set(types)
        with db.lock:
            if session_id is None:
                streams = list(db.streams.values())
            else:
                streams = [db.streams[session_id]] if session_id in db.streams else []
            found = [
                (event.type, event.schema_version, event.payload)
                for stream in streams
                for event in stream.events
                if event.type in wanted
            ]
        yield from found

    def count_of_type(self, event_type: str, session_id: str | None) -> dict[str, int]:
        db = self._db
        with db.lock:
            ids = list(db.streams) if session_id is None else [session_id]
            counted = {
                sid: sum(event.type == event_type for event in db.streams[sid].events)
                for sid in ids
                if sid in db.streams
            }
        return {sid: count for sid, count in counted.items() if count}

    # lifecycle

    def migrate(self, revision: str, *, refuse: ForeignCheck) -> None:
        """Nothing to migrate: a memory database is always at the head revision, the only one
        it can be brought to."""
        state = self.database_state()
        refuse(state)
        if revision not in ("head", state.revision):
            raise SchemaMismatch(
                f"{self.shown_url} is always at schema revision {state.revision}; it cannot "
                f"be brought to {revision}"
            )

    def database_state(self) -> DatabaseState:
        return DatabaseState(True, head_revision(), frozenset(schema.tables))

    def close(self) -> None:
        """Nothing to release: a named database lives on for the next store that opens it."""
