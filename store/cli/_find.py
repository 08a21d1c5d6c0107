"""`sessionstore search`: full-text search across every session of the store."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

import click
from rich.console import Group
from rich.text import Text

from sessionstore.cli import _views as views
from sessionstore.cli._app import Cli, json_option, pass_cli
from sessionstore.events import Role
from sessionstore.log import SearchHit
from sessionstore.session import MAX_SEARCH_HITS

_SPAN = re.compile(r"([0-9]+)([dhm])")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def since_option(value: str | None) -> datetime | None:
    """`--since`: an ISO date or time (UTC unless it names a zone), or a span back from now
    (`7d`, `12h`, `30m`)."""
    if value is None:
        return None
    span = _SPAN.fullmatch(value)
    if span is not None:
        return datetime.now(UTC) - timedelta(**{_UNITS[span[2]]: int(span[1])})
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is neither an ISO date or time (2026-11-23, 2026-11-23T12:00, UTC "
            "unless it names a zone) nor a span back from now (7d, 12h, 30m)",
            param_hint="--since",
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@click.command()
@click.argument("query")
@click.option("--app", "app_name", metavar="APP", help="Only in the sessions of this app.")
@click.option("--user", metavar="USER", help="Only in the sessions of this user.")
@click.option("--tag", metavar="TAG", help="Only in the sessions with this tag.")
@click.option("--role", type=click.Choice(get_args(Role)), help="Only in messages of this role.")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only events recorded since then: an ISO date or time (UTC unless it names a zone), "
    "or a span back from now (7d, 12h, 30m).",
)
@click.option(
    "--limit",
    type=click.IntRange(1, MAX_SEARCH_HITS),
    default=20,
    show_default=True,
    help="At most this many hits.",
)
@json_option
@pass_cli
def search(
    app: Cli,
    query: str,
    app_name: str | None,
    user: str | None,
    tag: str | None,
    role: Role | None,
    since: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Search every session's messages, tool calls, tool outputs and summaries for QUERY,
    newest first.

    QUERY is words, all of which must occur in one text; words in double quotes must occur
    side by side, in order. Case, accents and punctuation do not count:
    `sessionstore search 'alembic "upgrade head"'`."""
    hits = app.reader.search(
        query,
        app=app_name,
        user=user,
        tag=tag,
        role=role,
        since=since_option(since),
        limit=limit,
    )
    if as_json:
        app.json_rows([hit_json(hit) for hit in hits])
    elif not hits:
        click.echo(f"nothing found for {query!r}")
    else:
        app.show(hits_view(hits, app.width))


def hits_view(hits: list[SearchHit], width: int) -> Group:
    """Each hit as two lines that never wrap: where it is (the session's id, the event's seq,
    role and kind, when, the session's title), then its excerpt, the query's words between `[`
    `]` and in bold; each cut at the terminal's width."""
    lines: list[Text] = []
    for hit in hits:
        what = "/".join(filter(None, [hit.role, hit.kind]))
        style = views.ROLE_STYLES.get(hit.role or "", "")
        head = Text.assemble(
            (hit.session_id, "bold"), f"  #{hit.seq}  ", (what, style),
            f"  {views.when(hit.recorded_at)}  ", hit.title,
        )  # fmt: skip
        head.truncate(width, overflow="ellipsis")
        excerpt = Text("    ")
        at = 0
        for low, high in hit.matches:
            excerpt.append(hit.excerpt[at:low])
            excerpt.append(f"[{hit.excerpt[low:high]}]", "bold")
            at = high
        excerpt.append(hit.excerpt[at:])
        excerpt.truncate(width, overflow="ellipsis")
        lines += [head, excerpt]
    return Group(*lines)


def hit_json(hit: SearchHit) -> dict[str, Any]:
    return {
        "session_id": hit.session_id,
        "seq": hit.seq,
        "recorded_at": hit.recorded_at.isoformat(),
        "event_type": hit.event_type,
        "role": hit.role,
        "kind": hit.kind,
        "part_id": hit.part_id,
        "title": hit.title,
        "excerpt": hit.excerpt,
        "matches": [list(span) for span in hit.matches],
        "marked": hit.marked,
    }


COMMANDS = {"search": search}
