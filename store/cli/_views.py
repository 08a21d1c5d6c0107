"""How the command line shows things: Rich renderables for people, plain dicts for `--json`.
Each view takes data the API returned and fetches nothing."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

# The parts and the live context are classes of the models (pydantic) and the folds: imported
# where a view of them looks at their kind, so `ls`, whose rows are plain, loads neither.
if TYPE_CHECKING:
    from sessionstore.context import CompactionProposal
    from sessionstore.log import SessionSummary, StoreStats, VerifyReport
    from sessionstore.projections import (
        ArtifactTrail,
        Context,
        ContextDiff,
        LiveMessage,
        TimelineRow,
    )

ROLE_STYLES = {"system": "magenta", "user": "green", "assistant": "cyan", "tool": "yellow"}
STATUS_STYLES = {
    "pruned": "red",
    "truncated": "yellow",
    "previewed": "yellow",
    "restored": "green",
    "original": "",
}


def when(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S}"


def tokens_of(tokens: int, window: int | None) -> str:
    return f"{tokens:,} / {window:,}" if window else f"{tokens:,}"


# sessions


def sessions_table(summaries: Sequence[SessionSummary], width: int) -> Table:
    """`ls`: one line per session, within `width` columns. When the whole table is wider, ids
    are shortened to their shortest unique prefix (at least `SHORT_ID` characters; every
    command takes one), titles are cut with an ellipsis, and COMPACTIONS, then EVENTS, then
    UPDATED are left out, until it fits; a row never wraps."""
    ids = [s.info.id for s in summaries]
    rows = [
        {
            "ID": s.info.id,
            "TITLE": s.info.title,
            "EVENTS": f"{s.info.version:,}",
            "LIVE TOKENS / WINDOW": tokens_of(s.live_tokens, s.context_window),
            "COMPACTIONS": f"{s.compactions:,}",
            "UPDATED": when(s.info.updated_at),
        }
        for s in summaries
    ]
    columns = ["ID", "TITLE", "EVENTS", "LIVE TOKENS / WINDOW", "COMPACTIONS", "UPDATED"]

    headers = {name: name for name in columns}

    def width_of(name: str) -> int:
        return max([len(headers[name]), *(len(r[name]) for r in rows)])

    def needed(names: list[str], title: int) -> int:
        widths = [title if name == "TITLE" else width_of(name) for name in names]
        return sum(widths) + 2 * (len(names) - 1)

    longest_title = width_of("TITLE")
    if needed(columns, longest_title) > width:
        for row, short in zip(rows, short_ids(ids), strict=True):
            row["ID"] = short
    title_at_least = min(longest_title, _TITLE_AT_LEAST)
    for droppable in ("COMPACTIONS", "EVENTS", "UPDATED"):
        if needed(columns, title_at_least) <= width:
            break
        columns.remove(droppable)
    if needed(columns, title_at_least) > width:
        headers["LIVE TOKENS / WINDOW"] = "TOKENS"
    table = Table(box=None, pad_edge=False, width=min(width, needed(columns, longest_title)))
    for name in columns:
        right = name in ("EVENTS", "LIVE TOKENS / WINDOW", "COMPACTIONS")
        table.add_column(
            headers[name],
            justify="right" if right else "left",
            no_wrap=True,
            overflow="ellipsis",
            ratio=1 if name == "TITLE" else None,
            min_width=None if name == "TITLE" else width_of(name),
        )
    for row in rows:
        table.add_row(*(Text(row[name]) for name in columns))
    return table


SHORT_ID = 8
"""The fewest characters of an id `ls` shows when it shortens ids (git shows 7 of a commit)."""
_TITLE_AT_LEAST = 12


def short_ids(ids: Sequence[str]) -> list[str]:
    """Each id's shortest prefix that no other id in `ids` shares, at least `SHORT_ID` long: the
    neighbours in sorted order are the ids sharing the longest prefix with it."""
    ordered = sorted(set(ids))

    def common(a: str, b: str) -> int:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    length = {}
    for n, one in enumerate(ordered):
        before = common(one, ordered[n - 1]) if n > 0 else 0
        after = common(one, ordered[n + 1]) if n + 1 < len(ordered) else 0
        length[one] = max(SHORT_ID, before + 1, after + 1)
    return [i[: length[i]] for i in ids]


def session_json(s: SessionSummary) -> dict[str, Any]:
    return {
        "id": s.info.id,
        "title": s.info.title,
        "events": s.info.version,
        "live_tokens": s.live_tokens,
        "context_window": s.context_window,
        "compactions": s.compactions,
        "parent_id": s.info.parent_id,
        "parent_seq": s.info.parent_seq,
        "created_at": s.info.created_at.isoformat(),
        "updated_at": s.info.updated_at.isoformat(),
        "app": s.info.app,
        "user": s.info.user,
        "tags": list(s.info.tags),
    }


# the live context


def context_header(context: Context, title: str, compactions: int) -> Text:
    lines = [
        f"session   {context.session_id}",
        f"title     {title}",
        f"model     {context.model or '-'}",
        f"at        seq {context.seq} ({when(context.time)})",
        f"context   {len(context.messages):,} messages, "
        f"{tokens_of(context.tokens, context.context_window)} tokens",
        f"compacted {compactions} time(s)",
    ]
    return Text("\n".join(lines))


def context_view(context: Context) -> Group:
    return Group(*(message_view(m) for m in context.messages))


def message_view(message: LiveMessage) -> Text:
    label = "summary" if message.summary else message.role
    text = Text()
    text.append(f"── {label}", style=f"bold {ROLE_STYLES.get(message.role, '')}")
    text.append(f"  {message.id}  {message.tokens:,} tokens")
    if message.pinned:
        text.append("  pinned", style="bold")
    for part in message.parts:
        text.append("\n")
        text.append_text(part_view(part))
    return text


def part_view(part: object) -> Text:
    from sessionstore.events import FilePart, NativePart, ReasoningPart, TextPart, ToolCallPart
    from sessionstore.projections import LiveToolResult

    if isinstance(part, TextPart):
        return Text(part.text)
    if isinstance(part, ReasoningPart):
        return Text(f"(reasoning) {part.text}", style="dim")
    if isinstance(part, ToolCallPart):
        return Text(f"→ {part.name}({part.arguments})  [call {part.call_id}]", style="cyan")
    if isinstance(part, LiveToolResult):
        head = f"← {part.name or part.call_id}"
        if part.is_error:
            head += " (error)"
        if part.status != "original":
            head += f" [{part.status}, part {part.id}]"
        text = Text(head, style=STATUS_STYLES[part.status])
        text.append("\n" + _preview(part.output))
        return text
    if isinstance(part, FilePart):
        return Text(f"[file {part.filename or part.media_type}]")
    if isinstance(part, NativePart):
        return Text(part.text or f"[{part.native.api} block]", style="dim")
    return Text(str(part))  # pragma: no cover


def _preview(output: str, lines: int = 6) -> str:
    shown = output.splitlines()
    if len(shown) <= lines:
        return output
    return "\n".join(shown[:lines]) + f"\n… {len(shown) - lines:,} more lines"


def context_text(context: Context) -> str:
    """The whole live context as plain text (`context --format text`): nothing elided."""
    from sessionstore.events import FilePart, NativePart, ReasoningPart, TextPart, ToolCallPart
    from sessionstore.projections import LiveToolResult

    out = []
    for message in context.messages:
        label = "summary" if message.summary else message.role
        out.append(f"## {label} {message.id} ({message.tokens:,} tokens)")
        for part in message.parts:
            if isinstance(part, TextPart | ReasoningPart):
                out.append(part.text)
            elif isinstance(part, ToolCallPart):
                out.append(f"-> {part.name}({part.arguments}) [call {part.call_id}]")
            elif isinstance(part, LiveToolResult):
                out.append(f"<- {part.name or part.call_id} [{part.status}]\n{part.output}")
            elif isinstance(part, FilePart):
                out.append(f"[file {part.filename or part.media_type}]")
            elif isinstance(part, NativePart):
                out.append(part.text or f"[{part.native.api} block]")
    return "\n".join(out)


# audit


def timeline_table(rows: Sequence[TimelineRow]) -> Table:
    table = Table(box=None, pad_edge=False)
    table.add_column("SEQ", justify="right")
    table.add_column("TIME")
    table.add_column("EVENT")
    table.add_column("TOKENS", justify="right")
    table.add_column("WHAT", no_wrap=True, overflow="ellipsis")  # `--json` has it whole
    for row in rows:
        table.add_row(
            str(row.seq),
            f"{row.time:%H:%M:%S}",
            row.type,
            f"{row.tokens:,}",
            Text(row.summary),
        )
    return table


def timeline_json(row: TimelineRow) -> dict[str, Any]:
    return {
        "seq": row.seq,
        "time": row.time.isoformat(),
        "type": row.type,
        "summary": row.summary,
        "tokens": row.tokens,
        "added": list(row.added),
        "removed": list(row.removed),
        "pruned": list(row.pruned),
        "restored": list(row.restored),
        "previewed": list(row.previewed),
    }


def diff_text(diff: ContextDiff) -> Text:
    b, a = diff.before, diff.after
    lines = [
        Text(f"seq {b.seq}: {len(b.messages):,} messages, {b.tokens:,} tokens"),
        Text(
            f"seq {a.seq}: {len(a.messages):,} messages, {a.tokens:,} tokens "
            f"({diff.tokens_delta:+,})"
        ),
    ]
    lines += [Text(f"- {_line(message)}", style="red") for message in diff.left]
    lines += [Text(f"+ {_line(message)}", style="green") for message in diff.entered]
    lines += [
        Text(
            f"~ {change.after.name or change.after.call_id} output {change.after.id}: "
            f"{change.before.status} -> {change.after.status} "
            f"({change.before.tokens:,} -> {change.after.tokens:,} tokens)",
            style="yellow",
        )
        for change in diff.changed
    ]
    if not (diff.left or diff.entered or diff.changed):
        lines.append(Text("no change"))
    return Text("\n").join(lines)


def _line(message: LiveMessage) -> str:
    from sessionstore.events import ReasoningPart, TextPart, ToolCallPart
    from sessionstore.projections import LiveToolResult

    label = "summary" if message.summary else message.role
    first = message.parts[0]
    if isinstance(first, TextPart | ReasoningPart):
        gist = " ".join(first.text.split())
    elif isinstance(first, ToolCallPart):
        gist = f"{first.name}(…)"
    elif isinstance(first, LiveToolResult):
        gist = f"{first.name or first.call_id} output"
    else:
        gist = "file"
    gist = gist if len(gist) <= 60 else gist[:59] + "…"
    return f"{label} {message.id} ({message.tokens:,} tokens): {gist}"


def diff_json(diff: ContextDiff) -> dict[str, Any]:
    return {
        "from": {"seq": diff.before.seq, "tokens": diff.before.tokens},
        "to": {"seq": diff.after.seq, "tokens": diff.after.tokens},
        "left": [m.id for m in diff.left],
        "entered": [m.id for m in diff.entered],
        "changed": [
            {
                "part_id": c.after.id,
                "message_id": c.message_id,
                "from": c.before.status,
                "to": c.after.status,
                "tokens_from": c.before.tokens,
                "tokens_to": c.after.tokens,
            }
            for c in diff.changed
        ],
    }


def chain_json(report: VerifyReport) -> dict[str, Any]:
    return {
        "session_id": report.session_id,
        "ok": report.ok,
        "events_checked": report.events_checked,
        "first_broken_seq": report.first_broken_seq,
        "reason": report.reason,
        "head": None if report.head is None else {"seq": report.head.seq, "hash": report.head.hash},
        "problems": list(report.problems),
        "bad_snapshots": [{"seq": seq, "reason": why} for seq, why in report.bad_snapshots],
    }


def chain_line(report: VerifyReport) -> str:
    if report.ok:
        return f"{report.session_id}: ok ({report.events_checked:,} events)"
    found = []
    if report.first_broken_seq is not None:
        found.append(f"BROKEN at seq {report.first_broken_seq}: {report.reason}")
    found.extend(report.problems)
    found.extend(f"bad snapshot at seq {seq}: {why}" for seq, why in report.bad_snapshots)
    return f"{report.session_id}: " + "; ".join(found)


def stats_json(stats: StoreStats, file_bytes: int | None) -> dict[str, Any]:
    return {
        "sessions": stats.sessions,
        "events": stats.events,
        "payload_bytes": stats.payload_bytes,
        "bodies": stats.bodies,
        "body_bytes": stats.body_bytes,
        "stored_body_bytes": stats.stored_body_bytes,
        "file_bytes": file_bytes,
        "prunes": stats.prunes,
        "compactions": stats.compactions,
        "tokens_freed_by_pruning": stats.tokens_freed_by_pruning,
        "tokens_freed_by_compaction": stats.tokens_freed_by_compaction,
    }


def stats_text(stats: StoreStats, file_bytes: int | None) -> str:
    """Each figure with what it counts: the events' JSON and the bodies (large texts, stored
    once, compressed) are what the store wrote; the file also holds indexes, free pages and
    the write-ahead log, so it is larger."""
    lines = [
        f"sessions     {stats.sessions:,}",
        f"events       {stats.events:,}, {stats.payload_bytes:,} bytes of JSON",
        f"bodies       {stats.bodies:,} large texts the events refer to, "
        f"{stats.body_bytes:,} bytes ({stats.stored_body_bytes:,} as stored, compressed)",
    ]
    if file_bytes is not None:
        lines.append(
            f"file         {file_bytes:,} bytes with its write-ahead log "
            "(the data above, indexes, free pages)"
        )
    lines += [
        f"prunes       {stats.prunes:,}, freeing {stats.tokens_freed_by_pruning:,} tokens",
        f"compactions  {stats.compactions:,}, freeing {stats.tokens_freed_by_compaction:,} tokens",
        "(nothing was deleted: every pruned or compacted token is still in the log)",
    ]
    return "\n".join(lines)


# the artifact trail


def artifacts_view(trail: ArtifactTrail) -> Group:
    """Sections Requests, Files, Commands, Errors, Todos; an empty one says so."""
    out: list[Text | Table] = [
        Text(
            f"{trail.session_id} at seq {trail.seq}: {len(trail.requests):,} requests, "
            f"{len(trail.files):,} files ({len(trail.changed_files):,} changed), "
            f"{len(trail.commands):,} commands, {len(trail.errors):,} errors "
            f"({len(trail.open_errors):,} open)"
        )
    ]
    out.append(_section("Requests"))
    for request in trail.user_messages:
        marks = "".join(
            f" ({mark})"
            for mark, on in (("injected", request.injected), ("reverted", request.reverted))
            if on
        )
        style = "dim" if request.injected else ""
        out.append(Text(f"  [{request.seq}]{marks} {request.text}", style=style))
    if not trail.user_messages:
        out.append(Text("  none"))
    out.append(_section("Files"))
    if trail.files:
        table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 2))
        for name, justify in (
            ("PATH", "left"),
            ("LAST", "left"),
            ("SEQ", "right"),
            ("TIMES", "right"),
        ):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        for file in trail.files:
            table.add_row(Text(file.path), file.last_action, str(file.last_seq), str(file.count))
        out.append(table)
    else:
        out.append(Text("  none"))
    out.append(_section("Commands"))
    for run in trail.commands:
        out.append(
            Text(f"  [{run.seq}] {_outcome(run.ok, run.exit_code)} {_one_line(run.command)}")
        )
    if not trail.commands:
        out.append(Text("  none"))
    out.append(_section("Errors"))
    for error in trail.errors:
        fixed = f"fixed at {error.fixed_by_seq}" if error.fixed_by_seq else "open"
        head = f"  [{error.seq}] {error.tool} {_one_line(error.target)} ({fixed})"
        out.append(Text(head, style="" if error.fixed_by_seq else "red"))
        out.extend(Text(f"      {line}") for line in error.decisive.splitlines())
    if not trail.errors:
        out.append(Text("  none"))
    out.append(_section("Todos" + (f" (set at {trail.todos_seq})" if trail.todos_seq else "")))
    for item in trail.todos:
        out.append(Text(f"  [{item.status or ' '}] {item.text}"))
    if not trail.todos:
        out.append(Text("  none"))
    return Group(*out)


def _section(title: str) -> Text:
    return Text(f"\n{title}", style="bold")


def _outcome(ok: bool | None, code: int | None) -> str:
    if ok is None:
        return "running"
    word = "ok" if ok else "failed"
    return f"{word} (exit {code})" if code is not None else word


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] + (" …" if len(lines) > 1 else "") if lines else ""


def artifacts_json(trail: ArtifactTrail) -> dict[str, Any]:
    """The whole trail, with stable keys."""
    return {
        "session_id": trail.session_id,
        "seq": trail.seq,
        "requests": [
            {
                "seq": r.seq,
                "message_id": r.message_id,
                "text": r.text,
                "injected": r.injected,
                "reverted": r.reverted,
            }
            for r in trail.user_messages
        ],
        "files": [
            {
                "path": f.path,
                "last_action": f.last_action,
                "last_seq": f.last_seq,
                "count": f.count,
                "actions": [{"action": action, "seq": seq} for action, seq in f.actions],
            }
            for f in trail.files
        ],
        "commands": [
            {
                "seq": c.seq,
                "call_id": c.call_id,
                "tool": c.tool,
                "command": c.command,
                "result_seq": c.result_seq,
                "exit_code": c.exit_code,
                "ok": c.ok,
                "decisive": c.decisive,
            }
            for c in trail.commands
        ],
        "errors": [
            {
                "seq": e.seq,
                "call_id": e.call_id,
                "tool": e.tool,
                "target": e.target,
                "kind": e.kind,
                "exit_code": e.exit_code,
                "decisive": e.decisive,
                "fixed_by_seq": e.fixed_by_seq,
            }
            for e in trail.errors
        ],
        "todos": [{"text": t.text, "status": t.status} for t in trail.todos],
        "todos_seq": trail.todos_seq,
        "tool_calls": {name: count for name, count in trail.tool_calls},
    }


def proposal_text(proposal: CompactionProposal) -> str:
    """`compact --dry-run`: what would leave, the tokens before and after, and the summary."""
    lines = [
        f"would compact {len(proposal.leaving):,} messages ({proposal.leaving_tokens:,} tokens) "
        f"of {proposal.session_id} at version {proposal.version}: "
        f"{proposal.tokens_before:,} -> {proposal.tokens_after:,} tokens",
        "leaving: " + _listed(proposal.leaving),
        f"first kept: {proposal.first_kept_message_id}",
        f"summary ({proposal.summary_tokens:,} tokens, {proposal.summarizer}):",
        proposal.summary,
        "(dry run: nothing was written)",
    ]
    return "\n".join(lines) + "\n"


def _listed(ids: Sequence[str], shown: int = 3) -> str:
    """A few ids, then how many more and the last: a list of 600 is not one line of 25 KB
    (`--json` has them all)."""
    if len(ids) <= shown + 1:
        return ", ".join(ids)
    return (
        f"{len(ids):,} messages: {', '.join(ids[:shown])}, ... and {len(ids) - shown - 1:,} more, "
        f"to {ids[-1]} (--json lists them all)"
    )


def proposal_json(proposal: CompactionProposal) -> dict[str, Any]:
    return {
        "session_id": proposal.session_id,
        "version": proposal.version,
        "reason": proposal.reason,
        "leaving": list(proposal.leaving),
        "leaving_tokens": proposal.leaving_tokens,
        "first_kept_message_id": proposal.first_kept_message_id,
        "tokens_before": proposal.tokens_before,
        "tokens_after": proposal.tokens_after,
        "summary": proposal.summary,
        "summary_tokens": proposal.summary_tokens,
        "summarizer": proposal.summarizer,
    }
