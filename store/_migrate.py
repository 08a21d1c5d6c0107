"""Bringing a database to this code's schema with the Alembic revisions in `migrations/`.

The schema is created and upgraded only through those revisions. `SessionStore` runs them
when it opens a database that is behind (an empty one included), unless told not to; the
check and the upgrade happen in one write transaction (and, on PostgreSQL, under an advisory
lock), so two processes opening the same empty database do not both create it.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from store._engine import WRITE
from store._errors import SchemaMismatch

_LOCK_KEY = 0x5E55_1045  # an arbitrary, fixed advisory-lock key for sessionstore migrations


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


def ensure_schema(engine: Engine, *, migrate: bool) -> None:
    """Upgrade to head when behind (if `migrate`), else insist the database is at head."""
    head = head_revision()
    with engine.connect() as connection:
        if current_revision(connection) == head:
            return
    if not migrate:
        with engine.connect() as connection:
            current = current_revision(connection)
        raise SchemaMismatch(
            f"database schema is at {current or 'nothing (empty)'}, this code needs {head}; "
            "run `sessionstore db upgrade`"
        )
    upgrade(engine)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the revisions up to `revision` in one locked transaction."""
    script = ScriptDirectory.from_config(alembic_config())
    with engine.connect().execution_options(**{WRITE: True}) as connection, connection.begin():
        if connection.dialect.name == "postgresql":
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        current = current_revision(connection)
        if current is not None and current not in {r.revision for r in script.walk_revisions()}:
            raise SchemaMismatch(
                f"database schema is at {current}, which this version of sessionstore does not "
                "know (written by a newer version?)"
            )
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
