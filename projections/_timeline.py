"""The audit timeline: one row per event, saying what it did to the live context."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sessionstore.events import (
    CompressionChanged,
    ContentRedacted,
    ContextCompacted,
    FilePart,
    Message,
    MessageAppended,
    MessagePinned,
    MessagePopped,
    MessagesRestored,
    MessagesReverted,
    MessageUnpinned,
    MetadataChanged,
    NativePart,
    OutputsPruned,
    OutputsRestored,
    PartsPreviewed,
    Payload,
    ReasoningPart,
    RecordAppended,
    RecordedEvent,
    SessionCleared,
    SessionStarted,
    StateChanged,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.projections._fold import Change, ContextFold

SUMMARY_WIDTH = 80


@dataclass(frozen=True, slots=True)
class TimelineRow:
    """One event of a session, for audits.

    `tokens` is the live context's size right after the event; `added` and `removed` are the
    message ids that entered or left the live context; `pruned` and `restored` the tool-result
    part ids whose outputs left or came back; `previewed` the tool results and calls cut to a
    preview.
    """

    seq: int
    time: datetime
    type: str
    summary: str
    tokens: int
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    pruned: tuple[str, ...] = ()
    restored: tuple[str, ...] = ()
    previewed: tuple[str, ...] = ()


def timeline(
    events: Iterable[RecordedEvent], start: ContextFold | None = None
) -> list[TimelineRow]:
    """Rows for `events`, folded on top of `start` (a fork's parent history, say)."""
    fold = start if start is not None else ContextFold()
    rows = []
    for event in events:
        change = fold.apply(event)
        rows.append(
            TimelineRow(
                seq=event.seq,
                time=event.recorded_at,
                type=event.type,
                summary=describe(event.payload, change),
                tokens=fold.tokens,
                added=change.added,
                removed=change.removed,
                pruned=change.pruned,
                restored=change.restored,
                previewed=change.previewed,
            )
        )
    return rows


def describe(payload: Payload, change: Change) -> str:
    """A one-line, human summary of an event: what it did, shortened to `SUMMARY_WIDTH`, then
    why (a decision's reason or account), whole: an audit reads the why, and a table that
    shows the row may shorten it, but the row never does."""
    if isinstance(payload, SessionStarted):
        text = f"started {payload.title!r} on {payload.model or 'an unnamed model'}"
        if payload.context_window:
            text += f", window {payload.context_window:,}"
        if payload.parent_session_id is not None:
            text += f", forked from {payload.parent_session_id} at {payload.parent_seq}"
        return _clip(text)
    if isinstance(payload, MessageAppended):
        return _clip(_describe_message(payload.message))
    if isinstance(payload, OutputsPruned):
        return _clip(
            f"pruned {len(change.pruned)} tool output(s), freed {payload.tokens_freed:,} tokens"
        ) + (f" ({_one_line(payload.reason)})" if payload.reason else "")
    if isinstance(payload, OutputsRestored):
        return f"restored {len(change.restored)} tool output(s)"
    if isinstance(payload, PartsPreviewed):
        by = f"{payload.strategy}: " if payload.strategy else ""
        return _clip(
            f"{by}cut {len(change.previewed)} tool field(s) to previews, freed "
            f"{payload.tokens_freed:,} tokens"
        ) + _why(payload.why)
    if isinstance(payload, ContextCompacted):
        into = "a marker" if payload.summarizer == "marker" else "a summary"
        by = f"{payload.strategy}: " if payload.strategy else ""
        return _clip(
            f"{by}compacted {len(change.removed)} message(s) into {into}: "
            f"{payload.tokens_before:,} -> {payload.tokens_after:,} tokens "
            f"({payload.reason}, {payload.summarizer})"
        ) + _why(payload.why)
    if isinstance(payload, MessagesReverted):
        if payload.strategy:
            return _clip(
                f"{payload.strategy}: took {len(change.removed)} message(s) out of the context"
            ) + _why(payload.why)
        return f"reverted {len(change.removed)} message(s) after {payload.after_message_id}"
    if isinstance(payload, MetadataChanged):
        shown = [f"app {payload.app}" if payload.app else "no app"]
        shown.append(f"user {payload.user}" if payload.user else "no user")
        shown.append("tags " + ", ".join(payload.tags) if payload.tags else "no tags")
        return _clip("metadata: " + "; ".join(shown))
    if isinstance(payload, MessagesRestored):
        return _clip(
            f"restored {len(change.added)} message(s) taken out at seq {payload.undone_seq}"
        )
    if isinstance(payload, MessagePopped):
        return f"popped {payload.message_id}" if change.removed else "popped nothing live"
    if isinstance(payload, SessionCleared):
        text = f"cleared the live context: {len(change.removed)} message(s) left it"
        return _clip(text) + (f" ({_one_line(payload.reason)})" if payload.reason else "")
    if isinstance(payload, StateChanged):
        keys = [*payload.values, *(f"-{key}" for key in payload.removed)]
        return _clip("state: " + (", ".join(keys) if keys else "no change"))
    if isinstance(payload, RecordAppended):
        return f"kept a {payload.record.kind} record ({len(payload.record.parts)} part(s))"
    if isinstance(payload, MessagePinned):
        return f"pinned {payload.message_id}"
    if isinstance(payload, MessageUnpinned):
        return f"unpinned {payload.message_id}"
    if isinstance(payload, CompressionChanged):
        # sorted: PostgreSQL hands JSONB objects back in its own key order
        settings = dict(sorted(payload.compression.items()))
        return _clip("compression settings: " + _one_line(str(settings)))
    if isinstance(payload, ContentRedacted):
        return _clip(f"redacted {len(payload.part_ids):,} part(s)") + (
            f" ({_one_line(payload.reason)})"
        )
    return str(getattr(payload, "type", type(payload).__name__))  # pragma: no cover


def _describe_message(message: Message) -> str:
    pieces = []
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(_one_line(part.text))
        elif isinstance(part, ReasoningPart):
            pieces.append("(reasoning)")
        elif isinstance(part, ToolCallPart):
            pieces.append(f"{part.name}({_one_line(part.arguments)})")
        elif isinstance(part, ToolResultPart):
            status = "error" if part.is_error else f"{len(part.output.encode()):,} bytes"
            cut = ", truncated" if part.truncation is not None else ""
            pieces.append(f"{part.name or part.call_id} -> {status}{cut}")
        elif isinstance(part, FilePart):
            pieces.append(f"[{part.filename or part.media_type}]")
        elif isinstance(part, NativePart):
            pieces.append(_one_line(part.text) or f"({part.native.api} block)")
    return f"{message.role}: " + "; ".join(pieces)


def _why(why: str) -> str:
    """A strategy's account of its decision, whole: the row says what it did in a line, and
    why in full (at most 500 characters, as the event allows), which is what an audit reads."""
    return f"; {_one_line(why)}" if why else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _clip(text: str) -> str:
    return text if len(text) <= SUMMARY_WIDTH else text[: SUMMARY_WIDTH - 1] + "…"
