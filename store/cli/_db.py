"""`sessionstore db upgrade, current`: the schema (Alembic)."""

from __future__ import annotations

import click
import sqlalchemy as sa

from sessionstore.cli._app import (
    Cli,
    pass_cli,
)
from sessionstore.storage import (
    MAX_PARTITIONS,
    PARTITIONS,
    counts_missing,
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


def _show_revision(current: str | None) -> None:
    click.echo(
        f"database at {current or 'nothing (empty)'}; this version's head is {head_revision()}"
    )


COMMANDS: dict[str, click.Command] = {
    "db": db,
}
