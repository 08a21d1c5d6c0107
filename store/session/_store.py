"""`SessionStore`: the public face of the event log."""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, get_args, overload

from sessionstore.events import (
    DEFAULT_ENCODING,
    ConcurrencyError,
    DatabaseUnavailable,
    InvalidArgument,
    SessionExists,
    UnknownSession,
    brief,
    describe_validation_error,
    described,
    new_id,
    parse_query,
)
from sessionstore.log import (
    SessionSummary,
    StoreStats,
    check_session_id,
    session_summaries,
    store_stats,
)
from sessionstore.session import _arguments as check
from sessionstore.storage import (
    ListingKey,
    SearchFilter,
    SessionFilter,
    SessionInfo,
    SqliteSynchronous,
    counts_missing,
    ensure_schema,
    open_recorder,
    resolve_url,
)

# What opening a store and listing its sessions need is imported above; the rest (the models,
# the folds, the tokenizer, the importers, the append path) where a method first needs it, so
# `sessionstore ls` loads none of it (tests/cli/test_start.py).
if TYPE_CHECKING:
    from pydantic import JsonValue

    from sessionstore.events import RecordedEvent, Role, SessionStarted
    from sessionstore.importers import ImportResult
    from sessionstore.log import Checkpoint, Clock, EventLike, EventLog, SearchHit, VerifyReport
    from sessionstore.projections import ContextFold
    from sessionstore.session._session import Session

ImportFormat = Literal[
    "sessionstore", "openai", "claude-code", "codex", "pi", "opencode", "gemini-cli"
]
"""The formats text can be imported from; a `Path` also takes every format of `FORMATS`."""

DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024 * 1024
"""An event with its bodies: a 100 MB tool output is stored whole (compressed) and shown cut."""
DEFAULT_SNAPSHOT_EVERY = 100
MAX_SEARCH_HITS = 1000
"""The most hits one search returns."""
PURGE_ATTEMPTS = 50
"""A purge that finds the head moved since it planned plans again, this many times at most."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def _check_checkpoint(against: object) -> None:
    from sessionstore.log import Checkpoint

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


def _names_a_file(text: str) -> bool:
    """Whether a str given as text is rather a file's name (a mistake worth a clear error)."""
    if "\n" in text or len(text) > 4096 or not text.strip():
        return False
    try:
        return Path(text).expanduser().exists()
    except (OSError, ValueError):
        return False


def check_store_options(
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
    """An append-only store of agent sessions on SQLite, PostgreSQL, or in memory.

    `url` is a SQLite URL (`sqlite:///path/to/file.db`; `sqlite://` for a database in
    memory), a PostgreSQL one (`postgresql+psycopg://user@host/db`, with the `postgres`
    extra; `?partitions=N` for hash-partitioned tables), `memory://` (a store in this
    process's memory, private to this store) or `memory://NAME` (shared by every store of
    the process opened on it, kept until the process ends). Without one the store opens
    `$SESSIONSTORE_URL`, else the SQLite file `sessions.db` in the current folder. An empty
    or older database is migrated on open unless `migrate=False` (then a database not at this
    code's schema raises `SchemaMismatch`; a memory store is always at it). SQLite runs in WAL
    mode with `synchronous=NORMAL` by default: a process crash never loses a commit; a power
    loss can roll back the last few. Pass `sqlite_synchronous="FULL"` to make every commit
    survive power loss too.

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
        clock: Clock = utc_now,
    ) -> None:
        check_store_options(
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
        recorder = open_recorder(
            self.url, busy_timeout_ms=busy_timeout_ms, sqlite_synchronous=sqlite_synchronous
        )
        try:
            found = ensure_schema(recorder, migrate=migrate, create=create)
            # A redaction whose process died between its commit and its scrub left the deleted
            # bytes in the files (SQLite's WAL): finish that now, if it needs no wait (and
            # not at all on a file this process may only read).
            with contextlib.suppress(DatabaseUnavailable):
                recorder.scrub(wait=False)
        except BaseException:
            recorder.close()
            raise
        self._clock = clock
        self._event_log: EventLog | None = None
        self._event_log_made = threading.Lock()
        self._recorder = recorder
        if counts_missing(found):
            # upgraded from before the sessions row kept its live tokens: count them once
            self._log.recount_uncounted()

    @property
    def _log(self) -> EventLog:
        """The event log, made on first use: the append path, replay and the folds it imports
        are not needed to open a store and list its sessions. One per store, whichever thread
        asks first (sessions keep it)."""
        log = self._event_log
        if log is None:
            with self._event_log_made:
                if self._event_log is None:
                    from sessionstore.log import EventLog

                    self._event_log = EventLog(
                        self._recorder,
                        max_payload_bytes=self.max_payload_bytes,
                        snapshot_every=self.snapshot_every,
                        clock=self._clock,
                    )
                log = self._event_log
        return log

    def __repr__(self) -> str:
        return f"SessionStore({self._recorder.shown_url!r})"

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
        app: str | None = None,
        user: str | None = None,
        tags: Collection[str] = (),
    ) -> Session:
        """Start a new session and return its handle. `encoding` is the tiktoken encoding its
        token counts use; it is loaded now, so a missing one fails before anything is written.
        `compression` holds `CompressionConfig` settings (the rest keep their defaults); it is
        checked now too. `app`, `user` and `tags` are what `sessions()` lists it by. An id
        that is taken raises `SessionExists`."""
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
        metadata = {
            "app": check.optional_label("app", app),
            "user": check.optional_label("user", user),
            "tags": check.tags(tags),
        }
        from pydantic import ValidationError

        from sessionstore.context import load_encoding
        from sessionstore.events import CompressionConfig, SessionStarted
        from sessionstore.session._session import Session

        try:
            CompressionConfig.model_validate(compression or {})
            started = SessionStarted(
                title=title,
                model=model,
                context_window=context_window,
                output_reserve=output_reserve,
                encoding=encoding,
                compression=dict(compression or {}),
                **metadata,
            )
        except ValidationError as exc:
            raise InvalidArgument(f"compression: {describe_validation_error(exc)}") from None
        load_encoding(encoding)
        return Session(self._log, self._start(session_id or new_id(), started))

    def session(self, session_id: str) -> Session:
        """Resume a session: a handle whose context is exactly as the log left it."""
        from sessionstore.session._session import Session

        check_session_id(session_id)
        loaded = self._log.load(session_id)
        return Session(self._log, loaded.fold, loaded.snapshot_seq or 0)

    def fork(self, session_id: str, *, at: int | None = None, title: str | None = None) -> Session:
        """A new session whose history is `session_id`'s up to event `at` (its head when
        `None`). The parent is not changed; the fork reads the parent's events, not copies."""
        from sessionstore.session._fork import fork_header
        from sessionstore.session._session import Session

        check.optional_text("title", title)
        check_session_id(session_id)
        history = self._log.fold_at(session_id, at if at is not None else self.version(session_id))
        fold = self._start(new_id(), fork_header(history, session_id, title), history)
        self._log.save_snapshot(fold)  # a fork's resume then starts here, not in its parent
        return Session(self._log, fold, snapshot_seq=fold.seq)

    def _start(
        self, session_id: str, started: SessionStarted, history: ContextFold | None = None
    ) -> ContextFold:
        """Append `started` as the first event of `session_id`, on top of a fork's `history`.
        Its config is not checked again: `create_session` did, and a fork keeps its parent's."""
        from sessionstore.log import encode_batch
        from sessionstore.projections import ContextFold

        check_session_id(session_id)
        fold = history if history is not None else ContextFold()

        def fold_in(events: Sequence[RecordedEvent]) -> int:
            for event in events:
                fold.apply(event)
            return fold.tokens

        try:
            batch = encode_batch([started], self.max_payload_bytes)  # its config: see above
            self._log.append_encoded(session_id, batch, 0, fold_in=fold_in)
        except ConcurrencyError as exc:  # expected 0 and it is not: the id is taken
            raise SessionExists(session_id) from exc
        return fold

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
        return self._log.append(session_id, events, expected_version)

    def purge(self, session_id: str, *, reason: str = "purged") -> RecordedEvent | None:
        """Redact every body of the session (what each of its messages said, its title, its
        state's values; see docs/guarantees.md): the bytes leave the database and its files,
        the events and their chain stay, and the session reads `[redacted: <reason>]` wherever
        it had content. Returns the `ContentRedacted` event, or `None` when nothing was left to
        delete. Bodies another session also holds stay for that session. See `Session.redact`.

        The event covers every message before it: the purge is planned from the head it is
        appended after, and planned again when another writer moved the head in between
        (`ConcurrencyError` only if that happens `PURGE_ATTEMPTS` times running)."""
        from sessionstore.log import plan_redaction

        check_session_id(session_id)
        check.redaction_reason(reason)
        for attempt in range(PURGE_ATTEMPTS):
            head = self._log.version(session_id)
            event = plan_redaction(self._recorder, session_id, head, None, reason)
            if event is None:
                # a purge retried after a crash between its commit and its scrub scrubs now
                self._log.scrub(f"redacted bodies of {session_id}")
                return None
            try:
                return self._log.append(session_id, [event], head)[0]
            except ConcurrencyError:  # a message came in after the plan: plan again, with it
                time.sleep(random.uniform(0, 0.001 * min(attempt + 1, 10)))
        raise ConcurrencyError(session_id, head, self._log.version(session_id))

    def parts_to_purge(self, session_id: str) -> tuple[str, ...]:
        """The ids of the parts `purge(session_id)` would name now, in the order they were
        appended (none when all content is redacted already); nothing is appended. What a
        caller shows before asking whether to go on."""
        from sessionstore.log import plan_redaction

        check_session_id(session_id)
        head = self._log.version(session_id)
        event = plan_redaction(self._recorder, session_id, head, None, "purged")
        return () if event is None else event.part_ids

    # reading

    def read(
        self, session_id: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[RecordedEvent]:
        """The session's events with `from_seq <= seq <= to_seq`, in order, upcast."""
        from sessionstore.log import MAX_SEQ

        check_session_id(session_id)
        low = check.integer("from_seq", from_seq)
        high = check.optional_integer("to_seq", to_seq)
        return self._log.read(session_id, low, MAX_SEQ if high is None else high)

    def version(self, session_id: str) -> int:
        """The session's head seq: the `expected_version` for its next append. One small read,
        which a `Session` makes before each read of its state to see other writers' events."""
        check_session_id(session_id)
        return self._log.version(session_id)

    def find_session(self, prefix: str) -> str:
        """The id of the one session whose id is `prefix` or begins with it, as git takes an
        abbreviated commit: `UnknownSession` when none does, `InvalidArgument` naming a few
        when several do. A whole id costs one read; a prefix reads every id, as a listing
        does."""
        check.text("prefix", prefix)
        if prefix and self._recorder.session(prefix) is not None:
            return prefix
        found = [i for i in self._recorder.session_ids() if prefix and i.startswith(prefix)]
        if not found:
            raise UnknownSession(prefix)
        if len(found) > 1:
            shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
            raise InvalidArgument(
                f"{prefix!r} begins {len(found)} session ids ({shown}): give more of it"
            )
        return found[0]

    def session_info(self, session_id: str) -> SessionInfo:
        check_session_id(session_id)
        return self._session_row(session_id)

    def sessions(
        self,
        *,
        app: str | None = None,
        user: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        after: SessionInfo | None = None,
    ) -> list[SessionInfo]:
        """Sessions, most recently updated first (ties by id): those of `app`, of `user`,
        with `tag` (each `None`: any); `offset` of them skipped, at most `limit` (`None`: all).

        `after` is the last session of the page before (as that page listed it): the listing
        goes on from there, one indexed read however deep the page (keyset pagination). Pages
        so read never repeat a session, and miss none that was not updated meanwhile (an
        updated one moves to the top: the first page shows it)."""
        if after is not None and not isinstance(after, SessionInfo):
            raise InvalidArgument(
                f"after must be a SessionInfo a listing returned, or None, got {described(after)}"
            )
        where = SessionFilter(
            app=check.optional_label("app", app),
            user=check.optional_label("user", user),
            tag=check.optional_label("tag", tag),
            limit=check.optional_integer("limit", limit, minimum=0, maximum=check.SQL_INT_MAX),
            offset=check.integer("offset", offset, minimum=0, maximum=check.SQL_INT_MAX),
            after=None if after is None else ListingKey(after.updated_at, after.id),
        )
        return self._recorder.sessions(where)

    def search(
        self,
        query: str,
        *,
        app: str | None = None,
        user: str | None = None,
        tag: str | None = None,
        role: Role | None = None,
        since: datetime | None = None,
        limit: int = 20,
    ) -> list[SearchHit]:
        """The events whose text holds `query`, across sessions, newest first: at most `limit`,
        in sessions of `app`, of `user`, with `tag`, in messages of `role`, recorded at or
        after `since` (a timezone-aware time; each `None`: any). See docs/search.md.

        Searched: message text, tool calls (name and arguments), tool outputs in full (the
        originals of truncated and pruned ones too), and compaction summaries; not what a
        redaction deleted. A query is words, all of which must occur in one text; "quoted
        words" must occur side by side, in order. Case, accents and punctuation do not count.
        A query with no word in it raises `InvalidSearchQuery`. Each hit carries an excerpt
        of the text it found, with the query's words marked (`SearchHit.marked`)."""
        from sessionstore.events import Role
        from sessionstore.log import search

        check.text("query", query)
        phrases = parse_query(query)
        if since is not None and (not isinstance(since, datetime) or since.tzinfo is None):
            raise InvalidArgument(
                f"since must be a timezone-aware datetime or None, got {described(since)}"
            )
        where = SearchFilter(
            phrases,
            app=check.optional_label("app", app),
            user=check.optional_label("user", user),
            tag=check.optional_label("tag", tag),
            role=None if role is None else check.choice("role", role, get_args(Role)),
            since=None if since is None else since.astimezone(UTC),
            limit=check.integer("limit", limit, minimum=1, maximum=MAX_SEARCH_HITS),
        )
        return search(self._recorder, where)

    def distribute(self) -> list[str]:
        """Spread the store's tables over the Citus cluster whose coordinator its database is,
        by session (`sessionstore db distribute`): each session's rows on one worker, each of
        its statements sent to that worker alone. Returns the tables distributed now (none
        when all were). `SchemaMismatch` on a database that is not PostgreSQL with Citus; the
        docs' "Outgrowing one server" says what holds on a cluster."""
        from sessionstore.storage import distribute

        return distribute(self._recorder)

    def grant(self, role: str) -> list[str]:
        """Let the PostgreSQL role `role` use this store and no more (`sessionstore db grant
        ROLE`), so that an application connecting as it cannot change or delete an event, nor
        delete a body but by a redaction that names it: the grants keep what the triggers keep
        for the tables' owner, on one server and on a Citus cluster. A line per table: what
        the role may do. `SchemaMismatch` on a database that is not PostgreSQL;
        `InvalidArgument` for a missing role, a superuser or the tables' owner."""
        from sessionstore.storage import grant

        return grant(self._recorder, role)

    def verify(self, session_id: str, *, against: Checkpoint | None = None) -> VerifyReport:
        """Check the session's history: its hash chain, its `sessions` row, its fork link, and
        every stored snapshot against a fresh fold; with `against`, also that nothing up to
        the checkpoint's head of this session changed. See `sessionstore.log._verify`."""
        from sessionstore.log import holds, missing_session, verify_session

        check_session_id(session_id)
        _check_checkpoint(against)
        head = against.head_of(session_id) if against is not None else None
        if holds(self._recorder, session_id):
            return verify_session(self._recorder, session_id, head)
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
        held = self._recorder.session_ids()
        named = [h.session_id for h in against.heads] if against is not None else []
        ids = sorted(set(held) | set(named))

        def reports() -> Iterator[VerifyReport]:
            for done, session_id in enumerate(ids, start=1):
                yield self.verify(session_id, against=against)
                if progress is not None:
                    progress(done, len(ids))

        return reports()

    # moving sessions

    def export_session(self, session_id: str, *, at: int | datetime | None = None) -> Iterator[str]:
        """The session's events as JSONL lines (without newlines): envelopes, hashes and
        payloads as stored, so `import_session` of them rebuilds it byte for byte; with `at`
        (a seq, or the last event at or before a time), its events up to that point only."""
        from sessionstore.log import export_lines

        check_session_id(session_id)
        head = self._session_row(session_id).version
        if at is not None:
            head = self._log.seq_at(session_id, at)
        return export_lines(self._recorder, session_id, head)

    @overload
    def import_session(
        self,
        source: os.PathLike[str],
        *,
        format: ImportFormat | None = None,
        session_id: str | None = None,
        title: str | None = None,
        model: str | None = None,
        context_window: int | None = None,
        encoding: str = DEFAULT_ENCODING,
        strict: bool = False,
        progress: Callable[[int, int, str], None] | None = None,
    ) -> ImportResult: ...
    @overload
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
    ) -> Session: ...
    def import_session(
        self,
        source: os.PathLike[str] | str | Iterable[str],
        *,
        format: ImportFormat | None = None,
        session_id: str | None = None,
        title: str | None = None,
        model: str | None = None,
        context_window: int | None = None,
        encoding: str = DEFAULT_ENCODING,
        strict: bool = False,
        progress: Callable[[int, int, str], None] | None = None,
    ) -> Session | ImportResult:
        """Import sessions from a file or a folder (a `Path`), or one session from text.

        A `Path` to a file or folder: each file's format is recognised (or `format`), every
        transcript under a folder is imported (`~/.claude/projects`, `~/.codex/sessions`), and
        the result lists the sessions created or added to, the events written and the lines
        skipped. An agent's session becomes the session `<format>-<its id>`: importing it
        again writes nothing, and a transcript that grew adds only its new entries. A
        malformed line is skipped and reported; `strict=True` refuses the file instead.
        `progress(done, total, file)` is called after each file.

        Text (or its lines) is one session, and nothing is written unless all of it is good
        (`ImportRefused` names the line at fault). `format="sessionstore"` (the default for
        text): a file from `export_session`; its chain is verified and its rows are written as
        they were, under its own id (the hashes cover it). `"openai"`: a JSON list of Chat
        Completions messages. `"claude-code"`: a Claude Code transcript (JSONL). Both make a
        new session (`session_id`, else a fresh id) with token counts in `encoding`.
        """
        from sessionstore.importers import Header, import_path, import_text

        if isinstance(source, os.PathLike):
            check.flag("strict", strict)
            if format is not None:
                check.choice("format", format, get_args(ImportFormat))
            if session_id is not None:
                check_session_id(session_id)
            check.optional_text("title", title)
            check.optional_text("model", model)
            check.optional_integer("context_window", context_window, minimum=1)
            check.text("encoding", encoding)
            return import_path(
                self._log,
                Path(source),
                format,
                Header(encoding, title, model, context_window, session_id),
                strict=strict,
                progress=progress,
            )
        if isinstance(source, str) and _names_a_file(source):
            raise InvalidArgument(
                f"{brief(source)} is a file's name: pass Path({brief(source)}) to import the "
                "file (a str is the text to import)"
            )
        format = "sessionstore" if format is None else format
        check.choice("format", format, get_args(ImportFormat))
        if session_id is not None:
            check_session_id(session_id)
        check.optional_text("title", title)
        check.optional_text("model", model)
        check.optional_integer("context_window", context_window, minimum=1)
        check.text("encoding", encoding)
        header = Header(encoding, title, model, context_window, session_id)
        return self.session(import_text(self._log, _lines(source), format, header))

    # views

    def view(
        self,
        session_id: str,
        *,
        at: int | datetime | None = None,
        prices: Mapping[str, Mapping[str, float]] | None = None,
    ) -> str:
        """The session as one self-contained HTML page (no network: inline style, script and
        SVG): its header, the live context's size after every event with the window, the
        trigger and a mark per truncation, prune, compaction, restore and revert; a replay of
        the context at any event and the diff between two; each compaction beside its
        summary; the artifact trail; usage per turn, and its cost when `prices` gives the
        model's prices (`{model: {"input": ..., "output": ..., "cached": ...}}`, per million
        tokens; `cached` defaults to `input`). Its parent, forks and sub-agents are linked as
        `<id>.html`, as `view --all` writes them. With `at` (a seq, or the last event at or
        before a time), the session as it stood then. It reads the log and writes nothing."""
        from sessionstore.session._view import session_page

        check_session_id(session_id)
        info = self._session_row(session_id)
        head = info.version if at is None else self._log.seq_at(session_id, at)
        return session_page(self._log, info, head, prices=prices)

    def view_index(
        self, *, app: str | None = None, user: str | None = None, tag: str | None = None
    ) -> str:
        """The HTML index of the sessions (of `app`, `user`, `tag`; each `None`: any), newest
        first, sortable by date, size and compactions, with a search box; each links its page
        `<id>.html` (`view`)."""
        from sessionstore.projections import index_page
        from sessionstore.session._view import index_row

        return index_page([index_row(s) for s in self.summaries(app=app, user=user, tag=tag)])

    # figures

    def stats(self) -> StoreStats:
        """Sessions, events, stored bytes, and the tokens pruning and compaction freed."""
        return store_stats(self._recorder)

    def summaries(
        self,
        session_id: str | None = None,
        *,
        app: str | None = None,
        user: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        after: SessionInfo | None = None,
    ) -> list[SessionSummary]:
        """`sessions(...)` (or just `session_id`) with live tokens, window and compaction
        count, as each session's row keeps them: one query, whatever the store's size (a page
        after `after`'s `info` goes on from there, as `sessions` does)."""
        if session_id is not None:
            infos = [self._session_row(check_session_id(session_id))]
        else:
            infos = self.sessions(
                app=app, user=user, tag=tag, limit=limit, offset=offset, after=after
            )
        return session_summaries(self._recorder, infos)

    # lifecycle

    def close(self) -> None:
        """Release the database connections."""
        self._recorder.close()

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

    def _session_row(self, session_id: str) -> SessionInfo:
        info = self._recorder.session(session_id)
        if info is None:
            raise UnknownSession(session_id)
        return info
