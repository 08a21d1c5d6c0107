"""Undoing a decision that took messages out of the live context: a pure plan, no I/O.

A strategy's drop, a compaction or an undo (`ContextCompacted`, `MessagesReverted`) leaves its
messages in the log; `plan_restore` turns one of them back into a `MessagesRestored` event
that carries the originals and where each goes, so the fold puts them back where they were
(before the message that followed each, live now or restored with it) without reading the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sessionstore.events import (
    ContextCompacted,
    InvalidArgument,
    Message,
    MessageAppended,
    MessagesRestored,
    MessagesReverted,
    Payload,
    RecordedEvent,
    brief,
)


def taken_out(payload: Payload, seq: int) -> tuple[tuple[str, ...], str | None]:
    """(ids the event at `seq` took out, its marker or summary id), or `InvalidArgument` when
    it took nothing out."""
    if isinstance(payload, ContextCompacted):
        return payload.replaced_message_ids, payload.summary.id
    if isinstance(payload, MessagesReverted):
        return payload.reverted_message_ids, None
    raise InvalidArgument(f"event {seq} is a {type(payload).__name__}: it took no messages out")


def plan_restore(
    seq: int,
    gone: Sequence[str],
    marker: str | None,
    *,
    live: Sequence[str],
    order: Sequence[str],
    history: Iterable[RecordedEvent],
) -> MessagesRestored | None:
    """The event that brings back the messages of `gone` not live now. `live` is the context's
    ids now, `order` its ids right before the event at `seq`, `history` the session's events up
    to it (where the originals are). `None` when all are live already."""
    now = set(live)
    wanted = [i for i in gone if i not in now]
    if not wanted:
        return None
    originals: dict[str, Message] = {}
    summaries: set[str] = set()
    for event in history:
        if isinstance(event.payload, MessageAppended):
            originals[event.payload.message.id] = event.payload.message
        elif isinstance(event.payload, ContextCompacted):
            originals[event.payload.summary.id] = event.payload.summary
            summaries.add(event.payload.summary.id)
    missing = [i for i in wanted if i not in originals]
    if missing:
        raise InvalidArgument(
            f"message {brief(missing[0])} is not in this session's own log (a fork's parent "
            "holds it): restore it there"
        )
    keep = now | set(wanted)
    older = set(order)
    newer = next((i for i in live if i not in older), None)  # the first appended since
    before: dict[str, str] = {}
    for n, message_id in enumerate(order):
        if message_id in wanted:
            anchor = next((i for i in order[n + 1 :] if i in keep), newer)
            if anchor is not None:
                before[message_id] = anchor
    ordered = [i for i in reversed(order) if i in wanted]  # each anchor goes in first
    return MessagesRestored(
        undone_seq=seq,
        messages=tuple(originals[i] for i in ordered),
        before=before,
        summary_ids=tuple(i for i in ordered if i in summaries),
        marker_message_id=marker if marker in now else None,
    )
