"""What every `sessionstore` command shares: the database URL (`--db` before or after the
command), and one store, opened on first use for reading or for writing."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # each is imported where a command first needs it: see `_tree`
    from rich.console import Console, RenderableType

    from sessionstore.session import SessionStore

DB_HELP = "Database URL (default: $SESSIONSTORE_URL, else sqlite:///sessions.db)."
NEVER = sys.maxsize
"""`snapshot_every` for a store that reads: its sessions never save a snapshot."""


class Cli:
    """What every command shares: the database URL, and one store opened on first use."""

    def __init__(self, db: str | None) -> None:
        self.db = db  # `--db` before the command; `--db` after it may still set it
        self._store: SessionStore | None = None

    @cached_property
    def out(self) -> Console:
        from rich.console import Console

        return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 200)

    @property
    def width(self) -> int:
        """The columns a table may take: the terminal's, or 200 off a terminal."""
        return self.out.width

    @property
    def url(self) -> str:
        from sessionstore.storage import resolve_url

        return resolve_url(self.db)

    @property
    def shown_url(self) -> str:
        """The URL as it may be printed: without its password."""
        import sqlalchemy as sa

        return sa.make_url(self.url).render_as_string(hide_password=True)

    @property
    def store(self) -> SessionStore:
        """The store for a command that writes: an empty or older database is migrated."""
        if self._store is None:
            from sessionstore.session import SessionStore

            self._store = SessionStore(self.url)
        return self._store

    @property
    def reader(self) -> SessionStore:
        """The store for a command that only reads: it creates, migrates and writes nothing,
        not even a snapshot (a cache a writer would save on resuming a long session)."""
        if self._store is None:
            from sessionstore.session import SessionStore

            self.refuse_missing_file()
            self._store = SessionStore(self.url, create=False, migrate=False, snapshot_every=NEVER)
        return self._store

    def find(self, session_id: str, *, writing: bool = False) -> str:
        """The whole id of the session `session_id` names, whole or by a unique prefix (the
        CLI prints shortened ids where the terminal is narrow), found in the store the command
        then uses: the writer's when `writing`, else the reader's."""
        return (self.store if writing else self.reader).find_session(session_id)

    def file_bytes(self) -> int | None:
        """The SQLite file's size with its write-ahead log; `None` for a server's database."""
        from sessionstore.storage import database_file

        path = database_file(self.url)
        if path is None:
            return None
        files = (path, path.with_name(path.name + "-wal"))
        return sum(file.stat().st_size for file in files if file.exists())

    def refuse_missing_file(self) -> None:
        """A SQLite file that is not there is a mistyped path, not a wish for a new store."""
        from sessionstore.storage import database_file

        path = database_file(self.url)
        if path is not None and path.parent.is_dir() and not path.exists():
            raise click.ClickException(
                f"no database at {path}: read-only commands create none "
                "(`sessionstore demo` or `sessionstore import` makes one)"
            )

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def show(self, renderable: RenderableType) -> None:
        """Print through Rich; off a terminal, without the padding Rich leaves at line ends."""
        if self.out.is_terminal:
            self.out.print(renderable)
            return
        with self.out.capture() as captured:
            self.out.print(renderable)
        click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))

    def json(self, data: Any) -> None:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))

    def json_rows(self, rows: Sequence[Any]) -> None:
        """A JSON list of `rows`, one row a line: a listing of 100,000 sessions is printed by
        the C encoder in half a second, where an indented one took seven (Python's `indent`
        is pure Python). The same JSON to a parser."""
        encode = _ROW_ENCODER.encode
        click.echo("[\n" + ",\n".join(map(encode, rows)) + "\n]" if rows else "[]")


_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False)


pass_cli = click.make_pass_decorator(Cli)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def database_url(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """`--db`: a URL, or nothing (then $SESSIONSTORE_URL or the default); never empty."""
    if value == "":
        raise click.BadParameter("it is empty; give a database URL such as sqlite:///sessions.db")
    return value


def database_url_after_command(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> None:
    """`--db` given after the command: the same as before it, once."""
    if database_url(ctx, param, value) is None:
        return
    app = ctx.find_object(Cli)
    assert app is not None, "the group's callback makes it before any command's options"
    if app.db is not None and app.db != value:
        raise click.BadParameter(
            f"{printable(value)} here, but {printable(app.db)} before the command; give one"
        )
    app.db = value


def printable(url: str | None) -> str:
    import sqlalchemy as sa

    try:
        return sa.make_url(url or "").render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return repr(url)


def accept_db_after(command: click.Command) -> None:
    """`--db` works after `command` (and each of its subcommands) as before it (`sessionstore
    ls --db URL`), and its `--help` lists it."""
    command.params.append(
        click.Option(
            ["--db"],
            metavar="URL",
            expose_value=False,
            callback=database_url_after_command,
            help=DB_HELP,
        )
    )
    if isinstance(command, click.Group):
        for subcommand in command.commands.values():
            accept_db_after(subcommand)


def n_sessions(count: int) -> str:
    return f"{count:,} session" if count == 1 else f"{count:,} sessions"
