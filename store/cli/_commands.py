"""The `sessionstore` commands: parse, call the API, hand the result to a view."""

from __future__ import annotations

import os
import re
import shlex
import stat
import sys
import tempfile
from collections.abc import Iterable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import NamedTuple, cast

import click
import sqlalchemy as sa
from rich.progress import Progress

from sessionstore.cli import _views as views
from sessionstore.cli._app import (
    DB_HELP,
    Cli,
    accept_db_after_each_command,
    database_url,
    json_option,
    pass_cli,
)
from sessionstore.cli._demo import run_demo
from sessionstore.importers import FORMATS, ImportedSession, ImportResult
from sessionstore.log import Checkpoint
from sessionstore.projections import diff_contexts
from sessionstore.session import SQL_INT_MAX, ImportFormat
from sessionstore.storage import (
    MAX_PARTITIONS,
    PARTITIONS,
    head_revision,
    open_recorder,
    refuse_foreign,
    resolve_url,
    upgrade,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", metavar="URL", callback=database_url, help=DB_HELP)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.version_option(version("sessionstore"), prog_name="sessionstore")
@click.pass_context
def cli(ctx: click.Context, db: str | None, debug: bool) -> None:
    """An append-only, event-sourced store for LLM agent sessions."""
    ctx.obj = Cli(db)
    ctx.call_on_close(ctx.obj.close)


# the main job


@cli.command()
@click.option(
    "--turns",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    help="Turns of the scripted agent.",
)
@pass_cli
def demo(app: Cli, turns: int) -> int:
    """Watch the store do its job: a scripted coding agent (no network) whose session is
    truncated, pruned and compacted, then replayed, restored and verified."""
    result = run_demo(app.store, click.echo, turns=turns)
    db = "" if app.url == resolve_url(None) else f" --db {shlex.quote(app.shown_url)}"
    sid = result.session_id
    click.echo("\nTry next, on the session the demo made:")
    for command in (
        f"show {sid}",
        f"timeline {sid}",
        f"context {sid} --at {result.replayed_at or 1} --format openai",
        f"diff {sid} --from {result.replayed_at or 1} --to {result.events}",
        f"context {sid} --restore-pruned",
        f"export {sid} -o demo.jsonl",
        "verify --all",
        "stats",
    ):
        click.echo(f"  sessionstore{db} {command}")
    return 0 if result.chain_ok else 1


# looking at sessions


@cli.command("ls")
@click.option("--app", "app_name", metavar="APP", help="Only the sessions of this app.")
@click.option("--user", metavar="USER", help="Only the sessions of this user.")
@click.option("--tag", metavar="TAG", help="Only the sessions with this tag.")
@click.option("--limit", type=click.IntRange(0, SQL_INT_MAX), help="At most this many sessions.")
@click.option(
    "--offset", type=click.IntRange(0, SQL_INT_MAX), default=0, help="Skip this many first."
)
@json_option
@pass_cli
def list_sessions(
    app: Cli,
    app_name: str | None,
    user: str | None,
    tag: str | None,
    limit: int | None,
    offset: int,
    as_json: bool,
) -> None:
    """List sessions, most recently updated first."""
    summaries = app.reader.summaries(app=app_name, user=user, tag=tag, limit=limit, offset=offset)
    if as_json:
        app.json([views.session_json(s) for s in summaries])
    elif not summaries:
        click.echo("no sessions yet; `sessionstore demo` makes one")
    else:
        app.show(views.sessions_table(summaries))


@cli.command()
@click.argument("session_id", metavar="ID")
@json_option
@pass_cli
def show(app: Cli, session_id: str, as_json: bool) -> None:
    """The session's header and its live context."""
    session = app.reader.session(session_id)
    context = session.context()
    [summary] = app.reader.summaries(session_id)
    compactions = summary.compactions
    if as_json:
        app.json(
            {
                "id": session.id,
                "title": session.header.title,
                "model": context.model,
                "seq": context.seq,
                "context_window": context.context_window,
                "tokens": context.tokens,
                "compactions": compactions,
                "messages": [m.model_dump(mode="json") for m in context.messages],
            }
        )
        return
    app.show(views.context_header(context, session.header.title, compactions))
    click.echo()
    app.show(views.context_view(context))


@cli.command()
@click.argument("session_id", metavar="ID")
@json_option
@pass_cli
def timeline(app: Cli, session_id: str, as_json: bool) -> None:
    """Every event of the session: what it did to the live context, and its size after."""
    rows = app.reader.session(session_id).timeline()
    if as_json:
        app.json([views.timeline_json(row) for row in rows])
    else:
        app.show(views.timeline_table(rows))


@cli.command()
@click.argument("session_id", metavar="ID")
@click.option(
    "--at",
    metavar="SEQ|TIME",
    help="The trail up to this event number, or this ISO time (UTC unless it names a zone).",
)
@json_option
@pass_cli
def artifacts(app: Cli, session_id: str, at: str | None, as_json: bool) -> None:
    """What the session did, from its log: the user's requests, files read and changed,
    commands and their outcomes, errors (their decisive lines, and the call that fixed them),
    the todo list. Pruned and compacted messages count too."""
    trail = app.reader.session(session_id).artifacts(at=replay_point(at))
    if as_json:
        app.json(views.artifacts_json(trail))
    else:
        app.show(views.artifacts_view(trail))


def replay_point(value: str | None) -> int | datetime | None:
    """`--at`: a seq, or an ISO time (UTC when it names no zone)."""
    if value is None:
        return None
    if re.fullmatch(r"[0-9]+", value):
        return int(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is neither an event number (1, 2, ...) nor an ISO time "
            "(2026-11-23T12:00:00, UTC unless it names a zone)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@cli.command()
@click.argument("session_id", metavar="ID")
@click.argument("part_ids", nargs=-1, metavar="[PART]...")
@click.option("--reason", required=True, help="Shown where the content was: [redacted: REASON].")
@click.option("--all", "every", is_flag=True, help="Every part of the session (name no PART).")
@click.option("-y", "--yes", is_flag=True, help="With --all on a terminal: do not ask first.")
@json_option
@pass_cli
def redact(
    app: Cli,
    session_id: str,
    part_ids: tuple[str, ...],
    reason: str,
    every: bool,
    yes: bool,
    as_json: bool,
) -> int:
    """Delete what parts said, for good (with --all, every part of the session): their bytes
    leave the database, the chain still verifies. On a terminal, --all first says how many
    parts it deletes and asks (--yes does not ask)."""
    if part_ids and every:
        raise click.UsageError("name parts or --all, not both")
    if not part_ids and not every:
        raise click.UsageError(
            "name the parts to redact, or --all to redact every part of the session"
        )
    if part_ids:
        event = app.store.session(session_id).redact(part_ids, reason=reason)
    else:
        if not yes and _interactive():
            count = len(app.store.parts_to_purge(session_id))
            if count and not click.confirm(
                f"delete what {count} {'part' if count == 1 else 'parts'} of {session_id} "
                "said, for good?",
                err=True,
            ):
                click.echo("nothing redacted", err=True)
                return 1
        event = app.store.purge(session_id, reason=reason)
    redacted = list(event.payload.part_ids) if event else []  # type: ignore[attr-defined]
    if as_json:
        app.json({"seq": event.seq if event else None, "part_ids": redacted})
    elif event is None:
        click.echo("nothing to redact: all of it is redacted already")
    else:
        click.echo(f"redacted {len(redacted)} parts at seq {event.seq}")
    return 0


def _interactive() -> bool:
    """Whether someone can answer a question: stdin and stderr (where it is asked) are a
    terminal. A script's stdin is not, so it is never left waiting for an answer."""
    return sys.stdin.isatty() and sys.stderr.isatty()


@cli.command()
@click.argument("session_id", metavar="ID")
@click.option(
    "--at",
    metavar="SEQ|TIME",
    help="Replay to this event number, or to this ISO time (UTC unless it names a zone).",
)
@click.option("--restore-pruned", is_flag=True, help="Show original outputs instead.")
@click.option(
    "--format",
    "form",
    type=click.Choice(["text", "openai", "anthropic", "responses", "json"]),
    default="text",
    show_default=True,
    help="openai: Chat Completions messages; anthropic: system and messages; responses: the "
    "Responses API input items; json: sessionstore's own shape.",
)
@pass_cli
def context(app: Cli, session_id: str, at: str | None, restore_pruned: bool, form: str) -> None:
    """The live context now, or as it was at a point, in a model API's shape."""
    live = app.reader.session(session_id).context(
        at=replay_point(at), restore_pruned=restore_pruned
    )
    if form == "openai":
        app.json(live.to_openai())
    elif form == "anthropic":
        app.json(live.to_anthropic())
    elif form == "responses":
        app.json(live.to_responses())
    elif form == "json":
        app.json(live.to_dicts())
    else:
        click.echo(views.context_text(live))


@cli.command()
@click.argument("session_id", metavar="ID")
@click.option("--from", "start", required=True, metavar="SEQ", help="The earlier point.")
@click.option("--to", "end", metavar="SEQ", help="The later point (default: now).")
@json_option
@pass_cli
def diff(app: Cli, session_id: str, start: str, end: str | None, as_json: bool) -> None:
    """What entered and left the live context between two points."""
    session = app.reader.session(session_id)
    before = session.context(at=replay_point(start))
    after = session.context(at=replay_point(end))
    if before.seq > after.seq:
        raise click.BadParameter(
            f"--from is event {before.seq}, after --to (event {after.seq})", param_hint="--from"
        )
    changes = diff_contexts(before, after)
    if as_json:
        app.json(views.diff_json(changes))
    else:
        app.show(views.diff_text(changes))


# changing the live context (by appending events)


@cli.command()
@click.argument("session_id", metavar="ID")
@click.option("--dry-run", is_flag=True, help="Show what would be pruned; append nothing.")
@json_option
@pass_cli
def prune(app: Cli, session_id: str, dry_run: bool, as_json: bool) -> None:
    """Replace old tool outputs by placeholders (restorable), when it frees enough."""
    session = app.store.session(session_id)
    version_before = session.version
    plan = session.prune(dry_run=dry_run)
    appended = session.version != version_before
    if as_json:
        app.json(
            {
                "pruned": appended,
                "part_ids": list(plan.part_ids) if plan else [],
                "tokens_freed": plan.tokens_freed if plan else 0,
                "minimum": plan.minimum if plan else session.config.minimum_prune,
            }
        )
    elif plan is None:
        click.echo("nothing to prune: no unpruned tool output is old enough")
    elif appended:
        click.echo(f"pruned {len(plan.part_ids)} outputs, freed {plan.tokens_freed:,} tokens")
    else:
        verb = "would prune" if dry_run and plan.worth_it else "not worth pruning"
        click.echo(
            f"{verb}: {len(plan.part_ids)} outputs, {plan.tokens_freed:,} tokens "
            f"(minimum {plan.minimum:,})"
        )


@cli.command()
@click.argument("session_id", metavar="ID")
@click.option(
    "--keep-turns", type=click.IntRange(min=0), help="User turns to keep (default: the session's)."
)
@click.option(
    "--keep-tokens",
    type=click.IntRange(min=0),
    help="Tokens to keep at least (default: the session's).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan (what would leave, tokens before/after, the summary); write nothing.",
)
@json_option
@pass_cli
def compact(
    app: Cli,
    session_id: str,
    keep_turns: int | None,
    keep_tokens: int | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Summarize the head of the conversation (offline, extractive), keeping the last turns."""
    session = app.store.session(session_id)
    proposal = session.propose_compaction(keep_turns=keep_turns, keep_tokens=keep_tokens)
    if dry_run:
        if as_json:
            app.json(views.proposal_json(proposal))
        else:
            click.echo(views.proposal_text(proposal), nl=False)
        return
    event = session.apply(proposal)
    replaced = len(proposal.leaving)
    before, after = proposal.tokens_before, proposal.tokens_after
    if as_json:
        app.json({"seq": event.seq, "replaced": replaced, "tokens_before": before,
                  "tokens_after": after})  # fmt: skip
    else:
        click.echo(
            f"compacted {replaced} messages into a summary at seq {event.seq}: "
            f"{before:,} -> {after:,} tokens"
        )


@cli.command()
@click.argument("session_id", metavar="ID")
@click.argument("part_ids", nargs=-1, metavar="[PART]...")
@click.option(
    "--undo",
    "seq",
    type=click.IntRange(min=1),
    metavar="SEQ",
    help="Undo the decision at SEQ instead: a strategy's drop, a compaction, a prune, previews.",
)
@json_option
@pass_cli
def restore(
    app: Cli, session_id: str, part_ids: tuple[str, ...], seq: int | None, as_json: bool
) -> None:
    """Bring back original outputs of pruned, truncated or previewed parts (every pruned or
    previewed one by default), or, with --undo SEQ, whatever the event at SEQ took out."""
    if seq is not None:
        if part_ids:
            raise click.UsageError("name parts or --undo SEQ, not both")
        _undo(app, session_id, seq, as_json)
        return
    event = app.store.session(session_id).restore(part_ids or None)
    if as_json:
        restored = list(event.payload.part_ids) if event else []  # type: ignore[attr-defined]
        app.json({"seq": event.seq if event else None, "part_ids": restored})
    elif event is None:
        click.echo("nothing to restore: every output named shows its original already")
    else:
        count = len(event.payload.part_ids)  # type: ignore[attr-defined]
        click.echo(f"restored {count} outputs at seq {event.seq}")


def _undo(app: Cli, session_id: str, seq: int, as_json: bool) -> None:
    event = app.store.session(session_id).undo(seq)
    if as_json:
        app.json(
            {
                "undone": seq,
                "seq": event.seq if event else None,
                "type": event.type if event else None,
            }
        )
    elif event is None:
        click.echo(
            f"nothing to undo at seq {seq}: what it took out is back, or has left the context since"
        )
    else:
        click.echo(f"undid seq {seq} with {event.type} at seq {event.seq}")


@cli.command()
@click.argument("session_id", metavar="ID")
@click.option(
    "--at",
    type=click.IntRange(min=1),
    metavar="SEQ",
    help="Fork after this event (default: the head).",
)
@click.option("--title", help="The fork's title (default: the parent's).")
@pass_cli
def fork(app: Cli, session_id: str, at: int | None, title: str | None) -> None:
    """A new session that shares this one's history up to a point."""
    forked = app.store.fork(session_id, at=at, title=title)
    click.echo(forked.id)


# integrity and figures


@cli.command()
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
    if (session_id is None) == (not every):
        raise click.UsageError("name one session ID, or --all")
    if checkpoint_file is not None and not every:
        raise click.UsageError("--checkpoint goes with --all: a checkpoint holds every session")
    if checkpoint_file is not None:
        _check_target(checkpoint_file)
    against = Checkpoint.loads(_read_text(against_file)) if against_file is not None else None
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
        _write_lines(checkpoint_file, [checkpoint.dumps()])
        click.echo(
            f"wrote the heads of {_sessions(len(checkpoint.heads))} to {checkpoint_file}", err=True
        )
    return 0 if all(r.ok for r in reports) else 1


@cli.command()
@json_option
@pass_cli
def stats(app: Cli, as_json: bool) -> None:
    """Sessions, events, bytes, and the tokens pruning and compaction saved."""
    figures = app.reader.stats()
    if as_json:
        app.json(views.stats_json(figures))
    else:
        click.echo(views.stats_text(figures))


# moving sessions


@cli.command("export")
@click.argument("session_id", metavar="ID")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File.")
@pass_cli
def export_session(app: Cli, session_id: str, output: Path | None) -> None:
    """Write the session's events as JSONL (one envelope per line, hashes included), then the
    bodies they reference (one per line)."""
    if output is not None:
        _check_target(output)
    lines = app.reader.export_session(session_id)
    if output is None:
        for line in lines:
            click.echo(line)
        return
    count = _write_lines(output, lines)
    events = app.reader.version(session_id)
    bodies = f" and {count - events:,} bodies" if count > events else ""
    click.echo(f"wrote {events} events{bodies} of {session_id} to {output}", err=True)


def _sessions(count: int) -> str:
    return f"{count} session" if count == 1 else f"{count} sessions"


def _check_target(output: Path) -> None:
    """A file a command writes (`export -o`, `verify --checkpoint`) is a new path or a regular
    file, which it replaces whole. Anything else is refused before anything is read or
    written: the new file is renamed over the target, which would put a text file in place of
    a device (`/dev/full`), a pipe or a socket, and in place of a symbolic link rather than
    the file it points to."""
    if not output.parent.is_dir():
        raise click.ClickException(f"cannot write {output}: no folder {output.parent}")
    try:
        mode = output.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return
    kind = _FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")
    raise click.ClickException(
        f"cannot write {output}: it is {kind}, and only a regular file or a new path is "
        "replaced (name the file itself, or write to stdout and redirect it)"
    )


_FILE_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def _write_lines(output: Path, lines: Iterable[str]) -> int:
    """Write `lines` to a new file beside `output` and rename it over: a failed write leaves
    neither a half-written target nor the partial file behind. The partial file is created
    anew (never through a file or link already at its name) with the permissions a new file
    gets, and the target is checked again just before the rename. Returns how many lines it
    wrote."""
    try:
        descriptor, name = tempfile.mkstemp(
            prefix=f".{output.name}.", suffix=".partial", dir=output.parent
        )
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
    partial = Path(name)
    count = 0
    try:
        with open(descriptor, "w", encoding="utf-8", newline="\n") as file:
            os.chmod(descriptor, 0o666 & ~_umask())
            for line in lines:
                file.write(line + "\n")
                count += 1
        _check_target(output)  # nothing took its place while the lines were written
        partial.replace(output)
    except BaseException as exc:
        partial.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
        raise
    return count


def _umask() -> int:
    """The process's umask (reading it means setting it: set it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@cli.command("import")
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
            verb = f"added {imported.events_written} events to"
        else:
            click.echo(f"{imported.session_id}: nothing new")
            continue
        click.echo(
            f"{verb} {imported.session_id}: {live.seq} events, "
            f"{live.messages} live messages, {live.tokens:,} tokens"
        )
    for skip in result.skipped[:_SHOWN_SKIPS]:
        click.echo(f"skipped {skip}", err=True)
    if len(result.skipped) > _SHOWN_SKIPS:
        click.echo(f"... and {len(result.skipped) - _SHOWN_SKIPS} more skipped", err=True)
    if len(rows) > 1 or result.skipped:
        created = len(result.created)
        click.echo(
            f"{_sessions(len(rows))} ({created} new), {result.events_written:,} events written, "
            f"{len(result.skipped)} skipped",
            err=True,
        )


_SHOWN_SKIPS = 20


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"{file} is not UTF-8 text: {exc.reason}") from None
    except FileNotFoundError:
        raise click.ClickException(f"no file {file}") from None


# the schema


@cli.group()
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
    recorder = open_recorder(app.url if partitions is None else _asking(app.url, partitions))
    try:
        upgrade(recorder)
        current = recorder.database_state().revision
    finally:
        recorder.close()
    _show_revision(current)


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


@db.command("gc")
@pass_cli
def db_gc(app: Cli) -> None:
    """Delete every body no session references (a secret two sessions redacted at the same
    moment, in a database written before that was made safe), then scrub the files."""
    deleted = app.store.collect_bodies()
    click.echo(f"deleted {deleted} {'body' if deleted == 1 else 'bodies'} no session references")


def _show_revision(current: str | None) -> None:
    click.echo(
        f"database at {current or 'nothing (empty)'}; this version's head is {head_revision()}"
    )


accept_db_after_each_command(cli)
