"""`sessionstore db upgrade, current, distribute, grant`: the schema (Alembic), its tables spread
over a Citus cluster, and the role an application connects as."""

from __future__ import annotations

import click
import sqlalchemy as sa

from sessionstore.cli._app import (
    Cli,
    pass_cli,
)
from sessionstore.storage import (
    DISTRIBUTION,
    MAX_PARTITIONS,
    PARTITIONS,
    REDACTED_BODIES,
    counts_missing,
    distribute,
    grant,
    head_revision,
    open_recorder,
    refuse_foreign,
    upgrade,
)


@click.group()
def db() -> None:
    """Schema migrations (Alembic)."""


@db.command("upgrade")
@click.option(
    "--partitions",
    type=click.IntRange(1, MAX_PARTITIONS),
    metavar="N",
    help="PostgreSQL: create every table hash-partitioned by session into N partitions "
    "(chosen when the schema is created; the same as the URL option partitions=N).",
)
@pass_cli
def db_upgrade(app: Cli, partitions: int | None) -> None:
    """Migrate the database to this version's schema (creating it when it is empty)."""
    url = app.url if partitions is None else _asking(app.url, partitions)
    recorder = open_recorder(url)
    try:
        before = recorder.database_state().revision
        if counts_missing(before):
            # through the store, which counts the sessions' live tokens after the revisions
            # (a fold counts them, not a revision)
            from sessionstore.session import SessionStore

            SessionStore(url).close()
        else:
            upgrade(recorder)
        current = recorder.database_state().revision
    finally:
        recorder.close()
    if before == current:
        click.echo(f"nothing to do: the database is at {current}, this version's head")
    elif before is None:
        click.echo(f"created the schema at {current}")
    else:
        click.echo(f"upgraded the database from {before} to {current}")


def _asking(url: str, partitions: int) -> str:
    """`url` with the option `partitions=N` (a URL that names another N is refused)."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        return url  # the recorder says what is wrong with it
    if parsed.query.get(PARTITIONS, str(partitions)) != str(partitions):
        raise click.UsageError(f"--partitions {partitions} and the URL's {PARTITIONS}= differ")
    return parsed.update_query_dict({PARTITIONS: str(partitions)}).render_as_string(
        hide_password=False
    )


@db.command("current")
@pass_cli
def db_current(app: Cli) -> None:
    """Show the database's schema revision (changing nothing)."""
    app.refuse_missing_file()
    recorder = open_recorder(app.url)
    try:
        state = recorder.database_state()
    finally:
        recorder.close()
    refuse_foreign(state, recorder.shown_url)
    _show_revision(state.revision)
    if state.distributed is not None:
        click.echo(_spread(state.distributed))


@db.command("distribute")
@pass_cli
def db_distribute(app: Cli) -> None:
    """Spread every table over the Citus cluster whose coordinator the database is, by session
    (the schema at this version's head first; run again, it does nothing)."""
    app.refuse_missing_file()
    recorder = open_recorder(app.url)
    try:
        refuse_foreign(recorder.database_state(), recorder.shown_url)
        done = distribute(recorder)
        state = recorder.database_state()
    finally:
        recorder.close()
    if done:
        click.echo(f"distributed by session: {', '.join(done)}")
    else:
        click.echo("nothing to do: every table is distributed already")
    assert state.distributed is not None  # a Citus database, or `distribute` refused it
    click.echo(_spread(state.distributed))


@db.command("grant")
@click.argument("role")
@pass_cli
def db_grant(app: Cli, role: str) -> None:
    """Let the PostgreSQL role ROLE use the store and no more: it may append, read, redact and
    search, and cannot change or delete an event, nor delete a body but by a redaction (run
    as the tables' owner; ROLE is what the application connects as)."""
    app.refuse_missing_file()
    recorder = open_recorder(app.url)
    try:
        refuse_foreign(recorder.database_state(), recorder.shown_url)
        granted = grant(recorder, role)
    finally:
        recorder.close()
    click.echo(f"granted {role}:")
    for line in granted:
        click.echo(f"  {line}")


def _spread(distributed: frozenset[str]) -> str:
    """What `db current` says of a Citus database: which tables the cluster spreads, and
    whether it runs the redaction's function on the session's worker."""
    wanted = [table for table, _ in DISTRIBUTION] + [REDACTED_BODIES]
    if set(wanted) <= distributed:
        return (
            f"Citus: every table is distributed by session ({', '.join(wanted[:-1])}), and "
            "redactions delete bodies on the session's worker"
        )
    if not distributed:
        return "Citus: the tables are not distributed (sessionstore db distribute)"
    missing = [name for name in wanted if name not in distributed]
    return f"Citus: {', '.join(missing)} not distributed yet (sessionstore db distribute)"


def _show_revision(current: str | None) -> None:
    click.echo(
        f"database at {current or 'nothing (empty)'}; this version's head is {head_revision()}"
    )


COMMANDS: dict[str, click.Command] = {
    "db": db,
}
