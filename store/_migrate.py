"""Bringing a database to this code's schema with the Alembic revisions in `migrations/`.

The schema is created and upgraded only through those revisions. `SessionStore` runs them
when it opens a database that is behind (an empty one included), unless told not to; the
check and the upgrade happen in one write transaction (and, on PostgreSQL, under an advisory
lock), so two processes opening the same empty database do not both create it.

Our tables go only into an empty database or one of ours: a database with another
application's tables, or at an Alembic revision that is not ours, is refused untouched. A
SQLite file is looked at first through a plain connection that neither creates the file nor
switches it to WAL (the store's own connections do both), so refusing it changes no byte.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from store._engine import WRITE
from store._errors import DatabaseUnavailable, SchemaMismatch
from store._schema import metadata

_LOCK_KEY = 0x5E55_1045  # an arbitrary, fixed advisory-lock key for sessionstore migrations
_VERSION_TABLE = "alembic_version"
_NAMES_SHOWN = 5


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config pointing at the `migrations` package, wherever it is installed."""
    config = Config()
    config.set_main_option("script_location", str(Path(str(files("migrations")))))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the migrations folder has no revisions"
    return head


def current_revision(connection: sa.Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


@dataclass(frozen=True, slots=True)
class DatabaseState:
    """What opening a database needs to know about it."""

    exists: bool
    """False only for a SQLite file that is not there (nothing else can be told apart)."""
    revision: str | None
    """The Alembic revision stored in it, if any."""
    tables: frozenset[str]
    """Its tables and views, `alembic_version` aside."""


def sqlite_file(url: sa.URL | str) -> Path | None:
    """The file a SQLite URL names; None for other backends, in-memory databases and `file:`
    URIs (whose options SQLite reads itself)."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.query.get("uri") == "true":
        return None
    if parsed.database in (None, "", ":memory:"):
        return None
    return Path(str(parsed.database))


def database_state(engine: Engine) -> DatabaseState:
    """What `engine`'s database holds, found without changing it: a SQLite file is read
    through a plain connection that can neither create it nor change its journal mode."""
    path = sqlite_file(engine.url)
    if path is None:
        with engine.connect() as connection:
            return _state_of(connection)
    if not path.exists():
        return DatabaseState(exists=False, revision=None, tables=frozenset())
    try:
        return _sqlite_state(path)
    except sqlite3.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnavailable(f"{_shown(engine.url)}: {reason}") from None


def _sqlite_state(path: Path) -> DatabaseState:
    """`mode=rw`: SQLite opens the file only if it exists, and reading changes nothing."""
    sqlite = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True)
    try:
        names = {
            name
            for (name,) in sqlite.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            )
        }
        revision = None
        if _VERSION_TABLE in names:
            row = sqlite.execute(f"SELECT version_num FROM {_VERSION_TABLE}").fetchone()
            revision = row[0] if row else None
    finally:
        sqlite.close()
    return DatabaseState(True, revision, frozenset(names - {_VERSION_TABLE}))


def _state_of(connection: sa.Connection) -> DatabaseState:
    inspector = sa.inspect(connection)
    names = {*inspector.get_table_names(), *inspector.get_view_names()}
    return DatabaseState(True, current_revision(connection), frozenset(names - {_VERSION_TABLE}))


def _shown(url: sa.URL) -> str:
    return url.render_as_string(hide_password=True)


def refuse_foreign(state: DatabaseState, url: sa.URL) -> None:
    """Raise `SchemaMismatch` unless the database is empty or sessionstore's (at a revision of
    this version or an older one). Tables a user added next to ours are fine."""
    if state.revision is None:
        if state.tables:
            raise SchemaMismatch(
                f"{_shown(url)} holds tables of another application ({_listed(state.tables)}) "
                "and no sessionstore schema; sessionstore adds its tables only to an empty "
                "database"
            )
        return
    script = ScriptDirectory.from_config(alembic_config())
    if state.revision in {r.revision for r in script.walk_revisions()}:
        return
    if set(metadata.tables) <= state.tables:
        raise SchemaMismatch(
            f"{_shown(url)} is at schema revision {state.revision}, which this version of "
            "sessionstore does not know (written by a newer version?)"
        )
    raise SchemaMismatch(
        f"{_shown(url)} is at Alembic revision {state.revision!r}, which is not one of "
        "sessionstore's: the database belongs to another application"
    )


def _listed(names: frozenset[str]) -> str:
    ordered = sorted(names)
    more = len(ordered) - _NAMES_SHOWN
    return ", ".join(ordered[:_NAMES_SHOWN]) + (f" and {more} more" if more > 0 else "")


def ensure_schema(engine: Engine, *, migrate: bool, create: bool = True) -> None:
    """Upgrade to head when behind (if `migrate`), else insist the database is at head.
    Without `create`, a SQLite file that does not exist raises `DatabaseUnavailable` instead
    of being created. A database of another application raises `SchemaMismatch` untouched."""
    state = database_state(engine)
    if not state.exists and not create:
        raise DatabaseUnavailable(f"cannot open {engine.url.database}: no such file")
    head = head_revision()
    if state.revision == head:
        return
    refuse_foreign(state, engine.url)
    if not migrate:
        if state.revision is not None:
            raise SchemaMismatch(
                f"{_shown(engine.url)} is at schema revision {state.revision}, this code needs "
                f"{head}; run `sessionstore db upgrade`"
            )
        why = "it is empty" if state.exists else "the file does not exist"
        raise SchemaMismatch(
            f"{_shown(engine.url)} holds no sessionstore schema ({why}); "
            "run `sessionstore db upgrade` to create it"
        )
    _upgrade_locked(engine, "head")


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the revisions up to `revision` in one locked transaction; a database of another
    application raises `SchemaMismatch` untouched."""
    refuse_foreign(database_state(engine), engine.url)
    _upgrade_locked(engine, revision)


def _upgrade_locked(engine: Engine, revision: str) -> None:
    """The upgrade itself, deciding again under the lock: another process may have created
    the schema (or something else) since the database was looked at."""
    with engine.connect().execution_options(**{WRITE: True}) as connection, connection.begin():
        if connection.dialect.name == "postgresql":
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        refuse_foreign(_state_of(connection), engine.url)
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
