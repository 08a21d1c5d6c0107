"""`sessionstore ls, show, timeline, artifacts, context, diff`: looking at sessions, changing
nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

import click

from sessionstore.cli import _views as views
from sessionstore.cli._app import (
    Cli,
    json_option,
    pass_cli,
)
from sessionstore.events import InvalidReplayPoint
from sessionstore.session import SQL_INT_MAX

if TYPE_CHECKING:
    from sessionstore.session import Session

T = TypeVar("T")


@click.command("ls")
@click.option("--app", "app_name", metavar="APP", help="Only the sessions of this app.")
@click.option("--user", metavar="USER", help="Only the sessions of this user.")
@click.option("--tag", metavar="TAG", help="Only the sessions with this tag.")
@click.option("--limit", type=click.IntRange(0, SQL_INT_MAX), help="At most this many sessions.")
@click.option(
    "--offset", type=click.IntRange(0, SQL_INT_MAX), default=0, help="Skip this many first."
)
@click.option(
    "--after",
    metavar="ID",
    help="Only the sessions listed after this one (the last of the page before): pages that "
    "stay put while sessions are updated, at the cost of one indexed query each.",
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
    after: str | None,
    as_json: bool,
) -> None:
    """List sessions, most recently updated first."""
    last = None if after is None else app.reader.session_info(app.find(after))
    summaries = app.reader.summaries(
        app=app_name, user=user, tag=tag, limit=limit, offset=offset, after=last
    )
    if as_json:
        app.json_rows([views.session_json(s) for s in summaries])
    elif not summaries:
        click.echo("no sessions yet; `sessionstore demo` makes one")
    else:
        app.show(views.sessions_table(summaries, app.width))


@click.command()
@click.argument("session_id", metavar="ID")
@json_option
@pass_cli
def show(app: Cli, session_id: str, as_json: bool) -> None:
    """The session's header and its live context."""
    session_id = app.find(session_id)
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


@click.command()
@click.argument("session_id", metavar="ID")
@json_option
@pass_cli
def timeline(app: Cli, session_id: str, as_json: bool) -> None:
    """Every event of the session: what it did to the live context, and its size after."""
    session_id = app.find(session_id)
    rows = app.reader.session(session_id).timeline()
    if as_json:
        app.json([views.timeline_json(row) for row in rows])
    else:
        app.show(views.timeline_table(rows))


@click.command()
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
    session_id = app.find(session_id)
    session = app.reader.session(session_id)
    trail = at_point(session, "--at", at, session.artifacts)
    if as_json:
        app.json(views.artifacts_json(trail))
    else:
        app.show(views.artifacts_view(trail))


def at_point(
    session: Session, option: str, value: str | None, read: Callable[[int | datetime | None], T]
) -> T:
    """`read(at=)` at the point `option` names, or a refusal in the command line's words (the
    option, the events the session has) rather than the API's."""
    try:
        return read(replay_point(value))
    except InvalidReplayPoint:
        raise click.BadParameter(
            f"{value} is no point of session {session.id}: give an event number from 1 to "
            f"{session.version:,}, or a time since it started",
            param_hint=option,
        ) from None


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


@click.command()
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
    session_id = app.find(session_id)
    session = app.reader.session(session_id)
    live = at_point(
        session, "--at", at, lambda at: session.context(at=at, restore_pruned=restore_pruned)
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


@click.command()
@click.argument("session_id", metavar="ID")
@click.option("--from", "start", required=True, metavar="SEQ", help="The earlier point.")
@click.option("--to", "end", metavar="SEQ", help="The later point (default: now).")
@json_option
@pass_cli
def diff(app: Cli, session_id: str, start: str, end: str | None, as_json: bool) -> None:
    """What entered and left the live context between two points."""
    session_id = app.find(session_id)
    session = app.reader.session(session_id)
    before = at_point(session, "--from", start, session.context)
    after = at_point(session, "--to", end, session.context)
    if before.seq > after.seq:
        raise click.BadParameter(
            f"--from is event {before.seq}, after --to (event {after.seq})", param_hint="--from"
        )
    from sessionstore.projections import diff_contexts

    changes = diff_contexts(before, after)
    if as_json:
        app.json(views.diff_json(changes))
    else:
        app.show(views.diff_text(changes))


COMMANDS: dict[str, click.Command] = {
    "ls": list_sessions,
    "show": show,
    "timeline": timeline,
    "artifacts": artifacts,
    "context": context,
    "diff": diff,
}
