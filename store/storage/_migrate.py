"""Bringing a database to this code's schema with the Alembic revisions in `migrations/`.

The schema is created and upgraded only through those revisions. `SessionStore` runs them
when it opens a database that is behind (an empty one included), unless told not to; the
check and the upgrade happen in one write transaction (and, on PostgreSQL, under an advisory
lock), so two processes opening the same empty database do not both create it.

Our tables go only into an empty database or one of ours: a database with another
application's tables, or at an Alembic revision that is not ours, is refused untouched. How a
database is looked at without changing it, and how migrating processes keep out of each
other's way, is each recorder's own (`Recorder.database_state`, `Recorder.migrate`).
"""

from __future__ import annotations

import shlex
import sys
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from sessionstore.events import DatabaseUnavailable, SchemaMismatch
from sessionstore.storage._recorder import DatabaseState, Recorder
from sessionstore.storage._schema import metadata

if TYPE_CHECKING:  # Alembic is imported only to migrate, never to open a current database
    from alembic.config import Config

COUNTERS_REVISION = "0004"
"""The revision that keeps the listing counters on the `sessions` row: a database upgraded from
before it has its sessions' live tokens to count (the store's fold counts them, not a
revision)."""

HEAD_REVISION = "0010"
"""The newest revision in `migrations/versions`: what a current database is at. Written down so
that opening one reads no revision file and imports no Alembic; a test checks it is the head
Alembic finds."""

_NAMES_SHOWN = 5


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config pointing at the `migrations` package, wherever it is installed."""
    from alembic.config import Config

    # today's stdout: Alembic's default is the one there was when it was first imported
    config = Config(stdout=sys.stdout)
    config.set_main_option("script_location", str(Path(str(files("sessionstore.migrations")))))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def head_revision() -> str:
    return HEAD_REVISION


def counts_missing(revision: str | None) -> bool:
    """Whether a database that was at `revision` before an upgrade holds sessions whose live
    tokens are not counted (it was written before `COUNTERS_REVISION`)."""
    return revision is not None and int(revision) < int(COUNTERS_REVISION)


def refuse_foreign(state: DatabaseState, shown_url: str) -> None:
    """Raise `SchemaMismatch` unless the database is empty or sessionstore's (at a revision of
    this version or an older one). Tables a user added next to ours are fine. `shown_url`
    names the database in the message, without its password."""
    if state.revision is None:
        if state.tables:
            raise SchemaMismatch(
                f"{shown_url} holds tables of another application ({_listed(state.tables)}) "
                "and no sessionstore schema; sessionstore adds its tables only to an empty "
                "database"
            )
        return
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    if state.revision in {r.revision for r in script.walk_revisions()}:
        return
    if set(metadata.tables) <= state.tables:
        raise SchemaMismatch(
            f"{shown_url} is at schema revision {state.revision}, which this version of "
            "sessionstore does not know (written by a newer version?)"
        )
    raise SchemaMismatch(
        f"{shown_url} is at Alembic revision {state.revision!r}, which is not one of "
        "sessionstore's: the database belongs to another application"
    )


def _listed(names: frozenset[str]) -> str:
    ordered = sorted(names)
    more = len(ordered) - _NAMES_SHOWN
    return ", ".join(ordered[:_NAMES_SHOWN]) + (f" and {more} more" if more > 0 else "")


def ensure_schema(recorder: Recorder, *, migrate: bool, create: bool = True) -> str | None:
    """Upgrade to head when behind (if `migrate`), else insist the database is at head; the
    revision the database was at (`None`: empty). Without `create`, a SQLite file that does
    not exist raises `DatabaseUnavailable` instead of being created. A database of another
    application raises `SchemaMismatch` untouched."""
    state = recorder.database_state()
    if not state.exists and not create:
        raise DatabaseUnavailable(f"cannot open {state.file}: no such file")
    head = head_revision()
    if state.revision == head:
        return head
    refuse_foreign(state, recorder.shown_url)
    if not migrate:
        if state.revision is not None:
            raise SchemaMismatch(
                f"{recorder.shown_url} is at schema revision {state.revision}, this code "
                f"needs {head}; run `{upgrade_command(recorder.shown_url)}`"
            )
        why = "it is empty" if state.exists else "the file does not exist"
        raise SchemaMismatch(
            f"{recorder.shown_url} holds no sessionstore schema ({why}); "
            f"run `{upgrade_command(recorder.shown_url)}` to create it"
        )
    upgrade(recorder)
    return state.revision


def upgrade_command(shown_url: str) -> str:
    """The command that migrates the database at `shown_url`, to be typed as it is: it names
    the database, so it never creates another (`./sessions.db`) instead."""
    return f"sessionstore --db {shlex.quote(shown_url)} db upgrade"


def upgrade(recorder: Recorder, revision: str = "head") -> None:
    """Run the revisions up to `revision` in one locked transaction, deciding again under the
    lock (another process may have created the schema, or something else, since the database
    was looked at); a database of another application raises `SchemaMismatch` untouched."""
    refuse_foreign(recorder.database_state(), recorder.shown_url)
    recorder.migrate(revision, refuse=lambda state: refuse_foreign(state, recorder.shown_url))


def distribute(recorder: Recorder) -> list[str]:
    """Spread the tables over the Citus cluster the recorder's database is the coordinator of,
    by session (`PostgresRecorder.distribute` says how and what holds there); the tables
    distributed now, none when all were. `SchemaMismatch` for a database that is not
    PostgreSQL with Citus, or not at this version's head."""
    from sessionstore.storage._postgres import PostgresRecorder

    if not isinstance(recorder, PostgresRecorder):
        raise SchemaMismatch(
            f"{recorder.shown_url} is not PostgreSQL: Citus spreads the tables of a PostgreSQL "
            "database (the coordinator's)"
        )
    return recorder.distribute()


def grant(recorder: Recorder, role: str) -> list[str]:
    """Let the PostgreSQL role `role` use the store and no more (`PostgresRecorder.grant`
    says what, and which promises the grants keep); a line per table. `SchemaMismatch` for
    a database that is not PostgreSQL (SQLite has no roles: its triggers check every
    change) or not at this version's head; `InvalidArgument` for a role that cannot be
    bound (missing, a superuser, the tables' owner)."""
    from sessionstore.storage._postgres import PostgresRecorder

    if not isinstance(recorder, PostgresRecorder):
        raise SchemaMismatch(
            f"{recorder.shown_url} is not PostgreSQL: roles and grants are PostgreSQL's (a "
            "SQLite file's triggers check every change, whoever writes)"
        )
    return recorder.grant(role)
