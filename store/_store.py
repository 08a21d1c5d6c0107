"""`SessionStore`: the public face of the event log."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from types import TracebackType
from typing import Literal, get_args

import sqlalchemy as sa
from pydantic import JsonValue, ValidationError

from events import (
    CompressionChanged,
    CompressionConfig,
    ContextCompacted,
    InvalidEvent,
    RecordedEvent,
    SessionStarted,
    new_id,
)
from events._arguments import brief, describe_validation_error, described
from projections import ContextFold
from store import _arguments as check
from store._append import (
    Clock,
    Encoded,
    EventLike,
    KnownHead,
    append,
    check_session_id,
    encode_batch,
    head_seq,
)
from store._engine import (
    SqliteSynchronous,
    make_engine,
    resolve_url,
    shares_one_connection,
    unavailable,
)
from store._errors import (
    ConcurrencyError,
    ImportRefused,
    InvalidArgument,
    InvalidReplayPoint,
    SessionExists,
    UnknownSession,
    one_line,
)
from store._importers import claude_code_events, openai_events
from store._migrate import ensure_schema
from store._replay import load_fold, save_snapshot, seq_at_time
from store._rows import EVENT_ROW, SessionInfo, chain_link, recorded_event, session_info
from store._schema import events, sessions
from store._session import Session
from store._stats import SessionSummary, StoreStats, session_summaries, store_stats
from store._tokens import DEFAULT_ENCODING, load_encoding
from store._transfer import dated_links, export_line, insert_links, read_export
from store._verify import (
    Checkpoint,
    VerifyReport,
    holds,
    missing_session,
    session_ids,
    verify_session,
)

log = logging.getLogger("sessionstore")

ImportFormat = Literal["sessionstore", "openai", "claude-code"]

DEFAULT_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
DEFAULT_SNAPSHOT_EVERY = 100
MAX_SEQ = 2**31 - 1
"""The largest seq a session can reach: `events.seq` is a 32-bit INTEGER on PostgreSQL."""


_SESSIONS_NEWEST_FIRST = sa.select(sessions).order_by(sessions.c.updated_at.desc(), sessions.c.id)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _check_checkpoint(against: object) -> None:
    if against is not None and not isinstance(against, Checkpoint):
        raise InvalidArgument(
            f"against must be a Checkpoint (Checkpoint.loads(text)) or None, got "
            f"{described(against)}"
        )


def _lines(source: object) -> list[str]:
    """JSONL lines, split on newlines only: JSON text may hold U+2028 and other characters
    that `str.splitlines` would also split on."""
    if isinstance(source, str):
        return [line.removesuffix("\r") for line in source.split("\n")]
    if isinstance(source, bytes | bytearray | Mapping) or not isinstance(source, Iterable):
        raise InvalidArgument(
            f"source must be a str or an iterable of str lines, got {described(source)}"
        )
    lines = []
    for number, line in enumerate(source, start=1):
        if not isinstance(line, str):
            raise InvalidArgument(f"source line {number} must be a str, got {described(line)}")
        lines.append(line.removesuffix("\n").removesuffix("\r"))
    return lines


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportRefused(f"not JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise ImportRefused("the JSON is nested too deeply to read") from None


def check_stored_configs(batch: Sequence[Encoded]) -> None:
    """Refuse a `SessionStarted` or `CompressionChanged` whose settings `CompressionConfig`
    refuses: events are never rewritten, so once stored such a config would stay in force.
    (A session that holds one anyway, from an older version, runs on the defaults.)"""
    for item in batch:
        payload = item.event.payload
        if isinstance(payload, SessionStarted | CompressionChanged):
            try:
                CompressionConfig.model_validate(payload.compression)
            except ValidationError as exc:
                problems = describe_validation_error(exc, prefix="compression")
                raise InvalidEvent(f"{item.type}: {problems}") from None


def _check_store_options(
    url: object,
    migrate: object,
    max_payload_bytes: object,
    busy_timeout_ms: object,
    sqlite_synchronous: object,
    snapshot_every: object,
    clock: object,
) -> None:
    check.optional_text("url", url)
    check.flag("migrate", migrate)
    check.integer("max_payload_bytes", max_payload_bytes, minimum=1)
    check.integer("busy_timeout_ms", busy_timeout_ms, minimum=0)
    check.choice("sqlite_synchronous", sqlite_synchronous, get_args(SqliteSynchronous))
    check.integer("snapshot_every", snapshot_every, minimum=1)
    if not callable(clock):
        raise InvalidArgument(f"clock must be callable, got {described(clock)}")


class SessionStore:
    """An append-only store of agent sessions on SQLite or PostgreSQL.

    `url` is any SQLAlchemy URL; without one the store opens `$SESSIONSTORE_URL`, else the
    SQLite file `sessions.db` in the current folder. An empty or older database is migrated
    on open unless `migrate=False` (then a database not at this code's schema raises
    `SchemaMismatch`). SQLite runs in WAL mode with `synchronous=NORMAL` by default: a process
    crash never loses a commit; a power loss can roll back the last few. Pass
    `sqlite_synchronous="FULL"` to make every commit survive power loss too.

    Our tables go only into an empty database or one of ours: a database with another
    application's tables raises `SchemaMismatch`, unchanged. With `create=False` a SQLite file
    that does not exist raises `DatabaseUnavailable` instead of being created.

    Sessions opened through `create_session`, `session` and `fork` save a snapshot of their
    context every `snapshot_every` events and at each compaction, so resuming a long session
    folds only the events since the last one.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        migrate: bool = True,
        create: bool = True,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        busy_timeout_ms: int = 10_000,
        sqlite_synchronous: SqliteSynchronous = "NORMAL",
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
        clock: Clock = _utc_now,
    ) -> None:
        _check_store_options(
            url,
            migrate,
            max_payload_bytes,
            busy_timeout_ms,
            sqlite_synchronous,
            snapshot_every,
            clock,
        )
        self.url = resolve_url(url)
        self.max_payload_bytes = max_payload_bytes
        self.snapshot_every = snapshot_every
        self._clock = clock
        self._engine = make_engine(
            self.url, busy_timeout_ms=busy_timeout_ms, sqlite_synchronous=sqlite_synchronous
        )
        # An in-memory SQLite database lives in one connection, which threads must not use at
        # once (sqlite3 crashes or nests transactions); every other engine pools connections.
        self._one_at_a_time: AbstractContextManager[object] = (
            threading.RLock() if shares_one_connection(self._engine) else nullcontext()
        )
        try:
            with self._database_errors():
                ensure_schema(self._engine, migrate=migrate, create=create)
        except BaseException:
            self._engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"SessionStore({self._engine.url.render_as_string(hide_password=True)!r})"

    # sessions

    def create_session(
        self,
        *,
        model: str = "",
        context_window: int | None = None,
        title: str = "",
        output_reserve: int = 4096,
        encoding: str = DEFAULT_ENCODING,
        compression: dict[str, JsonValue] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Start a new session and return its handle. `encoding` is the tiktoken encoding its
        token counts use; it is loaded now, so a missing one fails before anything is written.
        `compression` holds `CompressionConfig` settings (the rest keep their defaults); it is
        checked now too. An id that is taken raises `SessionExists`."""
        check.text("model", model)
        check.optional_integer("context_window", context_window, minimum=1)
        check.text("title", title)
        check.integer("output_reserve", output_reserve, minimum=0)
        check.text("encoding", encoding)
        if compression is not None and not isinstance(compression, Mapping):
            raise InvalidArgument(
                f"compression must be a dict of settings or None, got {described(compression)}"
            )
        if session_id is not None:
            check_session_id(session_id)
        try:
            CompressionConfig.model_validate(compression or {})
            started = SessionStarted(
                title=title,
                model=model,
                context_window=context_window,
                output_reserve=output_reserve,
                encoding=encoding,
                compression=dict(compression or {}),
            )
        except ValidationError as exc:
            raise InvalidArgument(f"compression: {describe_validation_error(exc)}") from None
        load_encoding(encoding)
        return Session(self, self._start(session_id or new_id(), started))

    def session(self, session_id: str) -> Session:
        """Resume a session: a handle whose context is exactly as the log left it."""
        check_session_id(session_id)
        with self._database_errors(), self._engine.connect() as conn:
            loaded = load_fold(conn, session_id, head_seq(conn, session_id))
        fold = loaded.fold
        snapshot_seq = loaded.snapshot_seq or 0
        if self._snapshot_due(fold, snapshot_seq, compacted=False):
            self._save_snapshot(fold)
            snapshot_seq = fold.seq
        return Session(self, fold, snapshot_seq)

    def fork(self, session_id: str, *, at: int | None = None, title: str | None = None) -> Session:
        """A new session whose history is `session_id`'s up to event `at` (its head when
        `None`). The parent is not changed; the fork reads the parent's events, not copies."""
        check.optional_text("title", title)
        history = self._fold_at(session_id, at if at is not None else self.version(session_id))
        assert history.header is not None
        started = history.header.model_copy(
            update={
                "title": title if title is not None else history.header.title,
                "parent_session_id": session_id,
                "parent_seq": history.seq,
                "parent_hash": history.hash,
            }
        )
        fold = self._start(new_id(), started, history)
        self._save_snapshot(fold)  # a fork's resume then starts here, not in its parent
        return Session(self, fold, snapshot_seq=fold.seq)

    def _start(
        self, session_id: str, started: SessionStarted, history: ContextFold | None = None
    ) -> ContextFold:
        """Append `started` as the first event of `session_id`, on top of a fork's `history`.
        Its config is not checked again: `create_session` did, and a fork keeps its parent's."""
        check_session_id(session_id)
        fold = history if history is not None else ContextFold()
        batch = encode_batch([started], self.max_payload_bytes)
        try:
            with self._database_errors():
                recorded = append(self._engine, session_id, batch, 0, self._clock)
        except ConcurrencyError as exc:  # expected 0 and it is not: the id is taken
            raise SessionExists(session_id) from exc
        fold.apply(recorded[0])
        return fold

    def _fold_at(self, session_id: str, at: int | datetime) -> ContextFold:
        """A fresh fold of the session right after event `at` (a seq or a time)."""
        check_session_id(session_id)
        with self._database_errors(), self._engine.connect() as conn:
            head = head_seq(conn, session_id)
            if isinstance(at, datetime):
                seq = seq_at_time(conn, session_id, at)
            elif isinstance(at, int) and not isinstance(at, bool) and 1 <= at <= head:
                seq = at
            else:
                raise InvalidReplayPoint(
                    f"at= must be a seq from 1 to {head} or a datetime, got {brief(at)}"
                )
            return load_fold(conn, session_id, seq).fold

    def _snapshot_due(self, fold: ContextFold, snapshot_seq: int, *, compacted: bool) -> bool:
        """At each compaction; otherwise once the events since the last snapshot reach both
        `snapshot_every` and half the live message count. A snapshot costs O(live messages),
        so spacing them by at least that much keeps its cost per append constant."""
        since = fold.seq - snapshot_seq
        return compacted or since >= max(self.snapshot_every, fold.live_count // 2)

    def _after_append(
        self, fold: ContextFold, snapshot_seq: int, recorded: list[RecordedEvent]
    ) -> int:
        """Save a snapshot if one is due; return the seq of the newest one."""
        compacted = any(isinstance(e.payload, ContextCompacted) for e in recorded)
        if not self._snapshot_due(fold, snapshot_seq, compacted=compacted):
            return snapshot_seq
        self._save_snapshot(fold)
        return fold.seq

    def _save_snapshot(self, fold: ContextFold) -> None:
        """Best effort: a snapshot is a cache, and failing to write one, in any way, must not
        make the append that triggered it look failed (a caller would retry it)."""
        try:
            with self._one_at_a_time:
                save_snapshot(self._engine, fold, self._clock())
        except Exception as exc:
            log.warning(
                "could not save a snapshot of %s at %s: %s",
                fold.session_id,
                fold.seq,
                one_line(exc),
            )

    # writing

    def append(
        self,
        session_id: str,
        events: Sequence[EventLike],
        *,
        expected_version: int | None,
    ) -> list[RecordedEvent]:
        """Append `events` in one transaction, numbered after the session's head.

        `expected_version` is the head seq you last saw (0 for a new session, whose first event
        must be `SessionStarted`); if another writer moved it, `ConcurrencyError` is raised and
        nothing is written. `None` appends after whatever the head is. Sending again events
        whose `event_id`s are stored with the same content returns the stored events and writes
        nothing; with other content it raises `IdempotencyError`.
        """
        check_session_id(session_id)
        check.optional_integer("expected_version", expected_version, minimum=0)
        batch = encode_batch(events, self.max_payload_bytes)
        check_stored_configs(batch)
        with self._database_errors():
            return append(self._engine, session_id, batch, expected_version, self._clock)

    def _append_after(
        self, session_id: str, events: Sequence[EventLike], head: KnownHead
    ) -> list[RecordedEvent]:
        """`append` for a `Session`, whose fold knows the head: one query fewer per append."""
        batch = encode_batch(events, self.max_payload_bytes)
        check_stored_configs(batch)
        with self._database_errors():
            return append(
                self._engine, session_id, batch, head.head_seq, self._clock, known_head=head
            )

    # reading

    def read(
        self, session_id: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[RecordedEvent]:
        """The session's events with `from_seq <= seq <= to_seq`, in order, upcast."""
        check_session_id(session_id)
        low = max(check.integer("from_seq", from_seq), 1)
        to_seq = check.optional_integer("to_seq", to_seq)
        high = MAX_SEQ if to_seq is None else min(to_seq, MAX_SEQ)
        query = sa.select(*EVENT_ROW).where(
            events.c.session_id == session_id, events.c.seq.between(low, high)
        )
        with self._database_errors(), self._engine.connect() as conn:
            # bounds past the column's range would overflow the driver: that range is empty
            rows = conn.execute(query.order_by(events.c.seq)).all() if low <= high else []
            if not rows:
                self._session_row(conn, session_id)  # raises UnknownSession
        return [recorded_event(row) for row in rows]

    def version(self, session_id: str) -> int:
        """The session's head seq: the `expected_version` for its next append. One small read,
        which a `Session` makes before each read of its state to see other writers' events."""
        check_session_id(session_id)
        with self._database_errors(), self._engine.connect() as conn:
            return head_seq(conn, session_id)

    def session_info(self, session_id: str) -> SessionInfo:
        check_session_id(session_id)
        with self._database_errors(), self._engine.connect() as conn:
            return session_info(self._session_row(conn, session_id))

    def sessions(self) -> list[SessionInfo]:
        """Every session, most recently updated first."""
        with self._database_errors(), self._engine.connect() as conn:
            return [session_info(row) for row in conn.execute(_SESSIONS_NEWEST_FIRST)]

    def verify(self, session_id: str, *, against: Checkpoint | None = None) -> VerifyReport:
        """Check the session's history: its hash chain, its `sessions` row, its fork link, and
        every stored snapshot against a fresh fold; with `against`, also that nothing up to
        the checkpoint's head of this session changed. See `store._verify`."""
        check_session_id(session_id)
        _check_checkpoint(against)
        head = against.head_of(session_id) if against is not None else None
        with self._database_errors(), self._engine.connect() as conn:
            if holds(conn, session_id):
                return verify_session(conn, session_id, head)
        if head is not None:
            return missing_session(head)
        raise UnknownSession(session_id)

    def verify_all(
        self,
        *,
        against: Checkpoint | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Iterator[VerifyReport]:
        """`verify` of every session the store holds anything of (a row in `sessions` or
        events), and of every session `against` names (gone ones are reported broken).
        `progress(done, total)` is called after each."""
        _check_checkpoint(against)
        if progress is not None and not callable(progress):
            raise InvalidArgument(f"progress must be callable or None, got {described(progress)}")
        with self._database_errors(), self._engine.connect() as conn:
            held = session_ids(conn)
        named = [h.session_id for h in against.heads] if against is not None else []
        ids = sorted(set(held) | set(named))

        def reports() -> Iterator[VerifyReport]:
            for done, session_id in enumerate(ids, start=1):
                yield self.verify(session_id, against=against)
                if progress is not None:
                    progress(done, len(ids))

        return reports()

    # moving sessions

    def export_session(self, session_id: str) -> Iterator[str]:
        """The session's events as JSONL lines (without newlines): envelopes, hashes and
        payloads as stored, so `import_session` of them rebuilds it byte for byte."""
        check_session_id(session_id)
        query = sa.select(events).where(events.c.session_id == session_id).order_by(events.c.seq)
        with self._database_errors(), self._engine.connect() as conn:
            self._session_row(conn, session_id)
            links = [chain_link(row) for row in conn.execute(query)]
        return (export_line(session_id, link) for link in links)

    def import_session(
        self,
        source: str | Iterable[str],
        *,
        format: ImportFormat = "sessionstore",
        session_id: str | None = None,
        title: str | None = None,
        model: str | None = None,
        context_window: int | None = None,
        encoding: str = DEFAULT_ENCODING,
    ) -> Session:
        """Import a session from text (or its lines); nothing is written unless all of it is
        good (`ImportRefused` names the line at fault).

        `format="sessionstore"`: a file from `export_session`; its chain is verified and its
        rows are written as they were, under its own id (the hashes cover it).
        `"openai"`: a JSON list of Chat Completions messages. `"claude-code"`: a Claude Code
        transcript (JSONL); its compact boundaries become `ContextCompacted` events. Both make
        a new session (`session_id`, else a fresh id) with token counts in `encoding`.
        """
        check.choice("format", format, get_args(ImportFormat))
        if session_id is not None:
            check_session_id(session_id)
        check.optional_text("title", title)
        check.optional_text("model", model)
        check.optional_integer("context_window", context_window, minimum=1)
        check.text("encoding", encoding)
        lines = _lines(source)
        if format == "sessionstore":
            exported_id, links = read_export(lines)
            if session_id not in (None, exported_id):
                raise ImportRefused(
                    f"an export keeps its session id {exported_id!r}: its hashes cover it"
                )
            if (title, model, context_window) != (None, None, None):
                raise ImportRefused(
                    "an export keeps its own title, model and window: its hashes cover them"
                )
            with self._database_errors():
                insert_links(self._engine, exported_id, links)
            return self.session(exported_id)
        load_encoding(encoding)
        times: list[datetime | None] = []
        if format == "openai":
            found_title, found_model = None, None
            text = source if isinstance(source, str) else "\n".join(lines)
            payloads = openai_events(_json(text), encoding)
        else:
            transcript = claude_code_events(lines, encoding)
            found_title, found_model = transcript.title, transcript.model
            payloads, times = transcript.payloads, transcript.times
        started = SessionStarted(
            title=title if title is not None else found_title or "",
            model=model if model is not None else found_model or "",
            context_window=context_window,
            encoding=encoding,
        )
        new = check_session_id(session_id or new_id())
        batch = encode_batch([started, *payloads], self.max_payload_bytes)
        times = times or [None] * len(payloads)  # a transcript that does not say when: now
        links = dated_links(new, batch, [times[0], *times], self._clock())
        with self._database_errors():
            insert_links(self._engine, new, links)
        return self.session(new)

    # figures

    def stats(self) -> StoreStats:
        """Sessions, events, stored bytes, and the tokens pruning and compaction freed."""
        with self._database_errors(), self._engine.connect() as conn:
            return store_stats(conn)

    def summaries(self, session_id: str | None = None) -> list[SessionSummary]:
        """`sessions()` (or just `session_id`) with live tokens, window and compaction count."""
        with self._database_errors(), self._engine.connect() as conn:
            if session_id is not None:
                infos = [session_info(self._session_row(conn, check_session_id(session_id)))]
            else:
                infos = [session_info(row) for row in conn.execute(_SESSIONS_NEWEST_FIRST)]
            return session_summaries(conn, infos)

    # lifecycle

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # internals

    def _fold_from_scratch(self, session_id: str, at: int) -> ContextFold:
        """The fold of every event up to `at`, ignoring snapshots (for checks and benchmarks)."""
        with self._database_errors(), self._engine.connect() as conn:
            return load_fold(conn, session_id, at, use_snapshots=False).fold

    @staticmethod
    def _session_row(conn: sa.Connection, session_id: str) -> sa.Row[tuple[object, ...]]:
        row = conn.execute(sa.select(sessions).where(sessions.c.id == session_id)).first()
        if row is None:
            raise UnknownSession(session_id)
        return row

    @contextmanager
    def _database_errors(self) -> Iterator[None]:
        """Turn every driver error of a database that cannot be reached, opened or written
        (locked past the timeout, read-only, full, not a database) into `DatabaseUnavailable`.
        Integrity errors are not among them: the append path decides what those mean."""
        try:
            with self._one_at_a_time:
                yield
        except sa.exc.IntegrityError:
            raise
        except sa.exc.DBAPIError as exc:
            raise unavailable(self._engine.url, exc) from exc
