"""The event log that a store and its session handles share: checking and encoding events,
appending them after a head, reading and folding sessions, and keeping snapshots, over one
recorder.

`SessionStore` is its public face (arguments checked, sessions created, imported and exported);
`Session` handles use it directly, so neither reaches into the other.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

from pydantic import ValidationError

from sessionstore.events import (
    CompressionChanged,
    CompressionConfig,
    ContentRedacted,
    ContextCompacted,
    InvalidEvent,
    InvalidReplayPoint,
    RecordedEvent,
    SessionStarted,
    brief,
    describe_validation_error,
    one_line,
)
from sessionstore.log._append import (
    Clock,
    Encoded,
    EventLike,
    FoldIn,
    append,
    encode_batch,
    head_seq,
)
from sessionstore.log._bodies import decode_stored
from sessionstore.log._redact import check_redaction
from sessionstore.log._replay import (
    LoadedFold,
    load_fold,
    passes_checkpoint,
    save_snapshot,
    seq_at_time,
)
from sessionstore.projections import ContextFold
from sessionstore.storage import Head, Recorder

log = logging.getLogger("sessionstore")

RAW_FOLDS_KEPT = 8
"""How many sessions' folds the log keeps for raw appends (`EventLog._fold_from_log`)."""

MAX_SEQ = 2**31 - 1
"""The largest seq a session can reach: `events.seq` is a 32-bit INTEGER on PostgreSQL."""


def check_stored_configs(batch: Sequence[Encoded]) -> None:
    """Refuse a `SessionStarted` or `CompressionChanged` whose settings `CompressionConfig`
    refuses: events are never rewritten, so once stored such a config would stay in force.
    (A session that holds one anyway, from an older version, runs on the defaults.)"""
    for item in batch:
        payload = item.event.payload
        if isinstance(payload, SessionStarted | CompressionChanged):
            try:
                CompressionConfig.model_validate(payload.compression)
            except ValidationError as exc:
                problems = describe_validation_error(exc, prefix="compression")
                raise InvalidEvent(f"{item.type}: {problems}") from None


class EventLog:
    """Sessions' events on one recorder, with the store's limits and clock."""

    def __init__(
        self,
        recorder: Recorder,
        *,
        max_payload_bytes: int,
        snapshot_every: int,
        clock: Clock,
    ) -> None:
        self.recorder = recorder
        self.max_payload_bytes = max_payload_bytes
        self.snapshot_every = snapshot_every
        self._clock = clock
        self._raw_folds: OrderedDict[str, ContextFold] = OrderedDict()
        """The folds of the sessions raw appends wrote last, at the heads they wrote: the
        next raw append to one folds only its own events (see `_fold_from_log`)."""
        self._raw_folds_lock = threading.Lock()

    def now(self) -> datetime:
        return self._clock()

    # writing

    def encode(self, events: Sequence[EventLike]) -> list[Encoded]:
        """Check and encode a batch before any I/O (`InvalidEvent`, `PayloadTooLarge`)."""
        batch = encode_batch(events, self.max_payload_bytes)
        check_stored_configs(batch)
        return batch

    def append(
        self,
        session_id: str,
        events: Sequence[EventLike],
        expected_version: int | None,
        known_head: Head | None = None,
        fold_in: FoldIn | None = None,
    ) -> list[RecordedEvent]:
        """Append `events` in one transaction after `expected_version` (`None`: whatever the
        head is); `known_head` saves reading the head when the caller's fold knows it, and
        `fold_in` (that fold) counts the live tokens the `sessions` row keeps."""
        batch = self.encode(events)
        return self.append_encoded(session_id, batch, expected_version, known_head, fold_in)

    def append_encoded(
        self,
        session_id: str,
        batch: list[Encoded],
        expected_version: int | None,
        known_head: Head | None = None,
        fold_in: FoldIn | None = None,
    ) -> list[RecordedEvent]:
        redactions = [
            e.event.payload for e in batch if isinstance(e.event.payload, ContentRedacted)
        ]
        for redaction in redactions:
            check_redaction(self.recorder, session_id, redaction)
        folded: list[ContextFold] = []
        if fold_in is None:
            fold_in = functools.partial(self._fold_from_log, folded=folded)
        recorded = append(
            self.recorder, session_id, batch, expected_version, self._clock, known_head, fold_in
        )
        if folded and folded[0].hash == recorded[-1].hash:  # the fold is at the stored head
            if passes_checkpoint(folded[0], recorded[0].seq):
                self.save_snapshot(folded[0])
            with self._raw_folds_lock:
                self._raw_folds[session_id] = folded[0]
                while len(self._raw_folds) > RAW_FOLDS_KEPT:
                    self._raw_folds.popitem(last=False)
        if redactions:
            self._forget_snapshots(session_id)
            self.scrub(f"redacted bodies of {session_id}")
        return recorded

    def _fold_from_log(
        self, events: Sequence[RecordedEvent], folded: list[ContextFold]
    ) -> int | None:
        """The live tokens after `events` for a writer that holds no fold of the session (a
        raw append): its fold at the head they follow, with them folded in (put in `folded`,
        kept once they are stored). That fold is the one the last raw append to the session
        left, when it is at that head (appends in a loop fold only their own events), else
        it is loaded from the newest snapshot; a new session's starts from nothing. `None` (not
        counted: a listing folds it) for a new fork, whose fold is its whole ancestry's, and
        when that fold cannot be made."""
        try:
            first = events[0]
            with self._raw_folds_lock:
                kept = self._raw_folds.pop(first.session_id, None)
            if kept is not None and kept.seq == first.seq - 1 and kept.hash == first.prev_hash:
                fold = kept
            elif first.seq > 1:
                fold = load_fold(
                    self.recorder, first.session_id, first.seq - 1, checkpoint=self.save_snapshot
                ).fold
            elif isinstance(started := first.payload, SessionStarted) and (
                started.parent_session_id is not None
            ):
                # a fork's fold is its whole ancestry's: folding it on every raw append made a
                # chain of forks quadratic (10,000 levels: minutes). Left for a listing to fold.
                return None
            else:
                fold = ContextFold()
            for event in events:
                fold.apply(event)
        except Exception as exc:
            log.info("could not count the live tokens of %s: %s", events[0].session_id, exc)
            return None
        folded.append(fold)
        return fold.tokens

    def recount(self, session_id: str, head: int | None = None) -> None:
        """Count the session's live tokens at its head (`head`, when the caller read it) and
        keep them on its row, for a writer that wrote its events itself (an import, a schema
        upgrade); best effort, as `_fold_from_log`. A head that moved meanwhile was counted
        by the write that moved it."""
        try:
            head = self.version(session_id) if head is None else head
            tokens = load_fold(
                self.recorder, session_id, head, checkpoint=self.save_snapshot
            ).fold.tokens
            self.recorder.count_live_tokens(session_id, head, tokens)
        except Exception as exc:
            log.info("could not count the live tokens of %s: %s", session_id, one_line(exc))

    def recount_uncounted(self) -> int:
        """`recount` every session whose live tokens are not counted (a database upgraded
        from before the counters): a fold of each, once. How many were counted."""
        uncounted = self.recorder.uncounted_sessions()
        for session_id, head in uncounted:
            self.recount(session_id, head)
        return len(uncounted)

    def scrub(self, deleted: str) -> None:
        """Make the bodies just `deleted` (what they were, for the log) unreadable in the
        database's files too. Idempotent: a redaction or purge retried after a crash between
        its commit and its scrub finds nothing left to delete, and scrubs again here."""
        if not self.recorder.scrub():
            log.warning(
                "%s are deleted, but a reader still holds the database's old pages: their bytes "
                "leave its files at the next checkpoint",
                deleted,
            )

    def _forget_snapshots(self, session_id: str) -> None:
        """Snapshots of the session and of its forks were folded from content a redaction
        just deleted; a replay now reads the placeholder, so they go (best effort: one left
        behind is ignored on resume, and `verify` names it). The forks' live tokens were
        counted on that content too: they are marked not counted, for the next listing to
        count again. Only the session's own forks are read (by `ix_sessions_parent`), level
        by level: the work follows the lineage, not the store."""
        try:
            lineage = [session_id]
            level = [session_id]
            while level:
                level = [fork for fork in self.recorder.forks_of(level) if fork not in lineage]
                lineage.extend(level)
            with self._raw_folds_lock:  # folded from what the redaction deleted
                for each in lineage:
                    self._raw_folds.pop(each, None)
            self.recorder.forget_snapshots(lineage)
            if len(lineage) > 1:
                self.recorder.forget_live_tokens(lineage[1:])
        except Exception as exc:
            log.warning("could not delete the snapshots of %s: %s", session_id, one_line(exc))

    # reading

    def version(self, session_id: str) -> int:
        """The session's head seq; `UnknownSession` when there is none."""
        return head_seq(self.recorder, session_id)

    def read(self, session_id: str, from_seq: int, to_seq: int) -> list[RecordedEvent]:
        """The session's events with `from_seq <= seq <= to_seq`, in order, upcast; the
        bounds are clamped to the seqs a session can have."""
        low, high = max(from_seq, 1), min(to_seq, MAX_SEQ)
        stored = list(self.recorder.events(session_id, low, high)) if low <= high else []
        if not stored:
            head_seq(self.recorder, session_id)  # UnknownSession
        return decode_stored(self.recorder, stored)

    def load(self, session_id: str) -> LoadedFold:
        """The session's fold at its head, from the newest usable snapshot; one is saved when
        due, so the next resume folds less."""
        loaded = load_fold(
            self.recorder, session_id, self.version(session_id), checkpoint=self.save_snapshot
        )
        snapshot_seq = loaded.snapshot_seq or 0
        if self.snapshot_due(loaded.fold, snapshot_seq, compacted=False):
            self.save_snapshot(loaded.fold)
            snapshot_seq = loaded.fold.seq
        return LoadedFold(loaded.fold, snapshot_seq, loaded.folded)

    def fold_at(self, session_id: str, at: int | datetime) -> ContextFold:
        """A fresh fold of the session right after event `at` (a seq or a time)."""
        seq = self.seq_at(session_id, at)
        return load_fold(self.recorder, session_id, seq, checkpoint=self.save_snapshot).fold

    def seq_at(self, session_id: str, at: int | datetime) -> int:
        """The seq a replay point names: `at` itself, or the last event at or before a time;
        `InvalidReplayPoint` for anything else."""
        head = self.version(session_id)
        if isinstance(at, datetime):
            return seq_at_time(self.recorder, session_id, at)
        if isinstance(at, int) and not isinstance(at, bool) and 1 <= at <= head:
            return at
        raise InvalidReplayPoint(
            f"at= must be a seq from 1 to {head} or a datetime, got {brief(at)}"
        )

    def fold_from_scratch(self, session_id: str, at: int) -> ContextFold:
        """The fold of every event up to `at`, ignoring snapshots (for checks and benchmarks)."""
        return load_fold(self.recorder, session_id, at, use_snapshots=False).fold

    # snapshots

    def snapshot_due(self, fold: ContextFold, snapshot_seq: int, *, compacted: bool) -> bool:
        """At each compaction; otherwise once the events since the last snapshot reach both
        `snapshot_every` and half the live message count. A snapshot costs O(live messages),
        so spacing them by at least that much keeps its cost per append constant."""
        since = fold.seq - snapshot_seq
        return compacted or since >= max(self.snapshot_every, fold.live_count // 2)

    def after_append(
        self, fold: ContextFold, snapshot_seq: int, recorded: list[RecordedEvent]
    ) -> int:
        """Save a snapshot if one is due; return the seq of the newest one."""
        compacted = any(isinstance(e.payload, ContextCompacted) for e in recorded)
        if not self.snapshot_due(fold, snapshot_seq, compacted=compacted):
            return snapshot_seq
        self.save_snapshot(fold)
        return fold.seq

    def save_snapshot(self, fold: ContextFold) -> bool:
        """Best effort: a snapshot is a cache, and failing to write one, in any way, must not
        make the append that triggered it look failed (a caller would retry it). Whether it
        was saved."""
        try:
            save_snapshot(self.recorder, fold, self._clock())
        except Exception as exc:
            log.warning(
                "could not save a snapshot of %s at %s: %s",
                fold.session_id,
                fold.seq,
                one_line(exc),
            )
            return False
        return True
