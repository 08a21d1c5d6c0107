"""The schema exists only through the Alembic revisions, on both backends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory

from sessionstore import SchemaMismatch, SessionStore
from sessionstore.storage._migrate import alembic_config, head_revision
from tests.builders import conversation
from tests.conftest import Backend

REPO = Path(__file__).resolve().parents[2]
TABLES = {
    "alembic_version",
    "blobs",
    "events",
    "search_index",
    "session_tags",
    "sessions",
    "snapshots",
}
FTS5_TABLES = {f"search_fts{shadow}" for shadow in ("", "_config", "_data", "_docsize", "_idx")}
"""SQLite's full-text index: the FTS5 table and its shadow tables (revision 0005), and the
rows that wait for it (revision 0006)."""
FTS5_TABLES.add("search_pending")


def tables_of(backend: Backend) -> set[str]:
    """The tables a database at head holds on the backend's dialect."""
    return TABLES | FTS5_TABLES if backend.name == "sqlite" else TABLES


def table_names(backend: Backend) -> set[str]:
    engine = backend.raw_engine()
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def stored_revision(backend: Backend) -> str | None:
    engine = backend.raw_engine()
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    finally:
        engine.dispose()


def test_opening_an_empty_database_migrates_it_to_head(backend: Backend) -> None:
    assert table_names(backend) == set()
    with SessionStore(backend.url):
        pass
    assert table_names(backend) == tables_of(backend)
    assert stored_revision(backend) == head_revision() == "0010"


def test_the_written_down_head_is_the_one_alembic_finds_in_the_revisions() -> None:
    # a database at HEAD_REVISION is opened without importing Alembic: it must be the head
    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == head_revision()


def test_with_migrate_off_an_empty_database_is_refused_and_left_empty(backend: Backend) -> None:
    with pytest.raises(SchemaMismatch, match=r"run `sessionstore --db \S+ db upgrade`"):
        SessionStore(backend.url, migrate=False)
    assert table_names(backend) == set()


def test_alembic_upgrade_head_works_from_the_repository(backend: Backend) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=REPO,
        env={**os.environ, "SESSIONSTORE_URL": backend.url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert stored_revision(backend) == "0010"
    with SessionStore(backend.url, migrate=False) as store:  # at head: opens without migrating
        store.append("s1", conversation(turns=1), expected_version=0)
    with pytest.raises(sa.exc.DatabaseError, match="append-only"):
        backend.execute("UPDATE events SET seq = seq + 100")


def test_downgrade_to_base_and_upgrade_again(backend: Backend) -> None:
    config = alembic_config(backend.url)
    command.upgrade(config, "head")
    command.downgrade(config, "base")
    assert table_names(backend) == {"alembic_version"}
    command.upgrade(config, "head")
    assert table_names(backend) == tables_of(backend)
    with SessionStore(backend.url, migrate=False) as store:
        store.append("s1", conversation(turns=1), expected_version=0)
    with pytest.raises(sa.exc.DatabaseError, match="append-only"):  # the triggers are back
        backend.execute("DELETE FROM events")


def test_the_revisions_match_the_declared_tables(backend: Backend) -> None:
    config = alembic_config(backend.url)
    command.upgrade(config, "head")
    command.check(config)  # raises when store/storage/_schema.py and the revisions drift apart


def test_a_revision_this_code_does_not_know_is_refused(backend: Backend) -> None:
    with SessionStore(backend.url):
        pass
    backend.execute("UPDATE alembic_version SET version_num = 'from_the_future'")
    with pytest.raises(SchemaMismatch, match="from_the_future, which this version"):
        SessionStore(backend.url)


def test_processes_opening_one_empty_database_together_all_succeed(backend: Backend) -> None:
    opener = "import sys; from sessionstore import SessionStore; SessionStore(sys.argv[1]).close()"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", opener, backend.url],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    errors = [p.communicate(timeout=120)[1] for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0], errors
    assert stored_revision(backend) == "0010"


def test_a_database_at_0002_upgrades_and_keeps_its_sessions(backend: Backend) -> None:
    """Written at head, taken back to 0002 (events and bodies stay, the metadata goes), then
    upgraded again, as a database from before 0003 is."""
    config = alembic_config(backend.url)
    with SessionStore(backend.url) as store:
        store.append("old", conversation(turns=1), expected_version=0)
        before = store.session("old").context()
    command.downgrade(config, "0002")
    assert "session_tags" not in table_names(backend)
    command.upgrade(config, "head")
    with SessionStore(backend.url, migrate=False) as store:
        assert store.session("old").context() == before
        (info,) = store.sessions()
        assert (info.id, info.app, info.user, info.tags) == ("old", None, None, ())
        assert store.verify("old").ok


def test_every_key_of_a_postgresql_table_includes_the_session(backend: Backend) -> None:
    """What Citus needs to spread the tables by session (and PostgreSQL to partition them):
    each primary and unique key of every table holds `session_id` (`sessions`: its `id`),
    on the plain layout as on the partitioned one."""
    if backend.name != "postgresql":
        pytest.skip(f"not on {backend.name}: Citus spreads PostgreSQL tables only")
    with SessionStore(backend.url):
        pass
    engine = backend.raw_engine()
    try:
        with engine.connect() as conn:
            keys = conn.execute(
                sa.text(
                    "SELECT c.conrelid::regclass::text, c.conname, array_agg(a.attname::text) "
                    "FROM pg_constraint c JOIN pg_attribute a "
                    "ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey) "
                    "JOIN pg_class t ON t.oid = c.conrelid "
                    "WHERE c.contype IN ('p', 'u') AND NOT t.relispartition "
                    "AND t.relnamespace = current_schema()::regnamespace "
                    "GROUP BY 1, 2"
                )
            ).all()
    finally:
        engine.dispose()
    tables = {table for table, _, _ in keys}
    assert tables == TABLES, tables
    for table, name, columns in keys:
        if table == "alembic_version":
            continue
        wanted = "id" if table == "sessions" else "session_id"
        assert wanted in columns, (table, name, columns)
