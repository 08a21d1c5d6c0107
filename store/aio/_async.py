"""`AsyncSessionStore` and `AsyncSession`: the same store for agent loops written with asyncio.

Each method awaits the sync one, run in a worker thread of the store's own pool, so the event
loop never waits on the database, a lock or tiktoken. An awaited append to SQLite took 0.22 to
0.38 ms here against 0.13 ms called directly; a bare INSERT + COMMIT through SQLAlchemy's
async engine on aiosqlite alone took 0.19 to 0.36 ms (`sessionstore.aio._worker_threads` has the
table and why threads rather than an async driver).

An `AsyncSession` runs one call at a time, in the order they were awaited (an `asyncio.Lock`,
first come first served), so concurrent tasks on one handle never race each other into
`ConcurrencyError`. An async summarizer is awaited natively on the caller's loop (see
`sessionstore.context._summarize.CallerLoop`).

A cancelled call (`task.cancel()`, `asyncio.timeout`, `wait_for`) either never ran or ran to
its end and says so, as a sync call would, so a retry never stores a message twice:

- cancelled before a worker took it (waiting for the handle's previous call, or for a free
  worker thread), it raises `CancelledError` (`TimeoutError` from a timeout) and never runs;
- cancelled once a worker has it, the call runs to its end: it returns its value (what it
  stored) or raises its own error (which says what it stored, if anything). An async
  summarizer or confirm callback it is awaiting on the caller's loop is cancelled, so a
  compaction in progress appends nothing and fails with `CompactionError` ("...its caller was
  cancelled"); a check's `CompactionError.check` then names the prune it appended before. The
  cancellation is not lost: the task's next await raises `CancelledError`, unless it came
  from a timeout, which then lets the value through (`await asyncio.wait_for(s.append_user(
  text), 0.001)` returns the stored message).

So `CancelledError` or `TimeoutError` raised by a store call means it wrote nothing; any
other outcome is the call's own. (On Python 3.11 only, `wait_for` whose own awaiting task is
cancelled drops the value of a call that completed: prefer `asyncio.timeout` there.)

A store has one pool, whatever faces it has: `AsyncSessionStore.from_store(store)` (as often as
it is called, and by every framework adapter built on `store`) and the `AsyncSessionStore` that
opened `store` all run on it. Sync code of your own (a framework adapter's several calls, a
read of `Session` properties that catch up) runs there, with the same cancellation promise,
through `AsyncSessionStore.run_sync(call, *args)`, or `AsyncSession.run_sync` to take its turn
among the handle's calls; `asyncio.to_thread` would run it beside the pool, and a cancelled
call would raise at once while its thread still writes.

The two faces cannot drift (tests/async/test_signatures.py): every public method of
`SessionStore` and `Session` has its twin here with the same parameters, defaults and
annotations, but for what being awaited implies: `Session` is `AsyncSession` here,
`SessionStore` is `AsyncSessionStore`, a method returns its value when awaited, and an
iterator that reads the database as it goes (`verify_all`, `export_session`) is a list here.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, ParamSpec, TypeVar, overload

from pydantic import JsonValue

from sessionstore.aio._worker_threads import Workers
from sessionstore.context import (
    DEFAULT_ENCODING,
    CompactionProposal,
    Confirm,
    Measure,
    PrunePlan,
    Summarizer,
)
from sessionstore.events import (
    CompactionReason,
    CompressionConfig,
    InvalidArgument,
    Message,
    Native,
    NewEvent,
    Payload,
    Record,
    RecordedEvent,
    Role,
    SessionStarted,
    ToolResultPart,
    Usage,
    described,
)
from sessionstore.importers import ImportResult
from sessionstore.log import (
    Checkpoint,
    Clock,
    EventLike,
    EventLog,
    SearchHit,
    SessionSummary,
    StoreStats,
    VerifyReport,
)
from sessionstore.projections import ArtifactTrail, Context, TimelineRow, ToolMap
from sessionstore.session import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    DEFAULT_SNAPSHOT_EVERY,
    ContextCheck,
    ImportFormat,
    ResultBlock,
    Session,
    SessionStore,
    ToolCallLike,
    check_store_options,
    utc_now,
)
from sessionstore.storage import SessionInfo, SqliteSynchronous, resolve_url

_R = TypeVar("_R")
_P = ParamSpec("_P")

_pools: weakref.WeakKeyDictionary[EventLog, Workers] = weakref.WeakKeyDictionary()
_pools_lock = threading.Lock()


def _workers_of(log: EventLog, opened_with: Workers | None = None) -> Workers:
    """The one pool of the store whose event log is `log` (`opened_with`'s, when the store was
    just opened by an `AsyncSessionStore`). Keyed by the log, which a store shares with every
    session it hands out, so a `Session` finds its store's pool too; held weakly, so a store
    that is gone takes its pool with it."""
    with _pools_lock:
        return _pools.setdefault(log, opened_with or Workers())


def async_session_of(session: Session) -> AsyncSession:
    """`session` as an `AsyncSession` on its store's pool (for an adapter given a `Session`)."""
    return AsyncSession(session, _workers_of(session._log))


class AsyncSession:
    """A `Session` whose methods are awaited; get one from an `AsyncSessionStore`.

    The properties read the handle as it last saw the session, with no I/O (`await
    refresh()` first to fold in other writers' events). A cancelled call either never ran
    (`CancelledError`, `TimeoutError` from a timeout) or ran to its end and returns or raises
    as it would have; its task's next await then takes the cancellation (see the module's
    docstring). Calls run one at a time, in the order awaited."""

    def __init__(self, session: Session, workers: Workers) -> None:
        self.sync = session
        """The `Session` underneath, for sync code (in a worker thread, not on the loop)."""
        self._workers = workers
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    def __repr__(self) -> str:
        return f"<AsyncSession {self.id} at version {self.version}>"

    @property
    def id(self) -> str:
        return self.sync.id

    @property
    def version(self) -> int:
        return self.sync.version

    @property
    def header(self) -> SessionStarted:
        return self.sync.header

    @property
    def config(self) -> CompressionConfig:
        return self.sync.config

    @property
    def tokens(self) -> int:
        """The live context's size in tokens at `version`: `Session.seen_tokens`
        (`Session.tokens` also catches up with the log first: a read, which a property on the
        loop must not make)."""
        return self.sync.seen_tokens

    @property
    def seen_tokens(self) -> int:
        """`Session.seen_tokens`: the same as `tokens` here, where no property reads."""
        return self.sync.seen_tokens

    @property
    def summarizer(self) -> Summarizer:
        """Used by `compact()` and the checks unless a call names another; may be async."""
        return self.sync.summarizer

    @summarizer.setter
    def summarizer(self, summarizer: Summarizer) -> None:
        self.sync.summarizer = summarizer

    async def run_sync(self, call: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """`call(*args, **kwargs)` on the store's workers, in its turn among this handle's
        calls (after those awaited before it, before those awaited after): sync code of yours
        that uses `self.sync`, as a framework adapter's steps. Cancelled, it never ran or ran
        to its end and returns, as every method here (see the module's docstring)."""
        return await self._run(functools.partial(call, *args, **kwargs))

    async def _run(self, call: Callable[[], _R]) -> _R:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:  # a lock serves one loop
            self._lock = (loop, asyncio.Lock())
        async with self._lock[1]:
            return await self._workers.run(call)

    async def append_system(self, text: str) -> Message:
        return await self._run(lambda: self.sync.append_system(text))

    async def append_user(self, text: str) -> Message:
        return await self._run(lambda: self.sync.append_user(text))

    async def append_assistant(
        self,
        text: str = "",
        *,
        tool_calls: Iterable[ToolCallLike] | None = (),
        usage: Usage | None = None,
    ) -> Message:
        call = functools.partial(self.sync.append_assistant, tool_calls=tool_calls, usage=usage)
        return await self._run(lambda: call(text))

    async def append_tool_result(
        self,
        call_id: str,
        output: str | Sequence[ResultBlock | Mapping[str, Any]],
        *,
        is_error: bool = False,
        name: str | None = None,
        native: Native | None = None,
    ) -> Message:
        call = functools.partial(
            self.sync.append_tool_result, is_error=is_error, name=name, native=native
        )
        return await self._run(lambda: call(call_id, output))

    async def tool_result_part(
        self,
        call_id: str,
        output: str | Sequence[ResultBlock | Mapping[str, Any]],
        *,
        is_error: bool = False,
        name: str | None = None,
    ) -> ToolResultPart:
        call = functools.partial(self.sync.tool_result_part, is_error=is_error, name=name)
        return await self._run(lambda: call(call_id, output))

    async def append_message(
        self,
        message: Message,
        *,
        state: Mapping[str, Any] | None = None,
        event_id: str | None = None,
    ) -> Message:
        call = functools.partial(self.sync.append_message, state=state, event_id=event_id)
        return await self._run(lambda: call(message))

    async def append_anthropic(
        self, message: object, *, context_management: Mapping[str, Any] | None = None
    ) -> Message:
        call = functools.partial(self.sync.append_anthropic, context_management=context_management)
        return await self._run(lambda: call(message))

    async def append_openai(self, completion: object) -> Message:
        return await self._run(lambda: self.sync.append_openai(completion))

    async def append_openai_response(self, response: object) -> Message:
        return await self._run(lambda: self.sync.append_openai_response(response))

    async def append_events(self, payloads: Sequence[Payload | NewEvent]) -> list[RecordedEvent]:
        return await self._run(lambda: self.sync.append_events(payloads))

    async def restore(self, part_ids: Iterable[str] | None = None) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.restore(part_ids))

    async def restore_messages(self, seq: int) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.restore_messages(seq))

    async def undo(self, seq: int) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.undo(seq))

    async def redact(self, part_ids: Iterable[str], *, reason: str) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.redact(part_ids, reason=reason))

    async def revert(self, to_message_id: str) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.revert(to_message_id))

    async def pin(self, message_id: str) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.pin(message_id))

    async def unpin(self, message_id: str) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.unpin(message_id))

    async def configure(self, /, **changes: Any) -> RecordedEvent:
        return await self._run(lambda: self.sync.configure(**changes))

    async def append_record(
        self,
        kind: str,
        *natives: Native,
        state: Mapping[str, Any] | None = None,
        event_id: str | None = None,
        then: Sequence[Payload] = (),
    ) -> Record:
        call = functools.partial(self.sync.append_record, state=state, event_id=event_id, then=then)
        return await self._run(lambda: call(kind, *natives))

    async def pop(self) -> Message | None:
        return await self._run(self.sync.pop)

    async def clear(self, *, reason: str = "") -> RecordedEvent | None:
        return await self._run(lambda: self.sync.clear(reason=reason))

    async def update_state(
        self, values: Mapping[str, Any] | None = None, *, remove: Iterable[str] = ()
    ) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.update_state(values, remove=remove))

    async def state(self, at: int | datetime | None = None) -> dict[str, JsonValue]:
        return await self._run(lambda: self.sync.state(at))

    async def update_metadata(self, /, **changes: Any) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.update_metadata(**changes))

    async def measure(self) -> Measure:
        return await self._run(self.sync.measure)

    async def before_llm_call(
        self, summarizer: Summarizer | None = None, *, confirm: Confirm | None = None
    ) -> ContextCheck:
        """As `Session.before_llm_call`; `confirm` may be async: it is awaited on this loop
        (it must not call this session: the check holds it until the answer)."""
        return await self._run(lambda: self.sync.before_llm_call(summarizer, confirm=confirm))

    async def after_tool_result(
        self, summarizer: Summarizer | None = None, *, confirm: Confirm | None = None
    ) -> ContextCheck:
        return await self._run(lambda: self.sync.after_tool_result(summarizer, confirm=confirm))

    async def propose_compaction(
        self,
        summarizer: Summarizer | None = None,
        reason: CompactionReason = "manual",
        *,
        keep_turns: int | None = None,
        keep_tokens: int | None = None,
    ) -> CompactionProposal:
        call = functools.partial(
            self.sync.propose_compaction, keep_turns=keep_turns, keep_tokens=keep_tokens
        )
        return await self._run(lambda: call(summarizer, reason))

    async def apply(self, proposal: CompactionProposal) -> RecordedEvent:
        return await self._run(lambda: self.sync.apply(proposal))

    async def drop_oldest_turns(self, n: int) -> RecordedEvent | None:
        return await self._run(lambda: self.sync.drop_oldest_turns(n))

    async def fork_with_summary(
        self, proposal: CompactionProposal, *, title: str | None = None
    ) -> AsyncSession:
        fork = await self._run(lambda: self.sync.fork_with_summary(proposal, title=title))
        return AsyncSession(fork, self._workers)

    async def prune(self, *, dry_run: bool = False, reason: str = "manual") -> PrunePlan | None:
        return await self._run(lambda: self.sync.prune(dry_run=dry_run, reason=reason))

    async def compact(
        self,
        summarizer: Summarizer | None = None,
        reason: CompactionReason = "manual",
        *,
        keep_turns: int | None = None,
        keep_tokens: int | None = None,
    ) -> RecordedEvent:
        call = functools.partial(self.sync.compact, keep_turns=keep_turns, keep_tokens=keep_tokens)
        return await self._run(lambda: call(summarizer, reason))

    async def context(
        self, at: int | datetime | None = None, *, restore_pruned: bool = False
    ) -> Context:
        return await self._run(lambda: self.sync.context(at, restore_pruned=restore_pruned))

    async def timeline(self) -> list[TimelineRow]:
        return await self._run(self.sync.timeline)

    async def to_markdown(self, at: int | datetime | None = None, *, history: bool = False) -> str:
        return await self._run(lambda: self.sync.to_markdown(at, history=history))

    async def artifacts(
        self, at: int | datetime | None = None, *, tools: ToolMap | None = None
    ) -> ArtifactTrail:
        return await self._run(lambda: self.sync.artifacts(at, tools=tools))

    async def refresh(self) -> None:
        await self._run(self.sync.refresh)


class AsyncSessionStore:
    """A `SessionStore` whose methods are awaited. `AsyncSessionStore(url, **options)` takes
    `SessionStore`'s options and opens the database in a worker on first use (`async with`
    opens it at once, so a missing database fails there); `from_store` wraps an open one.
    `close()` closes the `SessionStore` underneath too.

    A cancelled call either never ran (`CancelledError`, `TimeoutError` from a timeout: nothing
    written) or ran to its end and returns or raises as it would have, its task's next await
    then taking the cancellation (see the module's docstring)."""

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
        options = (max_payload_bytes, busy_timeout_ms, sqlite_synchronous, snapshot_every, clock)
        check_store_options(url, migrate, *options)  # wrong options fail here, not later
        self._open: Callable[[], SessionStore] = functools.partial(
            SessionStore,
            url,
            migrate=migrate,
            create=create,
            max_payload_bytes=max_payload_bytes,
            busy_timeout_ms=busy_timeout_ms,
            sqlite_synchronous=sqlite_synchronous,
            snapshot_every=snapshot_every,
            clock=clock,
        )
        self._store: SessionStore | None = None
        self._opening = threading.Lock()
        self._workers = Workers()
        self._url = resolve_url(url)
        self._limits = (max_payload_bytes, snapshot_every)

    @classmethod
    def from_store(cls, store: SessionStore) -> AsyncSessionStore:
        """The async face of an open `store`, on the store's one pool of workers: each call of
        `from_store(store)` (a framework adapter's, yours), and the `AsyncSessionStore` that
        opened `store`, run on the same threads, so adapters never add a pool each."""
        if not isinstance(store, SessionStore):
            raise InvalidArgument(f"store must be a SessionStore, got {described(store)}")
        wrapper = cls()  # opens nothing: the options are only kept
        wrapper._store = store
        wrapper._workers = _workers_of(store._log)
        wrapper._url = store.url
        wrapper._limits = (store.max_payload_bytes, store.snapshot_every)
        return wrapper

    @property
    def url(self) -> str:
        """`SessionStore.url`: the URL given, else `$SESSIONSTORE_URL`, else `sessions.db`."""
        return self._url

    @property
    def max_payload_bytes(self) -> int:
        return self._limits[0]

    @property
    def snapshot_every(self) -> int:
        return self._limits[1]

    def __repr__(self) -> str:
        return f"Async{self._store!r}" if self._store else "AsyncSessionStore(not opened yet)"

    @property
    def sync(self) -> SessionStore:
        """The `SessionStore` underneath (opened now, on this thread, if no call opened it)."""
        with self._opening:
            if self._store is None:
                store = self._open()
                self._workers = _workers_of(store._log, self._workers)  # its pool from now on
                self._store = store
            return self._store

    async def run_sync(self, call: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """`call(*args, **kwargs)` on the store's workers: sync code of yours that uses
        `self.sync` or its sessions (a framework adapter's steps), off the event loop, as every
        method here runs. Cancelled (`task.cancel()`, a timeout), it never ran and raises
        `CancelledError`, or ran to its end and returns its value (see the module's
        docstring): unlike `asyncio.to_thread`, whose call goes on writing after it raised."""
        return await self._workers.run(functools.partial(call, *args, **kwargs))

    async def _run(self, call: Callable[[SessionStore], _R]) -> _R:
        return await self._workers.run(lambda: call(self.sync))

    def _session(self, session: Session) -> AsyncSession:
        return AsyncSession(session, self._workers)

    async def create_session(
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
    ) -> AsyncSession:
        create = functools.partial(
            SessionStore.create_session,
            model=model,
            context_window=context_window,
            title=title,
            output_reserve=output_reserve,
            encoding=encoding,
            compression=compression,
            session_id=session_id,
            app=app,
            user=user,
            tags=tags,
        )
        return self._session(await self._run(create))

    async def session(self, session_id: str) -> AsyncSession:
        return self._session(await self._run(lambda s: s.session(session_id)))

    async def fork(
        self, session_id: str, *, at: int | None = None, title: str | None = None
    ) -> AsyncSession:
        return self._session(await self._run(lambda s: s.fork(session_id, at=at, title=title)))

    async def append(
        self, session_id: str, events: Sequence[EventLike], *, expected_version: int | None
    ) -> list[RecordedEvent]:
        return await self._run(
            lambda s: s.append(session_id, events, expected_version=expected_version)
        )

    async def purge(self, session_id: str, *, reason: str = "purged") -> RecordedEvent | None:
        return await self._run(lambda s: s.purge(session_id, reason=reason))

    async def parts_to_purge(self, session_id: str) -> tuple[str, ...]:
        return await self._run(lambda s: s.parts_to_purge(session_id))

    async def distribute(self) -> list[str]:
        return await self._run(lambda s: s.distribute())

    async def grant(self, role: str) -> list[str]:
        return await self._run(lambda s: s.grant(role))

    async def read(
        self, session_id: str, from_seq: int = 1, to_seq: int | None = None
    ) -> list[RecordedEvent]:
        return await self._run(lambda s: s.read(session_id, from_seq, to_seq))

    async def version(self, session_id: str) -> int:
        return await self._run(lambda s: s.version(session_id))

    async def find_session(self, prefix: str) -> str:
        return await self._run(lambda s: s.find_session(prefix))

    async def session_info(self, session_id: str) -> SessionInfo:
        return await self._run(lambda s: s.session_info(session_id))

    async def sessions(
        self,
        *,
        app: str | None = None,
        user: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        after: SessionInfo | None = None,
    ) -> list[SessionInfo]:
        listing = functools.partial(
            SessionStore.sessions,
            app=app,
            user=user,
            tag=tag,
            limit=limit,
            offset=offset,
            after=after,
        )
        return await self._run(listing)

    async def search(
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
        found = functools.partial(
            SessionStore.search,
            query=query,
            app=app,
            user=user,
            tag=tag,
            role=role,
            since=since,
            limit=limit,
        )
        return await self._run(found)

    async def verify(self, session_id: str, *, against: Checkpoint | None = None) -> VerifyReport:
        return await self._run(lambda s: s.verify(session_id, against=against))

    async def verify_all(
        self,
        *,
        against: Checkpoint | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[VerifyReport]:
        """Every report at once; `progress` is called in the worker thread."""
        return await self._run(lambda s: list(s.verify_all(against=against, progress=progress)))

    async def export_session(
        self, session_id: str, *, at: int | datetime | None = None
    ) -> list[str]:
        return await self._run(lambda s: list(s.export_session(session_id, at=at)))

    @overload
    async def import_session(
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
    async def import_session(
        self,
        source: str | Iterable[str],
        *,
        format: ImportFormat = "sessionstore",
        session_id: str | None = None,
        title: str | None = None,
        model: str | None = None,
        context_window: int | None = None,
        encoding: str = DEFAULT_ENCODING,
    ) -> AsyncSession: ...
    async def import_session(
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
    ) -> AsyncSession | ImportResult:
        """As `SessionStore.import_session`; `progress` is called in the worker thread."""
        if isinstance(source, os.PathLike):
            path = source
            return await self._run(
                lambda s: s.import_session(
                    path,
                    format=format,
                    session_id=session_id,
                    title=title,
                    model=model,
                    context_window=context_window,
                    encoding=encoding,
                    strict=strict,
                    progress=progress,
                )
            )
        text = source
        form: ImportFormat = "sessionstore" if format is None else format
        imported = await self._run(
            lambda s: s.import_session(
                text,
                format=form,
                session_id=session_id,
                title=title,
                model=model,
                context_window=context_window,
                encoding=encoding,
            )
        )
        return self._session(imported)

    async def view(
        self,
        session_id: str,
        *,
        at: int | datetime | None = None,
        prices: Mapping[str, Mapping[str, float]] | None = None,
    ) -> str:
        return await self._run(lambda s: s.view(session_id, at=at, prices=prices))

    async def view_index(
        self, *, app: str | None = None, user: str | None = None, tag: str | None = None
    ) -> str:
        return await self._run(lambda s: s.view_index(app=app, user=user, tag=tag))

    async def stats(self) -> StoreStats:
        return await self._run(SessionStore.stats)

    async def summaries(
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
        listing = functools.partial(
            SessionStore.summaries,
            app=app,
            user=user,
            tag=tag,
            limit=limit,
            offset=offset,
            after=after,
        )
        return await self._run(lambda s: listing(s, session_id))

    async def close(self) -> None:
        """Release the database connections and the worker threads."""
        if self._store is not None:
            await self._run(SessionStore.close)
        self._workers.shut_down()

    async def __aenter__(self) -> AsyncSessionStore:
        await self._run(lambda s: None)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
