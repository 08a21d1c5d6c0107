"""`SessionStore` adds its tables only to an empty database or to one of its own: a database
that belongs to another application is refused, unchanged; a file that does not exist is
created only when the caller allows it."""

from __future__ import annotations

import shlex
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from sessionstore import DatabaseUnavailable, SchemaMismatch, SessionStore
from tests.builders import conversation
from tests.conftest import Backend
from tests.contract.test_migrations import FTS5_TABLES, TABLES, table_names


def shown(backend: Backend) -> str:
    return sa.make_url(backend.url).render_as_string(hide_password=True)


def sqlite_path(url: str) -> Path:
    return Path(str(sa.make_url(url).database))


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file in `folder` with its bytes: to prove nothing was written or added."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def with_notes(backend: Backend) -> None:
    backend.execute("CREATE TABLE notes (body TEXT)")
    backend.execute("INSERT INTO notes (body) VALUES ('buy milk')")


def with_foreign_revision(backend: Backend) -> None:
    backend.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)")
    backend.execute("INSERT INTO alembic_version (version_num) VALUES ('3f2a9c1b7d4e')")
    backend.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")


def test_another_applications_tables_are_refused_and_left_alone(backend: Backend) -> None:
    with_notes(backend)
    for migrate in (True, False):
        with pytest.raises(SchemaMismatch) as refused:
            SessionStore(backend.url, migrate=migrate)
        assert str(refused.value) == (
            f"{shown(backend)} holds tables of another application (notes) and no sessionstore "
            "schema; sessionstore adds its tables only to an empty database"
        )
    assert table_names(backend) == {"notes"}


def test_another_applications_alembic_revision_is_refused_and_left_alone(
    backend: Backend,
) -> None:
    with_foreign_revision(backend)
    for migrate in (True, False):
        with pytest.raises(SchemaMismatch) as refused:
            SessionStore(backend.url, migrate=migrate)
        assert str(refused.value) == (
            f"{shown(backend)} is at Alembic revision '3f2a9c1b7d4e', which is not one of "
            "sessionstore's: the database belongs to another application"
        )
    assert table_names(backend) == {"alembic_version", "invoices"}


def test_a_revision_from_a_newer_sessionstore_is_still_named_as_such(backend: Backend) -> None:
    with SessionStore(backend.url):
        pass
    backend.execute("UPDATE alembic_version SET version_num = 'from_the_future'")
    with pytest.raises(SchemaMismatch, match="from_the_future, which this version of sessionstore"):
        SessionStore(backend.url)


def test_a_table_added_to_a_sessionstore_database_does_not_make_it_foreign(
    backend: Backend,
) -> None:
    with SessionStore(backend.url) as store:
        store.append("s1", conversation(turns=1), expected_version=0)
    backend.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    with SessionStore(backend.url, migrate=False) as store:
        assert store.version("s1") == 4


@pytest.mark.parametrize("foreign", [with_notes, with_foreign_revision])
def test_a_refused_sqlite_file_is_left_byte_for_byte(
    foreign: object, sqlite_backend: Backend, tmp_path: Path
) -> None:
    assert callable(foreign)
    foreign(sqlite_backend)
    before = files_of(tmp_path)
    with pytest.raises(SchemaMismatch):
        SessionStore(sqlite_backend.url)
    assert files_of(tmp_path) == before  # not even switched to WAL, no -wal or -shm file


def test_a_file_that_is_not_a_database_is_one_line_and_left_alone(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("buy milk\n")
    with pytest.raises(DatabaseUnavailable) as refused:
        SessionStore(f"sqlite:///{notes}")
    assert str(refused.value) == f"sqlite:///{notes}: file is not a database"
    assert files_of(tmp_path) == {"notes.txt": b"buy milk\n"}


def test_with_create_off_a_missing_sqlite_file_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    for migrate in (True, False):
        with pytest.raises(DatabaseUnavailable) as refused:
            SessionStore(f"sqlite:///{missing}", create=False, migrate=migrate)
        assert str(refused.value) == f"cannot open {missing}: no such file"
    assert list(tmp_path.iterdir()) == []


def test_with_create_off_an_existing_database_opens(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        store.append("s1", conversation(turns=1), expected_version=0)
    with SessionStore(backend.url, create=False, migrate=False) as store:
        assert store.version("s1") == 4


def test_an_empty_sqlite_file_is_still_migrated(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()  # a file of 0 bytes: SQLite's empty database
    assert path.stat().st_size == 0
    with SessionStore(f"sqlite:///{path}", create=False):
        pass
    assert table_names(Backend("sqlite", f"sqlite:///{path}")) == TABLES | FTS5_TABLES


def test_with_migrate_off_an_empty_database_says_what_to_run(backend: Backend) -> None:
    if backend.name == "sqlite":
        sqlite3.connect(sqlite_path(backend.url)).close()  # an empty file
    with pytest.raises(SchemaMismatch) as refused:
        SessionStore(backend.url, migrate=False)
    assert str(refused.value) == (
        f"{shown(backend)} holds no sessionstore schema (it is empty); "
        f"run `sessionstore --db {shlex.quote(shown(backend))} db upgrade` to create it"
    )
    assert table_names(backend) == set()


def test_with_migrate_off_a_missing_sqlite_file_is_not_created(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    with pytest.raises(SchemaMismatch) as refused:
        SessionStore(url, migrate=False)
    assert str(refused.value) == (
        f"{url} holds no sessionstore schema (the file does not exist); "
        f"run `sessionstore --db {shlex.quote(url)} db upgrade` to create it"
    )
    assert list(tmp_path.iterdir()) == []


def test_relations_an_extension_owns_are_not_another_applications(
    postgres_backend: Backend,
) -> None:
    """Citus keeps `citus_tables` and `citus_schemas` in the schema, as members of its
    extension; here a table and a view are made members of `plpgsql` (the extension every
    server has) to stand for them."""
    members = (("TABLE", "citus_schemas"), ("VIEW", "citus_tables"))
    postgres_backend.execute("CREATE TABLE citus_schemas (name TEXT)")
    postgres_backend.execute("CREATE VIEW citus_tables AS SELECT 1 AS one")
    for kind, name in members:
        postgres_backend.execute(f"ALTER EXTENSION plpgsql ADD {kind} {name}")
    try:
        with SessionStore(postgres_backend.url) as store:
            store.create_session(model="m", session_id="s1")
        assert table_names(postgres_backend) == TABLES | {"citus_schemas"}  # tables, not views
        assert SessionStore(postgres_backend.url).version("s1") == 1
    finally:  # a member cannot be dropped with the schema while the extension holds it
        for kind, name in members:
            postgres_backend.execute(f"ALTER EXTENSION plpgsql DROP {kind} {name}")
