"""`sessionstore view`: a session as one self-contained HTML page, or every session as pages
beside an index (`--all`), written as `SessionStore.view` and `view_index` render them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from sessionstore.cli._app import Cli, n_sessions, pass_cli
from sessionstore.cli._files import check_target, read_text, write_lines
from sessionstore.cli._look import at_point


def read_prices(file: Path | None) -> Any:
    """`--prices FILE.json`: the price table `view` takes, as the file holds it (the API
    checks its shape)."""
    if file is None:
        return None
    try:
        return json.loads(read_text(file))
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"{file} is not JSON: {exc}", param_hint="--prices") from None


def page_name(session_id: str) -> str:
    """The file a session's page is written to, as the pages link each other."""
    return quote(session_id, safe="") + ".html"


def write_page(output: Path, page: str) -> None:
    check_target(output)
    write_lines(output, [page.removesuffix("\n")])


@click.command("view")
@click.argument("session_id", metavar="ID", required=False)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="The page to write (default: ID.html); with --all, the folder (default: view).",
)
@click.option("--all", "every", is_flag=True, help="Every session, and an index.html.")
@click.option(
    "--at", metavar="SEQ|TIME", help="The session as it stood at this event (or ISO time)."
)
@click.option(
    "--prices",
    type=click.Path(dir_okay=False, path_type=Path),
    help='A JSON price table for the cost per turn: {"MODEL": {"input": ..., "output": ..., '
    '"cached": ...}}, per million tokens.',
)
@pass_cli
def view(
    app: Cli,
    session_id: str | None,
    output: Path | None,
    every: bool,
    at: str | None,
    prices: Path | None,
) -> None:
    """Write a session as one HTML page to read in a browser: the live context's size after
    every event (with the window, the trigger and each prune, compaction and restore marked),
    a replay of the context at any event and the diff between two, each compaction beside its
    summary, the files, commands and errors, and usage per turn. The page loads nothing from
    the network. --all writes every session's page and an index.html into a folder."""
    table = read_prices(prices)
    if every:
        if session_id is not None or at is not None:
            raise click.UsageError("--all writes every session as it is now: give no ID or --at")
        folder = output if output is not None else Path("view")
        write_all(app, folder, table)
        return
    if session_id is None:
        raise click.UsageError("give a session ID, or --all for every session")
    session_id = app.find(session_id)
    session = app.reader.session(session_id)
    page = at_point(
        session, "--at", at, lambda at: app.reader.view(session_id, at=at, prices=table)
    )
    target = output if output is not None else Path(page_name(session_id))
    write_page(target, page)
    click.echo(f"wrote the view of {session_id} to {target}", err=True)


def write_all(app: Cli, folder: Path, prices: Any) -> None:
    """A page per session and the index, into `folder` (made when missing)."""
    if folder.exists() and not folder.is_dir():
        raise click.ClickException(f"cannot write into {folder}: it is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    store = app.reader
    ids = [summary.info.id for summary in store.summaries()]
    for session_id in ids:
        write_page(folder / page_name(session_id), store.view(session_id, prices=prices))
    write_page(folder / "index.html", store.view_index())
    click.echo(f"wrote the pages of {n_sessions(len(ids))} and index.html to {folder}", err=True)


COMMANDS: dict[str, click.Command] = {"view": view}
