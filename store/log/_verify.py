"""What `verify` proves about a session, beyond its hash chain.

The chain (`events.verify_chain`) proves that the events of a session were not altered
relative to one another. Around it, the store keeps things a reader trusts too, and each is
checked against the events here:

- the `sessions` row: head seq and hash, title, parent and fork point, context window, as
  `SessionStarted` recorded them (a rewritten head could hide a deleted tail), and the
  counters a listing shows: its compactions as its events count them, its live tokens (when
  counted) as a fresh fold of its events finds them;
- a fork's link: the parent's event at the fork point still has the hash the fork names;
- every body its events reference: stored, with bytes that are exactly one body with its
  digest (the chain covers the digest; a zlib row holds its stream and nothing after it), or
  deleted by a redaction of the session; a body stored again after its redaction is checked
  like any other;
- its search index rows: those its events give, read from the bodies it holds (none for a
  text a redaction deleted), and no other;
- every stored snapshot: the session is folded again from its first event, and each snapshot
  must equal the fold at its seq (a snapshot is a cache that resume would otherwise serve);
- a checkpoint taken earlier (`Checkpoint`, the way a transparency log's checkpoint works):
  each session it names still holds, at the seq it names, the event with the hash it names. The
  chain makes that event's hash cover every event before it, so a history truncated and chained
  again after the checkpoint is caught.
"""

from __future__ import annotations

import copy
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sessionstore.events import (
    REFERENCE_HINT,
    SEARCHED_EVENTS,
    ChainLink,
    InvalidCheckpoint,
    RecordedEvent,
    SessionStarted,
    body_digests,
    collection_paused,
    decode_payload,
    digest_of,
    join_bodies,
    verify_chain,
)
from sessionstore.log._bodies import bodies_of, decode_stored, redactions, unpack, unpack_exact
from sessionstore.log._replay import load_fold
from sessionstore.log._search import index_problems
from sessionstore.projections import PROJECTION, PROJECTION_VERSION, ContextFold, parse_snapshot
from sessionstore.storage import (
    COMPACTION,
    BodyRow,
    Recorder,
    SessionInfo,
    StoredEvent,
    chain_link,
)

CHECKPOINT_FORMAT = "sessionstore-checkpoint"
_BODIES_PER_READ = 200
_FOLD_PAGE = 500
"""Rows decoded and folded together while verifying: their bodies are read in one query."""
MAX_SEQ = 2**31 - 1
"""The largest seq a session can reach: `events.seq` is a 32-bit INTEGER on PostgreSQL."""


@dataclass(frozen=True, slots=True)
class SessionHead:
    """A session's last event: its seq and hash."""

    session_id: str
    seq: int
    hash: str


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What `verify` found for one session; `ok` when nothing is wrong.

    `first_broken_seq` and `reason` name the first event where the hash chain does not hold
    (or where the `sessions` row's head disagrees with it); `problems` lists every other
    disagreement (the `sessions` row, a fork's link, a checkpoint); `bad_snapshots` the seq of
    each stored snapshot that is not the fold at its seq, with why. `head` is the last event
    checked (for a checkpoint)."""

    session_id: str
    events_checked: int
    first_broken_seq: int | None = None
    reason: str | None = None
    head: SessionHead | None = None
    problems: tuple[str, ...] = ()
    bad_snapshots: tuple[tuple[int, str], ...] = ()

    @property
    def ok(self) -> bool:
        return self.first_broken_seq is None and not self.problems and not self.bad_snapshots


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The heads of sessions at one moment, to prove later that no history up to them changed
    (`SessionStore.verify_all(against=...)`). Keep it somewhere the database's writers cannot
    reach; it holds only ids, seqs and hashes."""

    heads: tuple[SessionHead, ...]
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def of(cls, reports: Iterable[VerifyReport]) -> Checkpoint:
        """The heads of the sessions that verified."""
        return cls(tuple(r.head for r in reports if r.ok and r.head is not None))

    def dumps(self) -> str:
        return json.dumps(
            {
                "format": CHECKPOINT_FORMAT,
                "version": 1,
                "created_at": self.created_at.astimezone(UTC).isoformat(),
                "heads": [
                    {"session_id": h.session_id, "seq": h.seq, "hash": h.hash} for h in self.heads
                ],
            },
            indent=1,
            ensure_ascii=False,
        )

    @classmethod
    def loads(cls, text: str) -> Checkpoint:
        """A checkpoint from `dumps` output; `InvalidCheckpoint` when it is not one."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
                raise ValueError(f"not a {CHECKPOINT_FORMAT} file")
            heads = tuple(_head(item) for item in data["heads"])
            created = datetime.fromisoformat(data["created_at"])
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise InvalidCheckpoint(f"not a checkpoint: {exc}") from None
        if created.tzinfo is None:
            raise InvalidCheckpoint("not a checkpoint: created_at has no timezone")
        return cls(heads, created)

    def head_of(self, session_id: str) -> SessionHead | None:
        return next((h for h in self.heads if h.session_id == session_id), None)


def _head(item: Any) -> SessionHead:
    session_id, seq, digest = item["session_id"], item["seq"], item["hash"]
    if not (isinstance(session_id, str) and isinstance(digest, str)):
        raise ValueError("a head's session_id and hash are strings")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise ValueError("a head's seq is a positive integer")
    return SessionHead(session_id, seq, digest)


def holds(recorder: Recorder, session_id: str) -> bool:
    """Whether the store holds anything of the session: its row or any of its events."""
    if recorder.session(session_id) is not None:
        return True
    return next(recorder.events(session_id, 1, MAX_SEQ), None) is not None


@collection_paused()
def verify_session(
    recorder: Recorder, session_id: str, checkpoint: SessionHead | None = None
) -> VerifyReport:
    """Everything `verify` checks of one session (see the module docstring), in one read of
    its events: each page is chained and folded as it comes, so no more than a page of rows
    is held at a time.

    The cyclic garbage collector is paused throughout: the walk allocates millions of small
    acyclic objects (parsed payloads, links, decoded events) that reference counting frees,
    and the collections their allocation triggers were about a fifth of its CPU while finding
    nothing to free. Each payload's digests are found once and serve the body check and the
    index check, and each body is read once: the texts the index check needs are kept by the
    body check as it reads them."""
    row = recorder.session(session_id)
    first: list[ChainLink] = []
    last: list[ChainLink] = []
    at_checkpoint: list[ChainLink] = []
    referenced: dict[str, int] = {}  # digest -> the first seq that references it
    counted = row.live_tokens if row is not None else None
    refold = _Refold(recorder, session_id, counted is not None)
    searched: list[tuple[int, datetime, str, Mapping[str, Any]]] = []  # what the index reads
    indexed_bodies = _IndexBodies()  # the digests the index reads, and their texts

    compactions = 0

    def watched(stored_events: Iterator[StoredEvent]) -> Iterator[ChainLink]:
        nonlocal compactions
        for stored in stored_events:
            link = chain_link(stored)
            compactions += link.type == COMPACTION
            is_searched = link.type in SEARCHED_EVENTS or link.type == "ContentRedacted"
            if is_searched:
                searched.append((link.seq, link.recorded_at, link.type, link.payload))
            if REFERENCE_HINT in stored.payload:  # no reference without it: none to look for
                digests = body_digests(link.type, link.payload)
                for digest in digests:
                    referenced.setdefault(digest, link.seq)
                if is_searched:
                    indexed_bodies.wanted.update(digests)
            if not first:
                first.append(link)
            if checkpoint is not None and link.seq == checkpoint.seq:
                at_checkpoint.append(link)
            last[:] = [link]
            refold.add(stored)
            yield link

    chain = verify_chain(
        session_id,
        watched(recorder.events(session_id, 1, MAX_SEQ)),
        head_seq=row.version if row is not None else None,
        head_hash=row.head_hash if row is not None else None,
    )
    problems: list[str] = []
    started = _started(recorder, session_id, first[0]) if first else None
    if not first:
        problems.append("the sessions table names it, but it has no events")
    elif started is None:
        problems.append(f"its first event is {first[0].type}, not a readable SessionStarted")
    elif row is None:
        problems.append("it has events but no row in the sessions table")
    else:
        problems.extend(_row_problems(row, started))
        if row.compactions != compactions:
            problems.append(
                f"the sessions row counts {row.compactions:,} compactions, but its events hold "
                f"{compactions:,}"
            )
    if started is not None:
        problems.extend(_fork_problems(recorder, started))
    if checkpoint is not None:
        problems.extend(_checkpoint_problems(checkpoint, at_checkpoint, last))
    if not chain.ok:  # a broken chain stops the reading: its events after the break are unseen
        indexed_bodies.wanted.clear()
    problems.extend(body_problems(recorder, session_id, referenced, indexed_bodies))
    if chain.ok and not indexed_bodies.damaged:  # a damaged body: body_problems names it
        problems.extend(index_problems(recorder, session_id, searched, indexed_bodies.texts))
    bad_snapshots: tuple[tuple[int, str], ...] = ()
    if chain.ok and started is not None:
        refold.finish()
        if refold.unreadable is not None:  # an event the fold cannot read: no snapshot holds
            problems.append(
                f"its events cannot be folded to check its snapshots: {refold.unreadable}"
            )
        else:
            bad_snapshots = tuple(refold.bad)
            live = refold.live_tokens
            if counted is not None and last and live is not None and live != counted:
                problems.append(
                    f"the sessions row has {counted:,} live tokens, but a fold of its events "
                    f"finds {live:,}"
                )
    head = SessionHead(session_id, last[0].seq, last[0].hash) if chain.ok and last else None
    return VerifyReport(
        session_id,
        chain.events_checked,
        chain.first_broken_seq,
        chain.reason,
        head,
        tuple(problems),
        bad_snapshots,
    )


class _Refold:
    """The session folded again from its first event as its rows stream past (a page decoded
    at a time, bodies joined in one query per page), each stored snapshot compared with the
    fold at its seq and the live tokens taken at the end. Nothing is folded when the session
    has no snapshot and its row counts no live tokens. A row the fold cannot read stops it:
    `unreadable` says why (no snapshot can then be trusted)."""

    def __init__(self, recorder: Recorder, session_id: str, count_live: bool) -> None:
        self.recorder = recorder
        self.session_id = session_id
        self.wanted: dict[int, str] = {
            int(seq): text
            for seq, text in recorder.snapshots(session_id, PROJECTION, PROJECTION_VERSION)
        }
        self.active = bool(self.wanted) or count_live
        self.fold: ContextFold | None = None
        self.page: list[StoredEvent] = []
        self.bad: list[tuple[int, str]] = []
        self.unreadable: str | None = None
        self.live_tokens: int | None = None

    def add(self, stored: StoredEvent) -> None:
        if not self.active:
            return
        self.page.append(stored)
        if len(self.page) == _FOLD_PAGE:
            self._fold_page()

    def finish(self) -> None:
        if not self.active:
            return
        self._fold_page()
        if self.unreadable is None and self.fold is not None:
            self.live_tokens = self.fold.tokens
        self.bad.extend((seq, "it stands past the end of the log") for seq in self.wanted)

    def _fold_page(self) -> None:
        page, self.page = self.page, []
        if not page or self.unreadable is not None:
            return
        try:
            for event in decode_stored(self.recorder, page):
                if self.fold is None:
                    self.fold = self._start(event)
                self.fold.apply(event)
                text = self.wanted.pop(event.seq, None)
                if text is not None:
                    problem = _snapshot_problem(text, self.fold.to_snapshot())
                    if problem is not None:
                        self.bad.append((event.seq, problem))
        except ValueError as exc:
            self.unreadable = str(exc)

    def _start(self, first: RecordedEvent) -> ContextFold:
        """A fork's fold starts from its parent's at the fork point, folded from scratch."""
        started = first.payload
        if isinstance(started, SessionStarted) and started.parent_session_id is not None:
            parent = started.parent_session_id, started.parent_seq or 0
            return load_fold(self.recorder, *parent, use_snapshots=False).fold
        return ContextFold()


def missing_session(head: SessionHead) -> VerifyReport:
    """The report on a session a checkpoint names that the store no longer holds."""
    return VerifyReport(
        head.session_id,
        0,
        problems=(f"the checkpoint has it at seq {head.seq}, but the store holds none of it",),
    )


def _started(recorder: Recorder, session_id: str, link: ChainLink) -> SessionStarted | None:
    """The first event, its title joined (a body, or a redaction's placeholder)."""
    digests = set(body_digests(link.type, link.payload))
    try:
        texts = bodies_of(recorder, session_id, digests) if digests else {}
        data = join_bodies(link.type, copy.deepcopy(dict(link.payload)), texts)
        payload = decode_payload(link.type, link.schema_version, data)
    except (ValueError, zlib.error):  # a body damaged: body_problems names it
        return None
    return payload if isinstance(payload, SessionStarted) else None


def _row_problems(row: SessionInfo, started: SessionStarted) -> Iterator[str]:
    recorded = {
        "title": started.title,
        "parent_id": started.parent_session_id,
        "parent_seq": started.parent_seq,
        "context_window": started.context_window,
    }
    for column, value in recorded.items():
        if getattr(row, column) != value:
            yield (
                f"the sessions row has {column} {getattr(row, column)!r}, "
                f"but SessionStarted recorded {value!r}"
            )


def _fork_problems(recorder: Recorder, started: SessionStarted) -> Iterator[str]:
    parent = started.parent_session_id
    if parent is None or started.parent_seq is None:
        return
    found = recorder.event_hash(parent, started.parent_seq)
    if found is None:
        yield f"it forks {parent!r} at seq {started.parent_seq}, which the store does not hold"
    elif started.parent_hash is not None and found != started.parent_hash:
        yield (
            f"it forks {parent!r} at seq {started.parent_seq}, but that event's hash is not "
            "the parent_hash it recorded: the parent's history changed"
        )


@dataclass(slots=True)
class _IndexBodies:
    """The bodies the search index check reads (`wanted`), kept by `body_problems` as it
    reads every referenced body, so no body is read twice: `texts` as `unpack` gives them (what
    an append indexed), and `damaged` when one of them cannot be unpacked at all."""

    wanted: set[str] = field(default_factory=set)
    texts: dict[str, str] = field(default_factory=dict)
    damaged: bool = False


def body_problems(
    recorder: Recorder,
    session_id: str,
    referenced: Mapping[str, int],
    indexed: _IndexBodies | None = None,
) -> Iterator[str]:
    """Each body the session's events reference is stored with bytes that have its digest,
    or was deleted by a redaction of the session.

    Every body the session reads is checked, whatever its history: one a redaction deleted
    may be stored again (the same text appended since, or other text put there by hand), and
    a read then joins it where the redacted part stood. A row is intact only when its bytes
    are exactly one body (`unpack_exact`: nothing after a zlib stream) of that digest."""
    if not referenced:
        return
    digests = list(referenced)
    found: set[str] = set()
    for start in range(0, len(digests), _BODIES_PER_READ):
        for row in recorder.bodies(session_id, digests[start : start + _BODIES_PER_READ]):
            found.add(row.digest)
            text: str | None = None
            try:
                text = unpack_exact(row)
                intact = digest_of(text) == row.digest
            except ValueError:  # not zlib, trailing bytes, not UTF-8, an unknown compression
                intact = False
            if indexed is not None and row.digest in indexed.wanted:
                _keep_for_index(indexed, row, text)
            if not intact:
                seq = referenced[row.digest]
                yield f"the body {row.digest} (event {seq}) does not have its digest"
    gone = redactions(recorder, session_id) if len(found) < len(digests) else {}
    for digest in digests:
        if digest not in found and digest not in gone:
            yield (
                f"event {referenced[digest]} references body {digest}, which is not stored "
                "and no redaction deleted"
            )


def _keep_for_index(indexed: _IndexBodies, row: BodyRow, exact: str | None) -> None:
    """The text the index check reads for `row`: `unpack_exact`'s when it gave one (the same
    text `unpack` gives, since the row ends where its stream ends), else `unpack`'s, which
    tolerates bytes after a zlib stream."""
    if exact is None:
        try:
            exact = unpack(row)
        except (ValueError, zlib.error):
            indexed.damaged = True
            return
    indexed.texts[row.digest] = exact


def _checkpoint_problems(
    head: SessionHead, at_checkpoint: list[ChainLink], last: list[ChainLink]
) -> Iterator[str]:
    if not at_checkpoint:
        end = last[0].seq if last else 0
        yield (
            f"the checkpoint has it at seq {head.seq}, but its log ends at seq {end}: "
            "history was removed"
        )
    elif at_checkpoint[0].hash != head.hash:
        yield (
            f"its event {head.seq} does not have the checkpoint's hash: history up to the "
            "checkpoint was rewritten"
        )


def _snapshot_problem(text: str, expected: Mapping[str, Any]) -> str | None:
    try:
        parse_snapshot(text)
    except ValueError as exc:
        return str(exc)
    stored = json.loads(text)
    differing = sorted(
        k for k in expected.keys() | stored.keys() if expected.get(k) != stored.get(k)
    )
    if differing:
        return f"it differs from the fold at its seq in: {', '.join(differing)}"
    return None
