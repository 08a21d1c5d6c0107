"""PostgreSQL with every table hash-partitioned (the URL option `partitions=N`): the recorder
contract on it, the layout the revisions create, the triggers on every partition, and the
rules of the option. The behaviour suite (tests/contract) runs on it too, as the
"postgresql-partitioned" backend."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from sessionstore import DatabaseUnavailable, SchemaMismatch, SessionStore
from sessionstore.cli import main
from sessionstore.storage._migrate import alembic_config, ensure_schema
from sessionstore.storage._postgres import PostgresRecorder
from sessionstore.storage._recorder import Recorder
from sessionstore.storage._schema import compared, metadata
from tests.builders import conversation
from tests.conftest import TEST_PARTITIONS, Backend, create_schema, fresh_database
from tests.recorders.recorder_contract import SqlRecorderContract

REPO = Path(__file__).resolve().parents[2]

PARTITION_KEYS = {
    "events": "session_id",
    "sessions": "id",
    "snapshots": "session_id",
    "blobs": "session_id",
    "session_tags": "session_id",
    "search_index": "session_id",
}
SESSIONS = [f"s{n}" for n in range(12)]
"""Ids whose rows land in every one of the 4 partitions of each table (hashing is fixed: s11
is the first in partition 1)."""


class TestPartitionedPostgresRecorder(SqlRecorderContract):
    scheme = "postgresql"

    @pytest.fixture
    def recorder(self, tmp_path: Path) -> Iterator[Recorder]:
        with fresh_database("postgresql-partitioned", tmp_path) as backend:
            create_schema(backend)  # as a migration would: tests/recorders/test_replayed_schema.py
            recorder = PostgresRecorder(sa.make_url(backend.url), busy_timeout_ms=2_000)
            ensure_schema(recorder, migrate=False)
            yield recorder
            recorder.close()


@pytest.fixture
def partitioned(tmp_path: Path) -> Iterator[Backend]:
    with fresh_database("postgresql-partitioned", tmp_path) as backend:
        yield backend


def rows(backend: Backend, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    engine = backend.raw_engine()
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(sa.text(sql), params)]
    finally:
        engine.dispose()


def layout(backend: Backend) -> dict[str, tuple[str, int]]:
    """Each partitioned table of the schema: (its partition key, its number of partitions)."""
    found = rows(
        backend,
        """SELECT c.relname, pg_get_partkeydef(c.oid),
                  (SELECT count(*) FROM pg_inherits WHERE inhparent = c.oid)
           FROM pg_class c
           WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'p'""",
    )
    return {name: (key, int(count)) for name, key, count in found}


def fill(backend: Backend) -> None:
    """Sessions with bodies in every partition of every table, and a snapshot of each."""
    with SessionStore(backend.url, snapshot_every=2) as store:
        for session_id in SESSIONS:
            store.append(session_id, conversation(turns=2), expected_version=0)
            store.session(session_id).context()  # saves a snapshot


def test_every_table_is_hash_partitioned_by_session(
    partitioned: Backend,
) -> None:
    with SessionStore(partitioned.url):
        pass
    assert layout(partitioned) == {
        table: (f"HASH ({key})", TEST_PARTITIONS) for table, key in PARTITION_KEYS.items()
    }
    keys = rows(
        partitioned,
        """SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint
           WHERE contype IN ('p', 'u') AND conrelid = ANY(ARRAY['events', 'sessions',
             'snapshots', 'blobs']::regclass[])""",
    )
    assert sorted(keys) == [
        ("blobs", "PRIMARY KEY (session_id, digest)"),
        ("events", 'PRIMARY KEY ("position", session_id)'),
        ("events", "UNIQUE (session_id, event_id)"),
        ("events", "UNIQUE (session_id, seq)"),
        ("sessions", "PRIMARY KEY (id)"),
        ("snapshots", "PRIMARY KEY (session_id, projection, projection_version, seq)"),
    ]


def test_alembic_upgrade_head_from_the_repository_creates_the_same_layout(
    partitioned: Backend,
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=REPO,
        env={**os.environ, "SESSIONSTORE_URL": partitioned.url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert {table: count for table, (_, count) in layout(partitioned).items()} == dict.fromkeys(
        PARTITION_KEYS, TEST_PARTITIONS
    )


def test_the_tables_match_the_declared_ones_but_for_partitions_and_the_events_key(
    partitioned: Backend,
) -> None:
    """`alembic check` on the tables themselves: the partitions are storage, and primary keys
    are not compared (the partitioned `events` adds session_id to its key)."""
    with SessionStore(partitioned.url):
        pass
    engine = partitioned.raw_engine()
    try:
        with engine.connect() as conn:
            partitions = set(
                conn.execute(sa.text("SELECT relname FROM pg_class WHERE relispartition")).scalars()
            )
            context = MigrationContext.configure(
                conn,
                opts={
                    "include_name": lambda name, kind, _parents: (
                        not (kind == "table" and name in partitions) and compared(name)
                    )
                },
            )
            assert compare_metadata(context, metadata) == []
    finally:
        engine.dispose()


def test_a_session_lives_in_the_same_partition_of_every_table(partitioned: Backend) -> None:
    """Same key, same modulus: a session's events, head, snapshots and bodies share
    a partition number (PostgreSQL can join them partition by partition), and the sessions
    here fill every partition."""
    fill(partitioned)
    placed: dict[str, set[tuple[str, str]]] = {}
    for table, key in [
        ("events", "session_id"),
        ("sessions", "id"),
        ("snapshots", "session_id"),
        ("blobs", "session_id"),
    ]:
        for session_id, partition in rows(
            partitioned, f"SELECT DISTINCT {key}, tableoid::regclass::text FROM {table}"
        ):
            placed.setdefault(session_id, set()).add((table, partition.rsplit("_p", 1)[1]))
    numbers = {session_id: {n for _, n in where} for session_id, where in placed.items()}
    assert sorted(placed) == sorted(SESSIONS)
    assert all(len(n) == 1 for n in numbers.values()), placed
    assert {n for ns in numbers.values() for n in ns} == {str(n) for n in range(TEST_PARTITIONS)}
    assert {len(where) for where in placed.values()} == {4}


@pytest.mark.parametrize(
    ("table", "refused"),
    [("events", "events are append-only"), ("blobs", "blobs")],
)
def test_every_partition_refuses_update_delete_and_truncate(
    partitioned: Backend, table: str, refused: str
) -> None:
    fill(partitioned)
    before = {t: rows(partitioned, f"SELECT * FROM {t} ORDER BY 1, 2") for t in PARTITION_KEYS}
    names = [table] + [f"{table}_p{n}" for n in range(TEST_PARTITIONS)]
    column = "digest" if table != "events" else "hash"
    for name in names:
        for statement in (
            f"UPDATE {name} SET {column} = {column}",
            f"DELETE FROM {name}",
            f"TRUNCATE {name}",
            f"TRUNCATE {name} CASCADE",
        ):
            with pytest.raises(sa.exc.DatabaseError, match=refused):
                partitioned.execute(statement)
    after = {t: rows(partitioned, f"SELECT * FROM {t} ORDER BY 1, 2") for t in PARTITION_KEYS}
    assert after == before


def test_a_redaction_deletes_bodies_from_their_partitions(partitioned: Backend) -> None:
    fill(partitioned)
    bodies_before = rows(partitioned, "SELECT count(*) FROM blobs WHERE session_id = 's3'")
    with SessionStore(partitioned.url) as store:
        redacted = store.purge("s3", reason="leaked key")
        assert redacted is not None
        assert store.verify("s3").first_broken_seq is None
    assert bodies_before[0][0] > 0
    assert rows(partitioned, "SELECT count(*) FROM blobs WHERE session_id = 's3'") == [(0,)]


def test_a_url_that_asks_for_another_layout_is_refused(
    partitioned: Backend, postgres_backend: Backend
) -> None:
    with SessionStore(partitioned.url):
        pass
    url = sa.make_url(partitioned.url)
    plain_url = url.difference_update_query(["partitions"]).render_as_string(hide_password=False)
    with SessionStore(plain_url) as store:  # a URL that does not say opens either layout
        store.append("s1", conversation(turns=1), expected_version=0)
    other = url.update_query_dict({"partitions": "8"}).render_as_string(hide_password=False)
    with pytest.raises(SchemaMismatch, match="asks for 8 partitions per table, but the database "
                       "was created with 4 partitions per table"):  # fmt: skip
        SessionStore(other)

    with SessionStore(postgres_backend.url):
        pass
    asking = sa.make_url(postgres_backend.url).update_query_dict({"partitions": "4"})
    with pytest.raises(SchemaMismatch, match="created with unpartitioned tables"):
        SessionStore(asking.render_as_string(hide_password=False))
    assert layout(postgres_backend) == {}


@pytest.mark.parametrize("value", ["0", "1025", "four", "-2", "4.0", "٤"])
def test_partitions_must_be_a_whole_number_from_1_to_1024(value: str) -> None:
    url = f"postgresql+psycopg://postgres@127.0.0.1:1/test?partitions={value}"
    with pytest.raises(DatabaseUnavailable, match="partitions must be a whole number from 1 to"):
        SessionStore(url)


def test_sqlite_urls_take_no_partitions(tmp_path: Path) -> None:
    with pytest.raises(DatabaseUnavailable, match="`partitions` is an option of PostgreSQL"):
        SessionStore(f"sqlite:///{tmp_path / 's.db'}?partitions=4")
    assert list(tmp_path.iterdir()) == []


def test_downgrade_to_base_and_upgrade_again(partitioned: Backend) -> None:
    config = alembic_config(partitioned.url)
    command.upgrade(config, "head")
    command.downgrade(config, "base")
    assert layout(partitioned) == {}
    functions = "SELECT count(*) FROM pg_proc WHERE pronamespace = current_schema()::regnamespace"
    assert rows(partitioned, functions) == [(0,)]
    command.upgrade(config, "head")
    assert len(layout(partitioned)) == len(PARTITION_KEYS)


def test_db_upgrade_partitions_creates_the_layout(
    postgres_backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", postgres_backend.url, "db", "upgrade", "--partitions", "3"]) == 0
    assert capsys.readouterr().out == "created the schema at 0010\n"
    assert layout(postgres_backend) == {
        table: (f"HASH ({key})", 3) for table, key in PARTITION_KEYS.items()
    }
    assert main(["--db", postgres_backend.url, "db", "upgrade", "--partitions", "3"]) == 0
    assert main(["--db", postgres_backend.url, "db", "upgrade", "--partitions", "5"]) == 1
    assert "asks for 5 partitions per table" in capsys.readouterr().err


def test_db_upgrade_partitions_on_sqlite_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert main(["--db", url, "db", "upgrade", "--partitions", "4"]) == 1
    assert "`partitions` is an option of PostgreSQL" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
