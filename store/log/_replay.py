"""Reading a session's context fold from the database, with snapshots.

A snapshot is the context fold's state at one seq (`ContextFold.to_snapshot`), stored with its
projection name and version. It is a cache: loading takes the newest snapshot at or before the
point asked for, checks it (its projection version, the hash of the event it stands at, the
messages it names), and folds the events after it. A snapshot that fails any check is ignored
and the fold starts from the first event, so deleting snapshots never changes a result.

A fork's history is its parent's up to the fork point, then its own: with no snapshot of its
own, a fork's fold starts from its parent's fold at `parent_seq` (itself loaded this way).

Checkpoints bound a replay at any length: a fold that passes a seq that is a multiple of
`CHECKPOINT_EVERY` saves a snapshot there (through the `checkpoint` its caller gives: the log
saves it, best effort), so once one read has passed a point, a replay to any seq near it
folds fewer than `CHECKPOINT_EVERY` events after the checked snapshot at or before it. A
checkpoint is a snapshot like any other (same table, key and checks); one that fails a check
is ignored and an older one is tried, down to the first event.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Set
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial

from sessionstore.events import (
    ContextCompacted,
    DatabaseUnavailable,
    InvalidEvent,
    InvalidReplayPoint,
    MessageAppended,
    RecordedEvent,
    SessionStarted,
    StoredAppend,
    collection_paused,
    one_line,
)
from sessionstore.log._append import head_seq
from sessionstore.log._bodies import bodies_of, decode_for_fold, decode_stored
from sessionstore.projections import (
    PROJECTION,
    PROJECTION_VERSION,
    ContextFold,
    EventRef,
    PlainMessage,
    parse_snapshot,
    plain_message,
)
from sessionstore.storage import Recorder, StoredEvent

log = logging.getLogger("sessionstore")

_DECODE_PAGE = 500
"""Events decoded together: their bodies are read in one query."""

CHECKPOINT_EVERY = 1_000
"""A fold saves a checkpoint at each seq that is a multiple of this, so a replay folds fewer
events than this after the checkpoint it starts from (see `checkpoint_due` for a context so
long that writing one costs more)."""

_SNAPSHOTS_TRIED = 3
"""How many stored snapshots a load checks, newest first, before it folds from the first
event: one bad snapshot costs one more check, not a fold of the whole history."""

SaveCheckpoint = Callable[[ContextFold], bool]
"""Saves a fold's state as a snapshot at its seq, best effort (`EventLog.save_snapshot`):
whether it could. A checkpoint of the fold, not to be confused with `verify`'s `Checkpoint`
of session heads."""


@dataclass(frozen=True, slots=True)
class LoadedFold:
    fold: ContextFold
    snapshot_seq: int | None
    """The seq of the snapshot the fold started from, or `None` when it folded everything."""
    folded: int = 0
    """How many events this load folded (after the snapshot it started from, if any)."""


def seq_at_time(recorder: Recorder, session_id: str, moment: datetime) -> int:
    """The last seq recorded at or before `moment`, any aware datetime: one whose UTC time
    falls outside years 1 to 9999 (`datetime.min` east of Greenwich, say) is before or after
    every event."""
    offset = moment.utcoffset()
    if offset is None:
        raise InvalidReplayPoint("at= needs a timezone-aware datetime (the store keeps UTC)")
    try:
        utc = moment.astimezone(UTC)  # SQLite compares the stored UTC text, offsets ignored
    except OverflowError:
        if offset > timedelta(0):
            head_seq(recorder, session_id)  # UnknownSession first
            raise InvalidReplayPoint(
                f"session {session_id!r} had not started at {moment.isoformat()}"
            ) from None
        return head_seq(recorder, session_id)
    moment = utc
    seq = recorder.seq_at(session_id, moment)
    if seq is None:
        head_seq(recorder, session_id)  # UnknownSession first
        raise InvalidReplayPoint(f"session {session_id!r} had not started at {moment.isoformat()}")
    return int(seq)


@collection_paused()
def load_fold(
    recorder: Recorder,
    session_id: str,
    to_seq: int,
    *,
    use_snapshots: bool = True,
    checkpoint: SaveCheckpoint | None = None,
) -> LoadedFold:
    """The session's context fold right after event `to_seq` (which must exist); with
    `checkpoint`, the folds it passes on the way are saved where one is due.

    A fork's history is its parent's up to the fork point: the walk goes up the chain of
    parents (iteratively, so no depth is too deep) until it meets a usable snapshot or a
    session that is no fork, then folds back down."""
    below: list[tuple[str, int, RecordedEvent]] = []  # (session, up to seq, its first event)
    seen: set[str] = set()
    session, upto = session_id, to_seq
    fold: ContextFold | None = None
    snapshot_seq = None
    folded = 0
    while fold is None:
        if session in seen:
            raise InvalidEvent(f"the fork chain of {session_id!r} loops back to {session!r}")
        seen.add(session)
        if use_snapshots:
            loaded = _from_newest_snapshot(recorder, session, upto, checkpoint)
            if loaded is not None:
                fold = loaded.fold
                snapshot_seq = loaded.snapshot_seq if session == session_id else None
                folded = loaded.folded
                break
        first = _first_event(recorder, session, upto)
        below.append((session, upto, first))
        parent = _parent(first)
        if parent is None:
            fold = ContextFold(bodies=partial(bodies_of, recorder))
        else:
            session, upto = parent
    for session, upto, first in reversed(below):
        fold.apply(first)
        folded += 1 + fold_forward(recorder, fold, session, 2, upto, checkpoint)
    return LoadedFold(fold, snapshot_seq, folded)


def fold_forward(
    recorder: Recorder,
    fold: ContextFold,
    session_id: str,
    from_seq: int,
    to_seq: int,
    checkpoint: SaveCheckpoint | None,
) -> int:
    """Fold the session's events `from_seq..to_seq` into `fold`, saving a checkpoint at each
    seq where one is due (until one cannot be saved: a database this reader cannot write is
    not asked again, nor warned about, on every thousandth event); how many were folded."""
    last = from_seq - 1
    folded = 0
    for event in _fold_inputs(recorder, session_id, from_seq, to_seq):
        fold.apply(event)
        folded += 1
        if checkpoint is not None and checkpoint_due(fold, last):
            if not checkpoint(fold):
                checkpoint = None
            last = fold.seq
    return folded


def checkpoint_due(fold: ContextFold, previous: int) -> bool:
    """Whether a fold that stands at a multiple of `CHECKPOINT_EVERY` saves a checkpoint there,
    `previous` being the seq of the last one on its way (or where it started). Writing one
    costs O(live messages); so in a context longer than `2 * CHECKPOINT_EVERY` messages they
    are spaced by at least half its length, which keeps their cost per event constant (a
    replay there builds a context that long anyway, so folding that many events is within a
    constant of its own cost)."""
    seq = fold.seq
    return seq % CHECKPOINT_EVERY == 0 and seq - previous >= fold.live_count // 2


def passes_checkpoint(fold: ContextFold, first_seq: int) -> bool:
    """Whether appends of the seqs `first_seq..fold.seq`, which leave `fold` at their head,
    passed a multiple of `CHECKPOINT_EVERY`: their writer saves its fold there, so a replay
    need not wait for a read to save one (a context longer than twice that many messages is
    left to the reads, which space checkpoints by its length: see `checkpoint_due`)."""
    crossed = (first_seq - 1) // CHECKPOINT_EVERY < fold.seq // CHECKPOINT_EVERY
    return crossed and fold.live_count <= 2 * CHECKPOINT_EVERY


def _first_event(recorder: Recorder, session_id: str, to_seq: int) -> RecordedEvent:
    first = next(events_of(recorder, session_id, 1, min(to_seq, 1)), None)
    if first is None:
        raise InvalidReplayPoint(f"session {session_id!r} has no event {to_seq}")
    return first


def _parent(first: RecordedEvent) -> tuple[str, int] | None:
    """(parent session, fork point) when the session starting with `first` is a fork."""
    started = first.payload
    if isinstance(started, SessionStarted) and started.parent_session_id is not None:
        assert started.parent_seq is not None  # SessionStarted's own validation
        return started.parent_session_id, started.parent_seq
    return None


def events_of(
    recorder: Recorder, session_id: str, from_seq: int, to_seq: int
) -> Iterator[RecordedEvent]:
    """The session's events from `from_seq` to `to_seq`, in order, decoded and upcast."""
    for page in _pages(recorder.events(session_id, from_seq, to_seq)):
        yield from decode_stored(recorder, page)


def _fold_inputs(
    recorder: Recorder, session_id: str, from_seq: int, to_seq: int
) -> Iterator[RecordedEvent | StoredAppend]:
    """`events_of` as a fold takes them: appended messages as stored JSON (`decode_for_fold`)."""
    for page in _pages(recorder.events(session_id, from_seq, to_seq)):
        yield from decode_for_fold(recorder, page)


def _pages(stored: Iterable[StoredEvent]) -> Iterator[list[StoredEvent]]:
    """Events in pages of `_DECODE_PAGE`, whose bodies are read together."""
    page: list[StoredEvent] = []
    for event in stored:
        page.append(event)
        if len(page) == _DECODE_PAGE:
            yield page
            page = []
    yield page


def _from_newest_snapshot(
    recorder: Recorder, session_id: str, to_seq: int, checkpoint: SaveCheckpoint | None = None
) -> LoadedFold | None:
    """The newest usable snapshot folded forward to `to_seq`, or `None` when there is none:
    one that fails a check is logged and ignored, and the one before it is tried (up to
    `_SNAPSHOTS_TRIED`): a bad cache costs a longer fold, never a wrong context or a crash."""
    below = to_seq
    for _ in range(_SNAPSHOTS_TRIED):
        found = recorder.newest_snapshot(session_id, PROJECTION, PROJECTION_VERSION, below)
        if found is None:
            return None
        seq, text = found
        try:
            fold = _checked_snapshot(recorder, session_id, seq, text)
            folded = fold_forward(recorder, fold, session_id, seq + 1, to_seq, checkpoint)
        except DatabaseUnavailable:
            raise
        except Exception as exc:
            log.warning("ignoring the snapshot of %s at seq %s: %s", session_id, seq, one_line(exc))
            below = seq - 1
            if below < 1:
                return None
            continue
        return LoadedFold(fold, seq, folded)
    return None


def _checked_snapshot(recorder: Recorder, session_id: str, seq: int, text: str) -> ContextFold:
    """The fold a stored snapshot holds, after every check the log allows without folding it
    again: its schema and digest, the event it stands at, its header against the session's
    `SessionStarted`, and every message it references (in this session before its seq, or in
    an ancestor before the fork point, with the id and kind it claims)."""
    state = parse_snapshot(text)
    if (state.session_id, state.seq) != (session_id, seq):
        raise ValueError(f"it is the state of {state.session_id!r} at seq {state.seq}")
    own = next(events_of(recorder, session_id, 1, 1), None)
    at_seq = next(events_of(recorder, session_id, seq, seq), None)
    if own is None or at_seq is None or at_seq.hash != state.hash:
        raise ValueError("it does not stand at the event it names")
    started = own.payload
    assert isinstance(started, SessionStarted)
    as_started = {
        "compression": started.compression,
        "app": started.app,
        "user": started.user,
        "tags": started.tags,
    }  # what later events change in the header
    if state.header.model_copy(update=as_started) != started:
        raise ValueError("its header is not the session's SessionStarted")
    limits = _reference_limits(recorder, session_id, seq, started, set(state.sessions))
    refs = ContextFold.snapshot_refs(state)
    for (session, ref_seq), _ in refs:
        if ref_seq > limits.get(session, 0):
            raise ValueError(f"it references {session!r} seq {ref_seq}, outside its history")
    found = _messages(recorder, [ref for ref, _ in refs], state.pruned.keys())
    for ref, summary in refs:
        if ref not in found or found[ref][1] != summary:
            raise ValueError(f"no {'summary' if summary else 'message'} at {ref}")
    fold = ContextFold.from_snapshot(state, {ref: message for ref, (message, _) in found.items()})
    fold.bodies = partial(bodies_of, recorder)  # the originals left unread (`decode_for_fold`)
    return fold


def _reference_limits(
    recorder: Recorder, session_id: str, seq: int, started: SessionStarted, wanted: set[str]
) -> dict[str, int]:
    """The last seq a snapshot at `seq` may reference in each session of its history: its own
    up to `seq`, each ancestor's up to the fork point the chain names. The walk up stops once
    every session in `wanted` is placed."""
    limits = {session_id: seq}
    while not wanted <= limits.keys() and started.parent_session_id is not None:
        parent, fork_point = started.parent_session_id, started.parent_seq or 0
        if parent in limits:
            break  # a loop in the chain: nothing further up is history
        limits[parent] = fork_point
        first = next(events_of(recorder, parent, 1, 1), None)
        if first is None or not isinstance(first.payload, SessionStarted):
            break
        started = first.payload
    return limits


def _messages(
    recorder: Recorder, refs: list[EventRef], unshown: Set[str]
) -> dict[EventRef, tuple[PlainMessage, bool]]:
    """The messages stored at `refs` (as stored JSON), each with whether it is a compaction
    summary; the bodies of the parts in `unshown` (pruned, not shown) are left unread."""
    by_session: dict[str, list[int]] = {}
    for session_id, seq in refs:
        by_session.setdefault(session_id, []).append(seq)
    found: dict[EventRef, tuple[PlainMessage, bool]] = {}
    for session_id, seqs in by_session.items():
        wanted = set(seqs)
        kept = [e for e in _stored_at(recorder, session_id, sorted(wanted)) if e.seq in wanted]
        # a range read reads those between too
        for event in decode_for_fold(recorder, kept, unshown):
            if isinstance(event, StoredAppend):
                found[(session_id, event.seq)] = (event.message, False)
                continue
            payload = event.payload
            if isinstance(payload, MessageAppended):
                found[(session_id, event.seq)] = (plain_message(payload.message), False)
            elif isinstance(payload, ContextCompacted):
                found[(session_id, event.seq)] = (plain_message(payload.summary), True)
    return found


def _stored_at(recorder: Recorder, session_id: str, seqs: list[int]) -> Iterator[StoredEvent]:
    """Where most events of a stretch are wanted (a context nothing was compacted out of), one
    range read is faster than lookups by key; sparse ones are looked up by seq."""
    if len(seqs) * 2 >= seqs[-1] - seqs[0] + 1:
        return recorder.events(session_id, seqs[0], seqs[-1])
    return recorder.events_at(session_id, seqs)


def save_snapshot(recorder: Recorder, fold: ContextFold, now: datetime) -> None:
    """Store the fold's state at its seq; a snapshot already there is kept as it is."""
    state = json.dumps(fold.to_snapshot(), ensure_ascii=False)
    recorder.save_snapshot(fold.session_id, PROJECTION, PROJECTION_VERSION, fold.seq, state, now)
