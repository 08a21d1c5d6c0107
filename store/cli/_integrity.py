"""`sessionstore verify, stats`: integrity and figures."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.progress import Progress

from sessionstore.cli import _views as views
from sessionstore.cli._app import (
    Cli,
    json_option,
    n_sessions,
    pass_cli,
)
from sessionstore.cli._files import check_target, read_text, write_lines
from sessionstore.log import Checkpoint


@click.command()
@click.argument("session_id", metavar="[ID]", required=False)
@click.option("--all", "every", is_flag=True, help="Verify every session.")
@click.option(
    "--checkpoint",
    "checkpoint_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --all: write the heads of every session that verified to FILE.",
)
@click.option(
    "--against",
    "against_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also prove no history up to the heads in FILE (a --checkpoint) changed.",
)
@json_option
@pass_cli
def verify(
    app: Cli,
    session_id: str | None,
    every: bool,
    checkpoint_file: Path | None,
    against_file: Path | None,
    as_json: bool,
) -> int:
    """Check hash chains, the sessions table, fork links and snapshots; exit 1 when anything
    does not hold."""
    session_id = app.find(session_id) if session_id is not None else None
    if (session_id is None) == (not every):
        raise click.UsageError("name one session ID, or --all")
    if checkpoint_file is not None and not every:
        raise click.UsageError("--checkpoint goes with --all: a checkpoint holds every session")
    if checkpoint_file is not None:
        check_target(checkpoint_file)
    against = Checkpoint.loads(read_text(against_file)) if against_file is not None else None
    if session_id is not None:
        reports = [app.reader.verify(session_id, against=against)]
    else:
        with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
            task = progress.add_task("verifying", total=None)
            reports = list(
                app.reader.verify_all(
                    against=against,
                    progress=lambda done, total: progress.update(task, completed=done, total=total),
                )
            )
    if as_json:
        app.json([views.chain_json(r) for r in reports])
    else:
        for report in reports:
            click.echo(views.chain_line(report))
    if checkpoint_file is not None:
        checkpoint = Checkpoint.of(reports)
        write_lines(checkpoint_file, [checkpoint.dumps()])
        click.echo(
            f"wrote the heads of {n_sessions(len(checkpoint.heads))} to {checkpoint_file}", err=True
        )
    return 0 if all(r.ok for r in reports) else 1


@click.command()
@json_option
@pass_cli
def stats(app: Cli, as_json: bool) -> None:
    """Sessions, events, bytes, and the tokens pruning and compaction saved."""
    figures = app.reader.stats()
    if as_json:
        app.json(views.stats_json(figures))
    else:
        click.echo(views.stats_text(figures))


COMMANDS: dict[str, click.Command] = {
    "verify": verify,
    "stats": stats,
}
