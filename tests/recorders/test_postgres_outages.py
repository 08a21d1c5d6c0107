"""A PostgreSQL server that drops the store's connections (a restart, a failover) or refuses new
ones (`ALLOW_CONNECTIONS false`): every public call raises `DatabaseUnavailable`, never a
driver error, changes nothing, and works again once the server takes connections again.

The tests use a scratch database (`ALLOW_CONNECTIONS` is a database's setting), and each test a
schema of its own in it, dropped afterwards; they terminate only that database's connections.
The scratch databases are kept on the server between runs (`sessionstore_outages_1`, `_2`, ...,
created when missing), never dropped: dropping a database makes the server checkpoint, which
took one to two minutes of a test run on a busy machine. A process claims one with an
advisory lock for as long as it runs these tests, so two test runs at once (two xdist workers,
two checkouts) never cut each other's connections."""

from __future__ import annotations

import contextlib
import re
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import pytest
import sqlalchemy as sa

from sessionstore import DatabaseUnavailable, Session, SessionStore, SessionStoreError
from sessionstore.events import TextPart
from tests.conftest import POSTGRES_URL, require_postgres


@dataclass(frozen=True)
class ScratchDatabase:
    name: str
    url: str
    admin: sa.Engine

    def _run(self, sql: str) -> None:
        with self.admin.connect() as conn:
            conn.execute(sa.text(sql))

    def drop_connections(self) -> None:
        self._run(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{self.name}' AND pid <> pg_backend_pid()"
        )

    def refuse_connections(self, refuse: bool) -> None:
        self._run(f"ALTER DATABASE {self.name} ALLOW_CONNECTIONS {'false' if refuse else 'true'}")
        if refuse:
            self.drop_connections()


SCRATCH_DATABASES = 16
"""Kept scratch databases a run may claim: more than the test processes that run at once."""
_CLAIM = 4_270_001
"""The advisory lock class whose key `n` claims scratch database `n`."""


@pytest.fixture(scope="module")
def scratch_database() -> Iterator[ScratchDatabase]:
    require_postgres()
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    with admin.connect() as claim:  # held open: the advisory lock lasts as long as it does
        name = _claimed_database(claim)
        url = sa.make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
        database = ScratchDatabase(name, url, admin)
        try:
            yield database
        finally:
            database.refuse_connections(False)
    admin.dispose()


def _claimed_database(claim: sa.Connection) -> str:
    """The name of a kept scratch database this connection now holds the lock of, created
    if it is missing."""
    for n in range(1, SCRATCH_DATABASES + 1):
        lock = sa.text("SELECT pg_try_advisory_lock(:c, :n)")
        if not claim.execute(lock, {"c": _CLAIM, "n": n}).scalar_one():
            continue
        name = f"sessionstore_outages_{n}"
        exists = claim.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": name})
        if exists.first() is None:
            claim.execute(sa.text(f"CREATE DATABASE {name}"))
        return name
    pytest.fail(f"all {SCRATCH_DATABASES} scratch databases are claimed by other test runs")


@pytest.fixture
def scratch(scratch_database: ScratchDatabase) -> Iterator[ScratchDatabase]:
    """The scratch database, taking connections, with a new schema for this test's store."""
    schema = f"test_{uuid.uuid4().hex[:16]}"
    scratch_database.refuse_connections(False)
    engine = sa.create_engine(scratch_database.url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = sa.make_url(scratch_database.url)
    url = url.update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield replace(scratch_database, url=url.render_as_string(hide_password=False))
    finally:
        scratch_database.refuse_connections(False)
        scratch_database.drop_connections()  # a store the test left open holds the schema
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def secret_part(session: Session) -> str:
    part = session.context().messages[-1].parts[0]
    assert isinstance(part, TextPart)
    return part.id


CALLS: dict[str, Callable[[SessionStore, Session], object]] = {
    "append": lambda store, s: s.append_user("one more"),
    "append to a new session": lambda store, s: store.create_session(model="m"),
    "read": lambda store, s: store.read(s.id),
    "resume": lambda store, s: store.session(s.id),
    "context": lambda store, s: s.context(),
    "sessions": lambda store, s: store.sessions(),
    "summaries": lambda store, s: store.summaries(),
    "redact": lambda store, s: s.redact([secret_part(s)], reason="a secret"),
    "purge": lambda store, s: store.purge(s.id, reason="gone"),
    "verify": lambda store, s: store.verify(s.id),
    "verify all": lambda store, s: list(store.verify_all()),
    "export": lambda store, s: list(store.export_session(s.id)),
    "stats": lambda store, s: store.stats(),
    "open another store": lambda store, s: SessionStore(store.url).close(),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_every_call_is_unavailable_while_the_database_refuses_connections(
    scratch: ScratchDatabase, call: str
) -> None:
    store = SessionStore(scratch.url)
    s = store.create_session(model="m", session_id="kept")
    s.append_user("the secret is 42")
    secret = secret_part(s)  # read now: the redaction's own read would fail first otherwise
    rows = store.read(s.id)
    scratch.refuse_connections(True)
    for _attempt in range(2):  # a dead pooled connection first, then a refused new one
        with pytest.raises(DatabaseUnavailable, match=f"^{re.escape(scratch.url)}: [a-z]"):
            CALLS[call](store, s) if call != "redact" else s.redact([secret], reason="a secret")
    with pytest.raises(DatabaseUnavailable):  # this store's own pool meets the outage too
        store.version(s.id)
    scratch.refuse_connections(False)
    assert store.read(s.id) == rows  # nothing was written
    s.append_user("back")  # and the same store works again
    assert store.version(s.id) == 3
    store.close()


def test_every_call_is_unavailable_or_done_when_the_server_drops_its_connections(
    scratch: ScratchDatabase,
) -> None:
    """A dropped pooled connection fails its call with `DatabaseUnavailable` (or is replaced
    before the call, when its ping finds it gone); the next call works."""
    store = SessionStore(scratch.url)
    s = store.create_session(model="m")
    s.append_user("the secret is 42")
    for call in CALLS.values():
        scratch.drop_connections()
        with contextlib.suppress(DatabaseUnavailable):
            call(store, s)
        call(store, s)
    store.close()


def test_four_writers_through_two_outages_see_only_typed_errors(scratch: ScratchDatabase) -> None:
    """Four threads append while the database twice drops every connection and refuses new
    ones for a while: each append either returns or raises `DatabaseUnavailable`, and every
    append that returned is stored."""
    store = SessionStore(scratch.url, busy_timeout_ms=2_000)
    sessions = [store.create_session(model="m") for _ in range(4)]
    stop = threading.Event()
    outcomes: Counter[str] = Counter()
    returned: list[list[str]] = [[] for _ in sessions]

    def write(n: int) -> None:
        s = store.session(sessions[n].id)
        count = 0
        while not stop.is_set():
            count += 1
            text = f"writer {n}, append {count}"
            try:
                s.append_user(text)
            except SessionStoreError as exc:
                outcomes[type(exc).__name__] += 1
                if not isinstance(exc, DatabaseUnavailable):
                    s.refresh()
            except Exception as exc:  # the defect: a driver error escaping untyped
                outcomes[f"untyped {type(exc).__module__}.{type(exc).__name__}"] += 1
            else:
                outcomes["stored"] += 1
                returned[n].append(text)

    writers = [threading.Thread(target=write, args=(n,)) for n in range(len(sessions))]
    for writer in writers:
        writer.start()
    try:
        for _ in range(2):
            stop.wait(0.5)
            scratch.refuse_connections(True)
            stop.wait(0.5)
            scratch.drop_connections()
            stop.wait(0.5)
            scratch.refuse_connections(False)
        stop.wait(0.5)
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert set(outcomes) == {"stored", "DatabaseUnavailable"}, outcomes
    for s, texts in zip(sessions, returned, strict=True):
        stored = [
            event.payload.message.parts[0].text  # type: ignore[attr-defined]
            for event in store.read(s.id)[1:]
        ]
        assert stored == texts
    store.close()
