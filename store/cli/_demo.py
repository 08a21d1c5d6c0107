"""`sessionstore demo`: the main job, end to end, with no network and no model.

A scripted coding agent works through a task for 60 turns in a window small enough that it
fills again and again: on the way the store, with its default settings, truncates the long
outputs, prunes old outputs and compacts the conversation. Then the demo audits the session:
the timeline of what changed the context, a replay to just before the first compaction
compared with now, a pruned output restored byte for byte, and the hash chain.

Every run prints the same figures: the agent is seeded, and so are the ids it makes (the model
is shown ids, in a pruned output's placeholder, and random ids of the same length tokenize to
different counts). Only the session's times, and its id when `demo` is taken, differ.
"""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import click

from sessionstore.cli._app import Cli, pass_cli
from sessionstore.cli._scripted import coding_session, drive
from sessionstore.events import (
    ContextCompacted,
    OutputsPruned,
    RecordedEvent,
    SessionExists,
    ToolResultPart,
    seeded_ids,
)
from sessionstore.projections import LiveMessage, LiveToolResult, TimelineRow, diff_contexts
from sessionstore.session import Session, SessionStore
from sessionstore.storage import resolve_url

DEMO_WINDOW = 24_000
"""Tokens: a small model's window, so 60 turns of the scripted agent (reads, greps and test
logs of 1 to 30 KB) fill it over and over. With the default settings each output is shown at
most a tenth of the usable window (the longer ones truncated on append), prunes keep it inside
for a while; once pruning alone no longer gets it under the limit (the newest outputs are kept,
and every pruned one leaves a placeholder), a compaction folds the head into a summary. In a
48k window the same 60 turns only prune (outputs this short fit beside the kept ones), and the
demo would show no compaction."""
DEMO_MODEL = "scripted-coder"
DEMO_SEED = 7
IDS_FROM = datetime(2025, 1, 1, tzinfo=UTC)
"""Where the demo's seeded ids start counting (the millisecond their UUIDv7 layout carries)."""


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What the demo made and checked, for its caller (and its tests)."""

    session_id: str
    events: int
    llm_calls: int
    peak_tokens: int
    truncated: int
    prunes: int
    compactions: int
    replayed_at: int | None
    restored_part: str | None
    chain_ok: bool


def run_demo(store: SessionStore, say: Callable[[str], None], *, turns: int = 60) -> DemoResult:
    """Play the scripted session into `store`, telling `say` what happens, line by line."""
    s = _new_session(store)
    say(f"Playing a scripted coding agent for {turns:,} turns (reads, greps, edits, test runs)")
    say(f"into session {s.id}, window {DEMO_WINDOW:,} tokens; no network, no model.")
    with seeded_ids(DEMO_SEED, IDS_FROM):
        report = drive(s, coding_session(turns, seed=DEMO_SEED))
    usable = DEMO_WINDOW - s.header.output_reserve
    events = store.read(s.id)
    truncated = [
        part
        for event in events
        if event.type == "MessageAppended"
        for part in event.payload.message.parts  # type: ignore[attr-defined]
        if isinstance(part, ToolResultPart) and part.truncation is not None
    ]
    prunes = [e for e in events if isinstance(e.payload, OutputsPruned)]
    compactions = [e for e in events if isinstance(e.payload, ContextCompacted)]
    say("")
    say(
        f"{s.version:,} events, {report.llm_calls:,} model calls; the largest context sent was "
        f"{report.peak_tokens:,} of {usable:,} usable tokens."
    )
    if truncated:  # the largest stands for all: each was cut to its share of the window
        part = max(truncated, key=lambda p: len(p.output))
        assert part.truncation is not None
        others = len(truncated) - 1
        say(
            f"Truncated on append: {part.name} output of {len(part.output.encode()):,} bytes, "
            f"shown as {len(part.truncation.shown.encode()):,} (part {part.id})"
            + (f", and {others} shorter one(s)." if others else ".")
        )
    freed = sum(e.payload.tokens_freed for e in prunes)  # type: ignore[attr-defined]
    say(f"Pruned old tool outputs {_times(len(prunes))}, {freed:,} tokens in all.")
    compacted = sum(
        e.payload.tokens_before - e.payload.tokens_after  # type: ignore[attr-defined]
        for e in compactions
    )
    say(
        f"Compacted the conversation {_times(len(compactions))}"
        + (f", {compacted:,} tokens in all." if compactions else ".")
    )

    say("")
    say("Timeline of what changed the context (`timeline` shows every event):")
    _timeline(s, say)

    replayed_at = _replay(s, compactions, say)
    restored = _restore(store, s, say)
    chain = store.verify(s.id)
    say("")
    say(
        f"Hash chain: {chain.events_checked:,} events verified, intact."
        if chain.ok
        else f"Hash chain BROKEN at seq {chain.first_broken_seq}: {chain.reason}"
    )
    return DemoResult(
        session_id=s.id,
        events=store.version(s.id),
        llm_calls=report.llm_calls,
        peak_tokens=report.peak_tokens,
        truncated=len(truncated),
        prunes=len(prunes),
        compactions=len(compactions),
        replayed_at=replayed_at,
        restored_part=restored,
        chain_ok=chain.ok,
    )


def _new_session(store: SessionStore) -> Session:
    """A session named `demo`, or `demo-2`, `demo-3`... when the demo ran here before: an id
    to type in the commands it suggests."""
    for n in itertools.count(1):
        try:
            return store.create_session(
                session_id="demo" if n == 1 else f"demo-{n}",
                model=DEMO_MODEL,
                context_window=DEMO_WINDOW,
                title="demo: fix the failing tests",
            )
        except SessionExists:
            continue
    raise AssertionError("unreachable")  # pragma: no cover


def _timeline(s: Session, say: Callable[[str], None]) -> None:
    """The rows that changed the context other than by appending: the start, truncations,
    prunes and compactions. Of a run of prunes and truncations in a row (the routine: each
    output is cut to its share of a small window), its first and last."""
    rows = [
        row
        for row in s.timeline()
        if row.type not in ("MessageAppended", "MessagesReverted") or "truncated" in row.summary
    ]
    for routine, group in itertools.groupby(rows, key=_routine):
        run = list(group)
        if not routine or len(run) <= 2:
            for row in run:
                say(_row(row))
            continue
        say(_row(run[0]))
        prunes = sum(row.type == "OutputsPruned" for row in run[1:-1])
        cuts = len(run) - 2 - prunes
        say(f"  {'':>5}  {'':8}  ... {prunes:,} more prunes, {cuts:,} more truncations")
        say(_row(run[-1]))


def _routine(row: TimelineRow) -> bool:
    """A prune, or a result truncated on append."""
    return row.type == "OutputsPruned" or row.type == "MessageAppended"


def _row(row: TimelineRow) -> str:
    return f"  {row.seq:>5}  {row.time:%H:%M:%S}  {row.summary}"


def _replay(s: Session, compactions: list[RecordedEvent], say: Callable[[str], None]) -> int | None:
    """What the model was sent just before the first compaction, against what it is sent now:
    the log keeps both, so either can be rebuilt."""
    if not compactions:
        return None
    seq = compactions[0].seq - 1
    summarizers = {
        e.payload.summary.id: e.payload.summarizer  # type: ignore[attr-defined]
        for e in compactions
    }
    then, now = s.context(at=seq), s.context()
    diff = diff_contexts(then, now)
    summaries = [m for m in diff.entered if m.summary]
    say("")
    say(f"Replay: the context at seq {seq}, just before the first compaction, against now:")
    say(f"  then: {len(then.messages):,} messages, {then.tokens:,} tokens")
    say(f"  now:  {len(now.messages):,} messages, {now.tokens:,} tokens")
    say(
        f"  {len(diff.left):,} messages left the context, {len(diff.entered):,} entered "
        f"({len(summaries):,} of them summaries); {len(diff.changed):,} outputs changed status."
    )
    for message in diff.left[:3]:
        say(f"  - {message.role} {message.id}: {_gist(message)}")
    if len(diff.left) > 3:
        say(f"  - ... and {len(diff.left) - 3} more")
    for message in summaries[:1]:
        by = summarizers.get(message.id, "unknown")
        say(f"  + summary {message.id} ({message.tokens:,} tokens, {by} summarizer),")
        say("    its sections and their first entries:")
        for line in _outline(_text(message)):
            say(f"    {line}")
    return seq


def _outline(summary: str) -> list[str]:
    """Each `## ` section of a summary with its size and first entry (`context --at` shows
    it whole)."""
    sections: list[list[str]] = []
    for line in summary.splitlines():
        if line.startswith("## "):
            sections.append([line])
        elif sections and line.strip():
            sections[-1].append(line)
    outline = []
    for heading, *body in sections:
        # not "(5 older entries left out...)", nor an entry's heading ("Request 1, seq 2:")
        entries = [line for line in body if not line.startswith("(") and line[-1] != ":"]
        outline.append(f"{heading} ({len(body):,} lines)")
        outline += [f"  {_clip(entry, 90)}" for entry in entries[:1]]
    return outline


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n:,} times"


def _text(message: LiveMessage) -> str:
    part = message.parts[0]
    return str(getattr(part, "text", None) or getattr(part, "output", ""))


def _gist(message: LiveMessage) -> str:
    """The first words of a message, on one line."""
    return _clip(" ".join(_text(message).split()))


def _clip(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _restore(store: SessionStore, s: Session, say: Callable[[str], None]) -> str | None:
    """Restore the largest pruned output still in the context that was not truncated (a
    truncated one would bring back its whole original, far more than the model was shown)."""
    originals = {
        part.id: part.output
        for event in store.read(s.id)
        if event.type == "MessageAppended"
        for part in event.payload.message.parts  # type: ignore[attr-defined]
        if isinstance(part, ToolResultPart) and part.truncation is None
    }
    pruned = [
        part
        for message in s.context().messages
        for part in message.parts
        if isinstance(part, LiveToolResult) and part.status == "pruned" and part.id in originals
    ]
    if not pruned:
        return None
    part = max(pruned, key=lambda p: len(originals[p.id]))
    event = s.restore([part.id])
    assert event is not None
    restored = s.context().message(_owner(s, part.id)).parts[0]
    assert isinstance(restored, LiveToolResult)
    same = "identical to" if restored.output == originals[part.id] else "DIFFERENT from"
    say("")
    say(f"Restore: part {part.id} was shown to the model as")
    say(f"  {part.output}")
    say(
        f"  restored at seq {event.seq}: {len(restored.output.encode()):,} bytes, "
        f"{restored.tokens:,} tokens, {same} the original output."
    )
    return part.id


def _owner(s: Session, part_id: str) -> str:
    return next(m.id for m in s.context().messages if any(p.id == part_id for p in m.parts))


@click.command()
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
    VIEW_PAGE.write_text(app.store.view(sid), encoding="utf-8")
    click.echo(f"\nThe session as one page (token curve, replay, compactions): {VIEW_PAGE}")
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


VIEW_PAGE = Path("sessionstore-demo.html")
"""Where the demo writes the view of its session: in the current folder, as `export -o` would,
replacing the page an earlier demo wrote."""

COMMANDS: dict[str, click.Command] = {"demo": demo}
