"""Backends for the contract suite: every test that takes `backend` or `store` runs on SQLite,
on PostgreSQL, on PostgreSQL with every table hash-partitioned (`postgresql-partitioned`), and
on a memory database (`memory://NAME`, one per test, shared by every store the test opens).

PostgreSQL is reached at `$SESSIONSTORE_TEST_POSTGRES_URL` (default: the CI machine's server);
each test gets a fresh schema, dropped afterwards. With no server the PostgreSQL cases skip
with the reason, except under `CI=true`, where they fail: CI must run them.

The partitioned backend's URL carries `partitions=4`, so every store, CLI run, subprocess and
`alembic upgrade head` of a test creates its schema partitioned, as a deployment would. Its
`name` is "postgresql" (what a test that asks for the dialect wants to know); `partitions` says
which layout it is. A few tests are skipped on it, each with its reason (`NOT_ON_PARTITIONED`):
those about the unpartitioned layout itself (the exact list of tables, `alembic check` against
`store/storage/_schema.py`: partitions are tables too; tests/recorders/test_partitioned_postgres.py
checks that layout), and the argument fuzzer, which opens the URL with a plain engine. The
memory backend skips what needs SQL (`NOT_ON_MEMORY`, and any test that asks for a SQL engine:
tampering with rows, triggers, migrations) or another process.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import sessionstore
from sessionstore import SessionStore
from sessionstore.storage._memory import database_named as memory_database
from sessionstore.storage._memory import discard as discard_memory_database

CHECKOUT = Path(__file__).resolve().parent.parent


def _code_under_test() -> Path:
    """The checkout the installed `sessionstore` runs from (an editable install links into
    one), or its site-packages folder for a plain install."""
    return Path(sessionstore.__file__).resolve().parent.parent


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test another checkout's code: an editable install made from another clone or
    git worktree would run that one's library under this one's tests."""
    code = _code_under_test()
    if code != CHECKOUT and (code / "pyproject.toml").exists():
        pytest.exit(
            f"the installed sessionstore runs the code of {code}, not of this checkout "
            f"{CHECKOUT}: pip install -e {CHECKOUT}",
            returncode=4,
        )


POSTGRES_URL = os.environ.get(
    "SESSIONSTORE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
TEST_PARTITIONS = 4
"""Partitions per table of the partitioned backend: enough that sessions land in different
ones, few enough that creating a schema per test stays quick."""
BACKENDS = ("sqlite", "postgresql", "postgresql-partitioned", "memory")

NOT_ON_PARTITIONED = {
    "test_opening_an_empty_database_migrates_it_to_head": "it lists the tables exactly",
    "test_downgrade_to_base_and_upgrade_again": "it lists the tables exactly",
    "test_the_revisions_match_the_declared_tables": "alembic check would report each partition",
    "test_any_call_with_any_arguments_raises_only_typed_errors_and_writes_nothing_then": (
        "it builds an engine of its own from the URL, whose driver refuses sessionstore's "
        "`partitions` option; its subject is arguments, not storage"
    ),
}
"""Tests of the behaviour suite that the partitioned backend skips, and why."""

_NO_SCHEMA = "a memory database is always at the schema's head: there is no schema to migrate"
NOT_ON_MEMORY = {
    "test_a_read_only_command_does_not_migrate_an_empty_database": _NO_SCHEMA,
    "test_with_migrate_off_an_empty_database_says_what_to_run": _NO_SCHEMA,
    "test_with_migrate_off_an_empty_database_is_refused_and_left_empty": _NO_SCHEMA,
    "test_alembic_upgrade_head_works_from_the_repository": _NO_SCHEMA,
    "test_downgrade_to_base_and_upgrade_again": _NO_SCHEMA,
    "test_the_revisions_match_the_declared_tables": _NO_SCHEMA,
    "test_a_database_at_0002_upgrades_and_keeps_its_sessions": _NO_SCHEMA,
    "test_sigkill_mid_stream_leaves_every_committed_event_and_a_valid_chain": (
        "it writes from another process, whose memory is its own"
    ),
    "test_an_agent_killed_mid_run_resumes_with_the_identical_context": (
        "it writes from another process, whose memory is its own"
    ),
    "test_any_call_with_any_arguments_raises_only_typed_errors_and_writes_nothing_then": (
        "it builds a SQL engine of its own from the URL"
    ),
}
"""Tests of the behaviour suite that the memory backend skips, and why. Those that read or
change SQL tables otherwise skip when they ask for them (`Backend.raw_engine`), with the
reason; `Backend.table_rows` reads a memory database's rows too."""


@dataclass(frozen=True)
class Backend:
    """A database for one test, and what the tests need to know about its dialect."""

    name: str
    url: str
    partitions: int | None = None
    """Hash partitions per table (PostgreSQL), `None` for plain tables."""

    def raw_engine(self) -> sa.Engine:
        """A plain engine, outside the store, for doing what the store would not. A test on
        the memory backend skips here: it has no tables to read or change."""
        if self.name == "memory":
            pytest.skip("not on memory: the test reads or changes SQL tables, which it has not")
        url = sa.make_url(self.url).difference_update_query(["partitions"])
        return sa.create_engine(url, poolclass=sa.pool.NullPool)

    def execute(self, sql: str, **params: Any) -> None:
        engine = self.raw_engine()
        try:
            with engine.begin() as conn:
                conn.execute(sa.text(sql), params)
        finally:
            engine.dispose()

    def drop_immutability_triggers(self) -> None:
        if self.name == "postgresql":
            self.execute("DROP TRIGGER events_refuse_update_delete ON events")
        else:
            self.execute("DROP TRIGGER events_refuse_update")
            self.execute("DROP TRIGGER events_refuse_delete")

    def table_rows(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of the store's tables, in a stable order: to prove nothing changed."""
        if self.name == "memory":
            return memory_rows(self.url)
        engine = self.raw_engine()
        try:
            with engine.connect() as conn:
                return {
                    "events": [
                        tuple(r)
                        for r in conn.execute(
                            sa.text(
                                "SELECT position, session_id, seq, event_id, type, schema_version, "
                                "payload, prev_hash, hash FROM events ORDER BY position"
                            )
                        )
                    ],
                    "sessions": [
                        tuple(r)
                        for r in conn.execute(
                            sa.text(
                                "SELECT id, title, head_seq, head_hash, updated_at FROM sessions "
                                "ORDER BY id"
                            )
                        )
                    ],
                }
        finally:
            engine.dispose()


def memory_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """`Backend.table_rows` of a memory database: its events and sessions as those columns."""
    database = memory_database(str(sa.make_url(url).host))
    with database.lock:
        events = sorted(
            (e.position, e.session_id, e.seq, e.event_id, e.type, e.schema_version, e.payload,
             e.prev_hash, e.hash)
            for stream in database.streams.values()
            for e in stream.events
        )  # fmt: skip
        sessions = [
            (session_id, row.title, row.head_seq, row.head_hash, row.updated_at)
            for session_id, row in sorted(database.sessions.items())
        ]
    return {"events": events, "sessions": sessions}


@cache
def postgres_unavailable() -> str | None:
    """Why PostgreSQL cannot be used here, or None when it can."""
    try:
        engine = sa.create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
    except ModuleNotFoundError as exc:
        return f"the PostgreSQL driver is not installed ({exc.name}): pip install -e '.[postgres]'"
    except sa.exc.SQLAlchemyError as exc:
        return f"no PostgreSQL server at {POSTGRES_URL}: {str(exc).splitlines()[0]}"
    return None


def require_postgres() -> None:
    reason = postgres_unavailable()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the PostgreSQL tests, but {reason}")
    pytest.skip(reason)


@pytest.fixture
def sqlite_backend(tmp_path: Path) -> Backend:
    return Backend("sqlite", f"sqlite:///{tmp_path / 'store.db'}")


@contextmanager
def fresh_database(name: str, folder: Path) -> Iterator[Backend]:
    """An empty database of backend `name` (one of `BACKENDS`): a new SQLite file in
    `folder`, or a new PostgreSQL schema, dropped afterwards, whose URL asks for partitioned
    tables for "postgresql-partitioned"."""
    assert name in BACKENDS, name
    if name == "memory":
        database = f"test-{uuid.uuid4().hex}"
        try:  # one store in the process, shared by every store the test opens on the URL
            yield Backend("memory", f"memory://{database}")
        finally:
            discard_memory_database(database)
        return
    if name == "sqlite":
        yield Backend("sqlite", f"sqlite:///{folder / f'{uuid.uuid4().hex}.db'}")
        return
    require_postgres()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    admin = sa.create_engine(POSTGRES_URL, poolclass=sa.pool.NullPool)
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    query = {"options": f"-csearch_path={schema}"}
    partitions = TEST_PARTITIONS if name == "postgresql-partitioned" else None
    if partitions is not None:
        query["partitions"] = str(partitions)
    url = sa.make_url(POSTGRES_URL).update_query_dict(query)
    try:
        yield Backend("postgresql", url.render_as_string(hide_password=False), partitions)
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def postgres_backend(tmp_path: Path) -> Iterator[Backend]:
    with fresh_database("postgresql", tmp_path) as backend:
        yield backend


@pytest.fixture
def partitioned_postgres_backend(tmp_path: Path) -> Iterator[Backend]:
    with fresh_database("postgresql-partitioned", tmp_path) as backend:
        yield backend


@pytest.fixture
def memory_backend(tmp_path: Path) -> Iterator[Backend]:
    with fresh_database("memory", tmp_path) as backend:
        yield backend


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "postgresql-partitioned":
        why = NOT_ON_PARTITIONED.get(request.function.__name__)
        if why is not None:
            pytest.skip(f"not on partitioned tables: {why}")
    if request.param == "memory":
        why = NOT_ON_MEMORY.get(request.function.__name__)
        if why is not None:
            pytest.skip(f"not on memory: {why}")
    fixture = {
        "sqlite": "sqlite_backend",
        "postgresql": "postgres_backend",
        "postgresql-partitioned": "partitioned_postgres_backend",
        "memory": "memory_backend",
    }[request.param]
    result: Backend = request.getfixturevalue(fixture)
    return result


@pytest.fixture
def store(backend: Backend) -> Iterator[SessionStore]:
    opened = SessionStore(backend.url)
    yield opened
    opened.close()
