"""Backends for the contract suite: every test that takes `backend` or `store` runs on SQLite,
on PostgreSQL, on PostgreSQL with every table hash-partitioned (`postgresql-partitioned`; the
tests of storage only, see `LAYOUT_BLIND`), and on a memory database (`memory://NAME`, one per
test, shared by every store the test opens).

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

How the suite runs (the hooks below): on two pytest-xdist workers a CPU (at most four) unless
told otherwise (`-n 0` or `-p no:xdist` runs it in this process); without the soak and race
loops at their full counts, marked `slow`, which `-m slow` runs; every test that uses PostgreSQL
is marked `postgres`, so `-m "not postgres"` runs the rest, on SQLite and memory databases
alone.
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
from sessionstore.storage import Recorder, distribute, grant, open_recorder
from sessionstore.storage._memory import database_named as memory_database
from sessionstore.storage._memory import discard as discard_memory_database

CHECKOUT = Path(__file__).resolve().parent.parent

# The suite starts hundreds of Python processes (its workers, the command line, the crash and
# packaging tests), each importing sessionstore anew: with `PYTHONDONTWRITEBYTECODE` set (as on
# some CI machines) each would compile every module it imports again, a third of a second of a
# command's start. Processes started from here may write their bytecode (to `__pycache__`
# folders, which git ignores); this process itself started before and is left as it is.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


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
CITUS = os.environ.get("SESSIONSTORE_TEST_CITUS") == "1"
"""Whether `POSTGRES_URL` is the coordinator of a Citus cluster whose tables the tests
distribute: each schema a test creates at head is spread by session (`SessionStore.distribute`)
before the test uses it, in four shards a table (`citus.shard_count`), so the behaviour suite
runs on distributed tables. Tests that cannot hold there skip, saying why (`NOT_ON_CITUS`)."""
ROLE = os.environ.get("SESSIONSTORE_TEST_ROLE")
"""A PostgreSQL role the tests' stores connect as, instead of `POSTGRES_URL`'s user (who owns
the tables): created when missing, never a superuser. Each schema a test creates at head is
granted to it (`SessionStore.grant`) before a store uses it, as an operator runs `sessionstore
db grant ROLE` after `db upgrade`; a store that must migrate migrates as the owner, who
creates the tables; tests that tamper do it as the owner (`Backend.raw_engine`). So the
behaviour suite runs with no right but those the grants give: on a Citus coordinator
(`CITUS`), it is what keeps events insert-only and bodies deleted only by redactions."""
TEST_PARTITIONS = 4
"""Partitions per table of the partitioned backend: enough that sessions land in different
ones, few enough that creating a schema per test stays quick."""
BACKENDS = ("sqlite", "postgresql", "postgresql-partitioned", "memory")
POSTGRES_BACKENDS = ("postgresql", "postgresql-partitioned")

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

_HEAVY = (
    "it moves tens of megabytes through the store, which the partitioned layout stores as the "
    "plain one does (its rows are routed, not cut): the default run keeps it on PostgreSQL"
)
SLOW_ON_PARTITIONED = {
    "test_a_fifty_megabyte_user_message_is_cut_by_bytes_before_tiktoken_sees_it": _HEAVY,
    "test_an_output_over_the_old_16_mib_limit_is_stored_whole_and_shown_cut": _HEAVY,
    "test_an_import_cut_short_resumes_where_it_stopped": _HEAVY,
    "test_an_agent_killed_mid_run_resumes_with_the_identical_context": (
        "a child process's run, which the default run kills on PostgreSQL"
    ),
}
"""Tests of the behaviour suite that run on the partitioned layout only in the slow set (which
CI runs too), and why: each takes 10 to 30 s there and tests nothing of partitions that its run
on plain PostgreSQL and the rest of the suite on partitioned tables do not."""
SLOW_ON_POSTGRESQL = {
    "test_the_conformance_suite_passes_every_test_of_every_capability": (
        "LangGraph's whole conformance suite, a round trip or more a call (25 s on PostgreSQL): "
        "the default run passes it on SQLite and memory"
    ),
}
"""Tests that run on PostgreSQL (either layout) only in the slow set, and why."""

LAYOUT_BLIND = (
    "tests/providers/",
    "tests/importers/",
    "tests/policies/",
    "tests/integrations/",
    "tests/cli/",
    "tests/view/",
    "tests/observe/",
    "tests/contract/test_typed_errors.py",
    "tests/contract/test_errors.py",
    "tests/contract/test_canonical_round_trip.py",
    "tests/contract/test_context_management.py",
    "tests/contract/test_stored_config.py",
    "tests/contract/test_fits_any_window.py",
)
"""Tests that do not run on the partitioned layout at all: the layout decides which partition a
row goes to, not what a render, an importer, a policy, an adapter, a command or an argument
check does with the rows, and these run on plain PostgreSQL (same dialect, same JSONB). The
partitioned layout runs the tests of storage itself: the recorder contract, append, redaction,
replay, snapshots and checkpoints, verify, migrations, listing, search, transfer, crashes and
concurrency. (It took a sixth of the suite's tests, more of its time: each creates a schema of
some forty tables.)"""

_NO_SCHEMA = "a memory database is always at the schema's head: there is no schema to migrate"
NOT_ON_MEMORY = {
    "test_a_read_only_command_does_not_migrate_an_empty_database": _NO_SCHEMA,
    "test_with_migrate_off_an_empty_database_says_what_to_run": _NO_SCHEMA,
    "test_with_migrate_off_an_empty_database_is_refused_and_left_empty": _NO_SCHEMA,
    "test_alembic_upgrade_head_works_from_the_repository": _NO_SCHEMA,
    "test_downgrade_to_base_and_upgrade_again": _NO_SCHEMA,
    "test_the_revisions_match_the_declared_tables": _NO_SCHEMA,
    "test_a_database_at_0002_upgrades_and_keeps_its_sessions": _NO_SCHEMA,
    "test_the_upgrade_to_bodies_per_session_copies_what_each_session_holds": _NO_SCHEMA,
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


MOST_WORKERS = 4
"""Workers a plain `python -m pytest` starts at most: a worker holds up to some 20 connections
to PostgreSQL at once (the async and thread tests), and a server allows 100 by default. More
run with `-n 8`."""
WORKERS_PER_CPU = 2
"""A worker spends about half its time waiting (on PostgreSQL's commits, on SQLite's syncs, on
the processes the crash and CLI tests start): measured on 2 CPUs, the suite used 11 minutes of
CPU in an 11 min 42 s run on two workers. Two workers a CPU keep the CPUs busy through those
waits."""


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Run on `WORKERS_PER_CPU` pytest-xdist workers a CPU, at most `MOST_WORKERS`, when no `-n`
    was given. Set here rather than in `addopts`, so that `-p no:xdist` (or a checkout without
    pytest-xdist) still runs, in this one process."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    option = config.option
    if option.numprocesses is None and option.dist == "no" and not option.tx:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        option.numprocesses = min(MOST_WORKERS, WORKERS_PER_CPU * (cpus or 1))
        option.dist = "load"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the partitioned cases of `LAYOUT_BLIND` tests; mark the tests that use
    PostgreSQL `postgres`; leave out those marked `slow` unless the `-m` expression names that
    marker or the command line names them by id (`file::test`)."""
    blind = [item for item in items if on_partitioned(item) and layout_blind(item)]
    if blind:
        config.hook.pytest_deselected(items=blind)
        gone = set(map(id, blind))
        items[:] = [item for item in items if id(item) not in gone]
    for item in items:
        if uses_postgres(item):
            item.add_marker(pytest.mark.postgres)
        name = getattr(item, "originalname", "")
        if on_partitioned(item) and name in SLOW_ON_PARTITIONED:
            item.add_marker(pytest.mark.slow)
        if on_postgresql(item) and name in SLOW_ON_POSTGRESQL:
            item.add_marker(pytest.mark.slow)
        why = NOT_ON_CITUS.get(name) or NOT_ON_CITUS.get(item.nodeid)
        if CITUS and why is not None and uses_postgres(item):
            item.add_marker(pytest.mark.skip(reason=f"not on Citus: {why}"))
        why = NOT_AS_ROLE.get(name)
        if ROLE and why is not None and uses_postgres(item):
            item.add_marker(pytest.mark.skip(reason=f"not as {ROLE}: {why}"))
    if "slow" in config.option.markexpr:
        return
    named = named_tests(config)
    left_out = [
        item
        for item in items
        if item.get_closest_marker("slow") is not None
        and not any(item.nodeid == n or item.nodeid.startswith((f"{n}::", f"{n}[")) for n in named)
    ]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        kept = set(map(id, left_out))
        items[:] = [item for item in items if id(item) not in kept]


def layout_blind(item: pytest.Item) -> bool:
    """A test in one of the `LAYOUT_BLIND` modules or folders."""
    return item.nodeid.startswith(LAYOUT_BLIND)


def on_postgresql(item: pytest.Item) -> bool:
    """A test parametrized with a PostgreSQL backend, of either layout."""
    callspec = getattr(item, "callspec", None)
    return callspec is not None and any(
        isinstance(value, str) and value.startswith("postgresql")
        for value in callspec.params.values()
    )


def on_partitioned(item: pytest.Item) -> bool:
    """A test parametrized with the partitioned PostgreSQL backend."""
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "postgresql-partitioned" in callspec.params.values()


def uses_postgres(item: pytest.Item) -> bool:
    """A test parametrized with a PostgreSQL backend, taking a PostgreSQL fixture, or in a
    module about PostgreSQL."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(
        isinstance(value, str) and value in POSTGRES_BACKENDS for value in callspec.params.values()
    ):
        return True
    fixtures = set(getattr(item, "fixturenames", ()))
    return bool(fixtures & {"postgres_backend", "partitioned_postgres_backend"}) or (
        "postgres" in item.path.name
    )


def named_tests(config: pytest.Config) -> set[str]:
    """The node ids (`tests/x.py::test_y`) the command line names, relative to the root."""
    named = set()
    for arg in config.args:
        path, separator, rest = arg.partition("::")
        if not separator:
            continue
        try:
            where = (config.invocation_params.dir / path).resolve().relative_to(config.rootpath)
        except ValueError:
            continue
        named.add(f"{where.as_posix()}::{rest}")
    return named


def full_in_slow(name: str, *, default: int, full: int) -> pytest.MarkDecorator:
    """Parametrize a soak or race loop by its count `name` (iterations, examples, levels):
    `default` in the default run, so that the loop still runs there, and `full` in the slow
    set (`-m slow`)."""
    return pytest.mark.parametrize(
        name,
        [
            pytest.param(default, id=f"{name}={default}"),
            pytest.param(full, id=f"{name}={full}", marks=pytest.mark.slow),
        ],
    )


@dataclass(frozen=True)
class Backend:
    """A database for one test, and what the tests need to know about its dialect."""

    name: str
    url: str
    partitions: int | None = None
    """Hash partitions per table (PostgreSQL), `None` for plain tables."""
    owner_url: str | None = None
    """The URL as the tables' owner, where `url` connects as another role (`ROLE`)."""

    def raw_engine(self) -> sa.Engine:
        """A plain engine, outside the store, for doing what the store would not (as the
        tables' owner). A test on the memory backend skips here: it has no tables to read or
        change."""
        if self.name == "memory":
            pytest.skip("not on memory: the test reads or changes SQL tables, which it has not")
        url = sa.make_url(self.owner_url or self.url).difference_update_query(["partitions"])
        return sa.create_engine(url, poolclass=sa.pool.NullPool)

    def execute(self, sql: str, **params: Any) -> None:
        engine = self.raw_engine()
        try:
            with engine.begin() as conn:
                if CITUS and self.name == "postgresql":  # a test that tampers drops triggers
                    conn.execute(sa.text("SET LOCAL citus.enable_unsafe_triggers = on"))
                conn.execute(sa.text(sql), params)
        finally:
            engine.dispose()

    def drop_body_guards(self) -> None:
        """Let rows of `blobs` be changed and deleted by hand: a test that tampers with them."""
        if self.name == "sqlite":
            self.execute("DROP TRIGGER blobs_refuse_update")
            self.execute("DROP TRIGGER blobs_refuse_delete")
        else:  # one server's guard, or a Citus shard's (`PostgresRecorder.distribute`)
            self.execute("DROP TRIGGER IF EXISTS blobs_guard ON blobs")
            self.execute("DROP TRIGGER IF EXISTS blobs_refuse_update ON blobs")

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
        if ROLE:
            conn.execute(sa.text(f'GRANT USAGE ON SCHEMA "{schema}" TO "{ensure_role(conn)}"'))
    query = {"options": f"-csearch_path={schema}" + (" -ccitus.shard_count=4" if CITUS else "")}
    partitions = TEST_PARTITIONS if name == "postgresql-partitioned" else None
    if partitions is not None:
        query["partitions"] = str(partitions)
    url = sa.make_url(POSTGRES_URL).update_query_dict(query)
    owner = url.render_as_string(hide_password=False)
    connecting = url.set(username=ROLE).render_as_string(hide_password=False) if ROLE else owner
    try:
        yield Backend("postgresql", connecting, partitions, owner if ROLE else None)
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def ensure_role(conn: sa.Connection) -> str:
    """`ROLE`, created (able to log in) unless it exists: by whichever process gets there
    first (another test process may create it meanwhile)."""
    assert ROLE is not None
    if conn.execute(sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": ROLE}).first():
        return ROLE
    try:
        with conn.begin_nested():
            conn.execute(sa.text(f'CREATE ROLE "{ROLE}" LOGIN'))
    except sa.exc.DBAPIError as exc:
        if "already exists" not in str(exc):
            raise
    return ROLE


def as_owner(url: sa.URL) -> str:
    """`url` as `POSTGRES_URL`'s user, the tables' owner (where it names `ROLE`)."""
    owner = sa.make_url(POSTGRES_URL).username
    return url.set(username=owner).render_as_string(hide_password=False)


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


_RECORDING: list[bool] = []
"""Not empty while `schema_statements` records a migration (which is not distributed then)."""

_BLOBS_GUARD = (
    "it tampers as the tables' owner, and on Citus no trigger of a shard can read `events`, so "
    "the owner's delete of a body is not checked against the redaction naming it there; the "
    "application's role is held to it by its grants (tests/contract/test_grants.py)"
)
_DOWNGRADES = (
    "it takes the schema back to an older revision; the revisions downgrade tables on one "
    "server, and a distributed database is upgraded, never taken back"
)
NOT_ON_CITUS: dict[str, str] = {
    "test_a_database_at_0002_upgrades_and_keeps_its_sessions": _DOWNGRADES,
    "test_a_database_at_0003_upgrades_with_its_counters_filled_in": _DOWNGRADES,
    "test_a_store_that_upgrades_from_0003_counts_every_session": _DOWNGRADES,
    "test_a_database_at_0004_is_indexed_by_its_upgrade": _DOWNGRADES,
    "test_the_upgrade_to_bodies_per_session_copies_what_each_session_holds": _DOWNGRADES,
    "test_a_deletion_no_redaction_names_loses_and_writes_nothing": _BLOBS_GUARD,
    "test_the_database_refuses_deleting_a_body_no_redaction_names": _BLOBS_GUARD,
    "tests/recorders/test_partitioned_postgres.py::"
    "test_every_partition_refuses_update_delete_and_truncate[blobs-blobs]": _BLOBS_GUARD,
    "test_a_session_lives_in_the_same_partition_of_every_table": (
        "it reads which partition holds a row from `tableoid`, which on Citus is the OID of a "
        "shard on a worker, not of a partition on the coordinator"
    ),
}
"""Tests of the behaviour suite that skip on distributed tables (`CITUS`), and why: by the
test's name, or one case by its node id."""


_MIGRATES = (
    "it runs the Alembic revisions itself, or takes the schema back to an older revision: the "
    "tables' owner's steps, which the application's role never takes (its stores' migrations "
    "run as the owner: `set_up_as_an_operator`)"
)
NOT_AS_ROLE: dict[str, str] = {
    "test_alembic_upgrade_head_works_from_the_repository": _MIGRATES,
    "test_alembic_upgrade_head_from_the_repository_creates_the_same_layout": _MIGRATES,
    "test_downgrade_to_base_and_upgrade_again": _MIGRATES,
    "test_the_revisions_match_the_declared_tables": _MIGRATES,
    "test_processes_opening_one_empty_database_together_all_succeed": _MIGRATES,
    "test_a_database_at_0002_upgrades_and_keeps_its_sessions": _MIGRATES,
    "test_a_database_at_0003_upgrades_with_its_counters_filled_in": _MIGRATES,
    "test_a_store_that_upgrades_from_0003_counts_every_session": _MIGRATES,
    "test_a_database_at_0004_is_indexed_by_its_upgrade": _MIGRATES,
    "test_the_upgrade_to_bodies_per_session_copies_what_each_session_holds": _MIGRATES,
    "test_another_applications_alembic_revision_is_refused_and_left_alone": (
        "the other application's `alembic_version` is its owner's, which the role may not "
        "read: opening it is `DatabaseUnavailable` (permission denied), and nothing is changed"
    ),
}
"""Tests of the behaviour suite that skip where the stores connect as `ROLE`, and why."""


@pytest.fixture(autouse=True)
def set_up_as_an_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema a store of this process migrates is set up as an operator would, as soon as it
    is at head: on a Citus coordinator (`CITUS`) distributed (`sessionstore db distribute`),
    and where the stores connect as `ROLE`, migrated by the tables' owner and granted to the
    role (`sessionstore db grant`); at an older revision the role may read it, as it must to
    find it needs upgrading. (A store another process opens, the CLI's, gets neither.)"""
    if not CITUS and not ROLE:
        return
    from sessionstore.storage._postgres import PostgresRecorder

    migrate = PostgresRecorder.migrate

    def migrate_as_an_operator(self: PostgresRecorder, revision: str, *, refuse: Any) -> None:
        owner = open_recorder(as_owner(self.url)) if ROLE else self
        assert isinstance(owner, PostgresRecorder)
        try:
            migrate(owner, revision, refuse=refuse)
            if _RECORDING:
                return
            if revision != "head":
                if ROLE:
                    tables = f'ALL TABLES IN SCHEMA "{schema_of(self.url)}"'
                    with owner.engine.begin() as conn:
                        conn.exec_driver_sql(f'GRANT SELECT ON {tables} TO "{ROLE}"')
                return
            set_up_at_head(owner)
            if ROLE:
                self.database_state()  # as at open: whether its tables are distributed
        finally:
            if owner is not self:
                owner.close()

    monkeypatch.setattr(PostgresRecorder, "migrate", migrate_as_an_operator)


def set_up_at_head(owner: Recorder) -> None:
    """What an operator runs on a schema at head, through a recorder of the tables' owner:
    `db distribute` on a Citus coordinator (`CITUS`), `db grant` for `ROLE`."""
    if CITUS and owner.database_state().distributed == frozenset():
        distribute(owner)
    if ROLE:
        grant(owner, ROLE)


def schema_of(url: sa.URL | str) -> str:
    """The schema a test's PostgreSQL URL puts first on the search path."""
    options = sa.make_url(url).query["options"]
    assert isinstance(options, str)
    return options.split("search_path=")[1].split()[0]


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
    """A store on the test's database, its schema already created (how it was created is not
    what a test of the store looks at; tests of migrations open an empty `backend`)."""
    create_schema(backend)
    opened = SessionStore(backend.url)
    yield opened
    opened.close()


_SCHEMA_STATEMENTS: dict[int | None, list[tuple[str, Any]]] = {}
"""Per layout (hash partitions per table, `None` for plain tables): what a migration to head
ran on an empty PostgreSQL schema, recorded the first time this process needs it."""


def create_schema(backend: Backend) -> None:
    """Bring the backend's empty database to head, as opening a store does.

    On PostgreSQL, running the Alembic revisions costs most of a small test: loading them,
    reading the catalog, and waiting for the migration lock, which one server holds for every
    schema of every process migrating at once (another worker's, or another checkout's run).
    So the statements a migration ran are recorded once per process and layout, then replayed
    here in one transaction, taking no lock but the new schema's own.
    `test_a_replayed_schema_is_the_one_a_migration_creates` proves the two schemas identical.
    SQLite creates its schema in a few milliseconds, so there the store migrates it; a memory
    database has no schema to create."""
    if backend.name == "memory":
        return
    if backend.name == "sqlite":
        SessionStore(backend.url).close()
        return
    engine = backend.raw_engine()
    try:
        with engine.begin() as conn:
            for statement, parameters in schema_statements(backend.partitions):
                conn.exec_driver_sql(statement, parameters)
    finally:
        engine.dispose()
    if CITUS or ROLE:
        owner = open_recorder(backend.owner_url or backend.url)
        try:
            set_up_at_head(owner)
        finally:
            owner.close()


def schema_statements(partitions: int | None) -> list[tuple[str, Any]]:
    """What a migration to head runs on an empty schema with this layout, but its reads (the
    catalog, the revision, the lock): recorded from a real migration, once per process."""
    if partitions in _SCHEMA_STATEMENTS:
        return _SCHEMA_STATEMENTS[partitions]
    name = "postgresql" if partitions is None else "postgresql-partitioned"
    assert partitions in (None, TEST_PARTITIONS), partitions
    recorded: list[tuple[str, Any]] = []
    with fresh_database(name, Path(".")) as template:
        options = sa.make_url(template.url).query["options"]

        def record(
            conn: sa.Connection, cursor: Any, statement: str, parameters: Any, *_: Any
        ) -> None:
            if conn.engine.url.query.get("options") != options:
                return  # another engine of this process
            if statement.lstrip().split(None, 1)[0].upper() not in {"SELECT", "SHOW"}:
                recorded.append((statement, parameters))

        sa.event.listen(sa.Engine, "before_cursor_execute", record)
        try:
            _RECORDING.append(True)  # the migration alone: `create_schema` distributes
            SessionStore(template.url).close()
        finally:
            sa.event.remove(sa.Engine, "before_cursor_execute", record)
            _RECORDING.clear()
    assert recorded, "the migration ran no statement to record"
    _SCHEMA_STATEMENTS[partitions] = recorded
    return recorded
