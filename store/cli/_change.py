"""`sessionstore redact, prune, compact, restore, fork`: changing a session's live context, by
appending events."""

from __future__ import annotations

import sys

import click

from sessionstore.cli import _views as views
from sessionstore.cli._app import (
    Cli,
    json_option,
    pass_cli,
)


@click.command()
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
    session_id = app.find(session_id, writing=True)
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


@click.command()
@click.argument("session_id", metavar="ID")
@click.option("--dry-run", is_flag=True, help="Show what would be pruned; append nothing.")
@json_option
@pass_cli
def prune(app: Cli, session_id: str, dry_run: bool, as_json: bool) -> None:
    """Replace old tool outputs by placeholders (restorable), when it frees enough."""
    session_id = app.find(session_id, writing=True)
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


@click.command()
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
    session_id = app.find(session_id, writing=True)
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


@click.command()
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
    session_id = app.find(session_id, writing=True)
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
    session = app.store.session(session_id)
    event = session.undo(seq)
    now = session.measure()
    over = now.usable is not None and now.tokens > now.usable
    if as_json:
        app.json(
            {
                "undone": seq,
                "seq": event.seq if event else None,
                "type": event.type if event else None,
                "tokens": now.tokens,
                "usable_window": now.usable,
                "over_window": over,
            }
        )
    elif event is None:
        click.echo(
            f"nothing to undo at seq {seq}: what it took out is back, or has left the context since"
        )
    else:
        click.echo(f"undid seq {seq} with {event.type} at seq {event.seq}")
    if over and not as_json:
        click.echo(
            f"warning: the context is now {now.tokens:,} tokens, over the usable window of "
            f"{now.usable:,}: the next check before a model call shrinks it again "
            f"(`sessionstore prune {session_id}` or `compact {session_id}` does it now)",
            err=True,
        )


@click.command()
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
    session_id = app.find(session_id, writing=True)
    forked = app.store.fork(session_id, at=at, title=title)
    click.echo(forked.id)


COMMANDS: dict[str, click.Command] = {
    "redact": redact,
    "prune": prune,
    "compact": compact,
    "restore": restore,
    "fork": fork,
}
