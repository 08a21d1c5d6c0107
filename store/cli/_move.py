"""`sessionstore export, import`: moving sessions between stores and from other agents."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import NamedTuple, cast

import click
from rich.progress import Progress

from sessionstore.cli._app import (
    Cli,
    json_option,
    n_sessions,
    pass_cli,
)
from sessionstore.cli._files import check_target, write_lines
from sessionstore.cli._look import at_point
from sessionstore.importers import FORMATS, ImportedSession, ImportResult
from sessionstore.session import ImportFormat, Session


def _jsonl(app: Cli, session: Session, history: bool, at: int | datetime | None) -> Iterable[str]:
    """The events, one envelope per line, hashes included, then the bodies they reference."""
    if history:
        raise click.UsageError("--history is for --format markdown: an export holds every event")
    return app.reader.export_session(session.id, at=at)


def _markdown(
    app: Cli, session: Session, history: bool, at: int | datetime | None
) -> Iterable[str]:
    """A transcript to read: the live context, or with --history every message ever appended."""
    return [session.to_markdown(at, history=history).removesuffix("\n")]


def _html(app: Cli, session: Session, history: bool, at: int | datetime | None) -> Iterable[str]:
    """The page `sessionstore view` writes: the whole history, replayable, in one file."""
    if history:
        raise click.UsageError("--history is for --format markdown: the html view holds it all")
    return [app.reader.view(session.id, at=at).removesuffix("\n")]


EXPORT_FORMATS: dict[str, Callable[[Cli, Session, bool, int | datetime | None], Iterable[str]]] = {
    "jsonl": _jsonl,
    "markdown": _markdown,
    "html": _html,
}
"""What `export --format` writes, by name: the lines of the file (or of stdout), each without
its newline. A format is one entry here."""


@click.command("export")
@click.argument("session_id", metavar="ID")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File.")
@click.option(
    "--format",
    "form",
    type=click.Choice(list(EXPORT_FORMATS)),
    default="jsonl",
    show_default=True,
    help="jsonl: every event, for import into another store; markdown: a transcript to read; "
    "html: the page `sessionstore view` writes.",
)
@click.option(
    "--history",
    is_flag=True,
    help="markdown: every message ever appended, with prunes and compactions where they "
    "happened (default: the live context, what the model is shown now).",
)
@click.option(
    "--at",
    metavar="SEQ|TIME",
    help="The session as it stood at this event number (or ISO time): its events up to there.",
)
@pass_cli
def export_session(
    app: Cli, session_id: str, output: Path | None, form: str, history: bool, at: str | None
) -> None:
    """Write the session to stdout or a file. --format jsonl (the default): its events, one
    envelope per line with hashes, then the bodies they reference, for `import`. --format
    markdown: a transcript of its live context (--history: of everything it ever held).
    --format html: the page of `sessionstore view`. --at: as it stood at that point."""
    session_id = app.find(session_id)
    if output is not None:
        check_target(output)
    session = app.reader.session(session_id)
    lines = at_point(
        session, "--at", at, lambda point: EXPORT_FORMATS[form](app, session, history, point)
    )
    if at is not None:
        lines = list(lines)  # counted below
    if output is None:
        for line in lines:
            click.echo(line)
        return
    count = write_lines(output, lines)
    if form != "jsonl":
        what = "view" if form == "html" else f"{form} transcript"
        click.echo(f"wrote the {what} of {session_id} to {output}", err=True)
        return
    events = app.reader.version(session_id) if at is None else _events_in(lines)
    bodies = f" and {count - events:,} bodies" if count > events else ""
    click.echo(f"wrote {events:,} events{bodies} of {session_id} to {output}", err=True)


def _events_in(lines: Iterable[str]) -> int:
    """How many of an export's lines are events (the bodies follow them)."""
    return sum(1 for line in lines if not line.startswith('{"body":'))


@click.command("import")
@click.argument("path", type=click.Path(allow_dash=True, path_type=Path))
@click.option(
    "--format",
    "form",
    type=click.Choice(["sessionstore", "openai", *FORMATS]),
    help="The files' format (default: recognised from each file's first line).",
)
@click.option("--strict", is_flag=True, help="Refuse a file with a malformed line.")
@click.option("--id", "session_id", help="Id for the new session (one file, not an export).")
@click.option("--title", help="Title for the new session.")
@click.option(
    "--window",
    type=click.IntRange(min=1),
    help="Context window of the new session, in tokens.",
)
@json_option
@pass_cli
def import_session(
    app: Cli,
    path: Path,
    form: str | None,
    strict: bool,
    session_id: str | None,
    title: str | None,
    window: int | None,
    as_json: bool,
) -> None:
    """Import PATH: a file, or every transcript under a folder (~/.claude/projects,
    ~/.codex/sessions, ~/.pi/agent/sessions, ~/.local/share/opencode/storage, ~/.gemini/tmp),
    or - for stdin. Importing a file again adds nothing; a transcript that grew adds its new
    entries to the same session. Malformed lines are skipped and reported (--strict refuses
    the file). The report has one line per session."""
    if str(path) == "-":
        text = sys.stdin.read()
        session = app.store.import_session(
            text,
            format=cast(ImportFormat, form or "sessionstore"),
            session_id=session_id,
            title=title,
            context_window=window,
        )
        result = ImportResult(
            (ImportedSession(session.id, form or "sessionstore", "-", True, session.version),)
        )
    else:
        if not path.exists():
            raise click.ClickException(f"no file {path}")
        if title is None and form == "openai":
            title = f"imported from {path.name}"
        with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
            task = progress.add_task("importing", total=None)
            result = app.store.import_session(
                path,
                format=cast(ImportFormat | None, form),
                session_id=session_id,
                title=title,
                context_window=window,
                strict=strict,
                progress=lambda done, total, _: progress.update(task, completed=done, total=total),
            )
        if not result.sessions and not result.skipped and not as_json:
            where = "under" if path.is_dir() else "in"
            formats = ", ".join(["sessionstore", "openai", *FORMATS])
            click.echo(
                f"nothing to import: no transcript or export found {where} {path} "
                f"(formats: {formats})",
                err=True,
            )
            return
    _report_import(app, result, as_json)


class _Figures(NamedTuple):
    """What the import report says of a session's live context."""

    seq: int
    messages: int
    tokens: int


def _figures(app: Cli, imported: ImportedSession) -> _Figures:
    """A session's figures as the import found them (its reader followed the live context:
    no fold of a session of any length), else from its live context (an export, a message
    list: text read whole), one session at a time."""
    events, messages, tokens = imported.events, imported.live_messages, imported.live_tokens
    if events is not None and messages is not None and tokens is not None:
        return _Figures(events, messages, tokens)
    context = app.store.session(imported.session_id).context()
    return _Figures(context.seq, len(context.messages), context.tokens)


def _report_import(app: Cli, result: ImportResult, as_json: bool) -> None:
    # one row per session, however many of the files were of it (a transcript copied as it
    # grew): what they wrote to it together, and the session as the import left it
    rows = [(imported, _figures(app, imported)) for imported in result.per_session]
    if as_json:
        app.json(
            {
                "sessions": [
                    {
                        "id": imported.session_id,
                        "format": imported.format,
                        "source": imported.source_id,
                        "created": imported.created,
                        "events_written": imported.events_written,
                        "events": live.seq,
                        "tokens": live.tokens,
                    }
                    for imported, live in rows
                ],
                "events_written": result.events_written,
                "skipped": [
                    {"file": skip.file, "line": skip.line, "reason": skip.reason}
                    for skip in result.skipped
                ],
            }
        )
        return
    for imported, live in rows:
        if imported.created:
            verb = "imported"
        elif imported.events_written:
            verb = f"added {imported.events_written:,} events to"
        else:
            click.echo(f"{imported.session_id}: nothing new")
            continue
        click.echo(
            f"{verb} {imported.session_id}: {live.seq:,} events, "
            f"{live.messages:,} live messages, {live.tokens:,} tokens"
        )
    for skip in result.skipped[:_SHOWN_SKIPS]:
        click.echo(f"skipped {skip}", err=True)
    if len(result.skipped) > _SHOWN_SKIPS:
        click.echo(f"... and {len(result.skipped) - _SHOWN_SKIPS} more skipped", err=True)
    if len(rows) > 1 or result.skipped:
        created = len(result.created)
        click.echo(
            f"{n_sessions(len(rows))} ({created} new), {result.events_written:,} events written, "
            f"{len(result.skipped)} skipped",
            err=True,
        )


_SHOWN_SKIPS = 20


COMMANDS: dict[str, click.Command] = {
    "export": export_session,
    "import": import_session,
}
