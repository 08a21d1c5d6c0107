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
import secrets
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
    decode_payload_json,
    digest_of,
    join_bodies,
    search_entries,
    verify_chain,
)
from sessionstore.log._bodies import (
    DIGEST_NAMED,
    bodies_of,
    joined_payload,
    recorded_event,
    redactions,
    unpack,
    unpack_exact,
)
from sessionstore.log._replay import load_fold
from sessionstore.log._search import index_problems
from sessionstore.projections import PROJECTION, PROJECTION_VERSION, ContextFold, parse_snapshot
from sessionstore.storage import (
    COMPACTION,
    Recorder,
    SessionInfo,
    StoredEvent,
    chain_link,
)

CHECKPOINT_FORMAT = "sessionstore-checkpoint"
_PAGE = 500
"""Rows checked together while verifying (their bodies read in one query): what the walk
holds at a time."""
REDACTION = "ContentRedacted"
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
    its events, a page (`_PAGE` rows) at a time: once the chain has checked a page, its bodies
    are read in one query and serve the body check, the search index check and the refold, and
    then the page is let go. What is kept across pages does not grow with the session: the
    problems found, the index rows the events give summed into one number (`_IndexSum`), and
    the index rows of texts a redaction deletes later in the log.

    The cyclic garbage collector is paused throughout: the walk allocates millions of small
    acyclic objects (parsed payloads, links, decoded events) that reference counting frees,
    and the collections their allocation triggers were about a fifth of its CPU while finding
    nothing to free."""
    row = recorder.session(session_id)
    first: list[ChainLink] = []
    last: list[ChainLink] = []
    at_checkpoint: list[ChainLink] = []
    counted = row.live_tokens if row is not None else None
    gone = redactions(recorder, session_id)  # what a redaction deleted: digest -> placeholder
    walk = _Walk(recorder, session_id, gone, _Refold(recorder, session_id, counted is not None))
    compactions = 0

    def watched(stored_events: Iterator[StoredEvent]) -> Iterator[ChainLink]:
        nonlocal compactions
        for stored in stored_events:
            link = chain_link(stored)
            compactions += link.type == COMPACTION
            if not first:
                first.append(link)
            if checkpoint is not None and link.seq == checkpoint.seq:
                at_checkpoint.append(link)
            last[:] = [link]
            walk.page.append((stored, link))
            yield link
            if len(walk.page) == _PAGE:  # the chain has checked the whole page
                walk.check_page(first[0])

    chain = verify_chain(
        session_id,
        watched(recorder.events(session_id, 1, MAX_SEQ)),
        head_seq=row.version if row is not None else None,
        head_hash=row.head_hash if row is not None else None,
    )
    # the rest of the last page; past a break, only its bodies (its events after the break
    # are unseen, and nothing is folded or indexed from a chain that does not hold)
    walk.check_page(first[0] if first else None, whole=chain.ok)
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
    problems.extend(walk.damaged_bodies)
    problems.extend(walk.missing_bodies)
    if chain.ok and not walk.index.damaged:  # a damaged body: the body check names it
        problems.extend(walk.index.problems(recorder, session_id))
    bad_snapshots: tuple[tuple[int, str], ...] = ()
    refold = walk.refold
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


_Page = list[tuple[StoredEvent, ChainLink]]


class _Walk:
    """The checks made a page of events at a time, once the chain has checked the page.

    Each page's bodies are read in one query (every digest its events reference, and for the
    refold every digest their text names, as `decode_stored` reads them), and each row read
    serves three checks: the body check (its bytes are exactly one body with its digest), the
    index check (the text the index rows are derived from) and the refold (the text joined
    back into its event). A body referenced on several pages is read and checked on each;
    a problem with it is reported once, at its first reference."""

    def __init__(
        self, recorder: Recorder, session_id: str, gone: Mapping[str, str], refold: _Refold
    ) -> None:
        self.recorder = recorder
        self.session_id = session_id
        self.gone = gone
        self.refold = refold
        self.index = _IndexSum(gone.keys())
        self.page: _Page = []
        self.damaged_bodies: list[str] = []
        self.missing_bodies: list[str] = []
        self.reported: set[str] = set()  # the digests a problem was reported for

    def check_page(self, first: ChainLink | None, *, whole: bool = True) -> None:
        page, self.page = self.page, []
        if not page:
            return
        referenced: dict[str, int] = {}  # digest -> the first seq of the page that references it
        named: set[str] = set()  # every digest the page's texts name (what the refold reads)
        indexed_digests: set[str] = set()
        searched: list[tuple[int, datetime, str, Mapping[str, Any]]] = []
        folding = whole and self.refold.reading
        for stored, link in page:
            is_searched = link.type in SEARCHED_EVENTS or link.type == REDACTION
            if is_searched:
                searched.append((link.seq, link.recorded_at, link.type, link.payload))
            if REFERENCE_HINT in stored.payload:  # no reference without it: none to look for
                digests = body_digests(link.type, link.payload)
                for digest in digests:
                    referenced.setdefault(digest, link.seq)
                if is_searched:
                    indexed_digests.update(digests)
                if folding:
                    named.update(DIGEST_NAMED.findall(stored.payload))
        rows = (
            self.recorder.bodies(self.session_id, sorted(referenced.keys() | named))
            if referenced or named
            else []
        )
        texts: dict[str, str] = {}  # as `unpack` reads them: the index's and the fold's
        unreadable: dict[str, BaseException] = {}  # why `unpack` cannot read a row
        for body in rows:
            exact: str | None = None
            try:
                exact = unpack_exact(body)
                intact = digest_of(exact) == body.digest
            except ValueError:  # not zlib, trailing bytes, not UTF-8, an unknown compression
                intact = False
            if exact is None:
                try:
                    exact = unpack(body)
                except (ValueError, zlib.error) as exc:
                    unreadable[body.digest] = exc
                    if whole and body.digest in indexed_digests:
                        self.index.damaged = True
            if exact is not None:
                texts[body.digest] = exact
            if not intact and body.digest in referenced and body.digest not in self.reported:
                self.reported.add(body.digest)
                seq = referenced[body.digest]
                self.damaged_bodies.append(
                    f"the body {body.digest} (event {seq}) does not have its digest"
                )
        found = {body.digest for body in rows}
        for digest, seq in referenced.items():
            if digest not in found and digest not in self.gone and digest not in self.reported:
                self.reported.add(digest)
                self.missing_bodies.append(
                    f"event {seq} references body {digest}, which is not stored "
                    "and no redaction deleted"
                )
        if not whole:
            return
        if not self.index.damaged:
            self.index.add_page(searched, {d: t for d, t in texts.items() if d in indexed_digests})
        if folding:
            self.refold.fold_page(page, first, _Texts(texts, unreadable, named, self.gone))


@dataclass(slots=True)
class _Texts:
    """The bodies a page's refold joins, as `bodies_of` gives them: `texts` as `unpack` reads
    them, `unreadable` the rows it cannot read (`read` raises what `unpack` raised), and the
    placeholders of redacted bodies over them when any digest `named` is not stored."""

    texts: dict[str, str]
    unreadable: dict[str, BaseException]
    named: set[str]
    gone: Mapping[str, str]

    def read(self) -> dict[str, str]:
        if self.unreadable:
            raise next(iter(self.unreadable.values()))
        joined = dict(self.texts)
        if len(joined) < len(self.named):
            joined.update(self.gone)
        return joined


class _IndexSum:
    """The search index check, without holding the session's index rows: the rows its events
    give (as `search_entries` derives them) and the rows the index holds are each summed into
    one number, a keyed hash of each row added modulo 2**64 (a multiset hash: equal sums mean
    equal rows but for a chance of about 2**-64). The hash is the interpreter's string hash
    (SipHash, keyed by a secret drawn per process) of the row after a prefix drawn afresh for
    each check, so a row cannot be forged to aim at a sum; it costs a tenth of a keyed
    `blake2b` per row, which was a tenth of verify's CPU. Only when the sums differ are the rows
    compared one by one, as `index_problems` does, to say which are missing and which extra.

    A redaction takes out the rows of the texts it deletes from every earlier event, which can
    be pages back: the rows of the texts some redaction of the session names (`redacted`) are
    kept aside until the end of the log, and dropped when a later redaction names them."""

    def __init__(self, redacted: Iterable[str]) -> None:
        self.redacted = frozenset(redacted)
        self.key = secrets.token_hex(16)
        self.expected = 0
        self.held: list[tuple[int, int, int, str | None]] = []
        self.damaged = False

    def _sum(self, rows: Iterable[tuple[int, int, int, str | None]]) -> int:
        key = self.key
        return sum(
            hash(f"{key} {seq} {part} {chunk} {digest}") for seq, part, chunk, digest in rows
        )

    def add_page(
        self, searched: list[tuple[int, datetime, str, Mapping[str, Any]]], texts: dict[str, str]
    ) -> None:
        if not searched:
            return
        deleted = {
            d
            for _, _, kind, data in searched
            if kind == REDACTION
            for d in data.get("digests") or ()
            if isinstance(d, str)
        }
        if deleted and self.held:
            self.held = [row for row in self.held if row[3] not in deleted]
        entries, _ = search_entries(searched, texts)
        rows = [(e.seq, e.part, e.chunk, e.digest) for e in entries]
        if self.redacted:
            self.held.extend(row for row in rows if row[3] in self.redacted)
            rows = [row for row in rows if row[3] not in self.redacted]
        self.expected += self._sum(rows)

    def problems(self, recorder: Recorder, session_id: str) -> Iterator[str]:
        expected = (self.expected + self._sum(self.held)) % 2**64
        if self._sum(recorder.each_indexed(session_id)) % 2**64 == expected:
            return
        searched = [
            (link.seq, link.recorded_at, link.type, link.payload)
            for link in map(chain_link, recorder.events(session_id, 1, MAX_SEQ))
            if link.type in SEARCHED_EVENTS or link.type == REDACTION
        ]
        yield from index_problems(recorder, session_id, searched)


class _Refold:
    """The session folded again from its first event, a page at a time, each stored snapshot
    compared with the fold at its seq and the live tokens taken at the end. Nothing is folded
    when the session has no snapshot and its row counts no live tokens. A row the fold cannot
    read stops it: `unreadable` says why (no snapshot can then be trusted).

    Each page is decoded as `decode_stored` decodes it (the same errors, in the same order)
    from what the walk already holds: the payloads the chain parsed (a reference's text joined
    into them in place, the chain being done with them) and the bodies the walk read."""

    def __init__(self, recorder: Recorder, session_id: str, count_live: bool) -> None:
        self.recorder = recorder
        self.session_id = session_id
        self.wanted: dict[int, str] = {
            int(seq): text
            for seq, text in recorder.snapshots(session_id, PROJECTION, PROJECTION_VERSION)
        }
        self.active = bool(self.wanted) or count_live
        self.fold: ContextFold | None = None
        self.bad: list[tuple[int, str]] = []
        self.unreadable: str | None = None
        self.live_tokens: int | None = None

    @property
    def reading(self) -> bool:
        return self.active and self.unreadable is None

    def finish(self) -> None:
        if not self.active:
            return
        if self.unreadable is None and self.fold is not None:
            self.live_tokens = self.fold.tokens
        self.bad.extend((seq, "it stands past the end of the log") for seq in self.wanted)

    def fold_page(self, page: _Page, first: ChainLink | None, bodies: _Texts) -> None:
        try:
            for event in _decoded(page, first, bodies):
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


def _decoded(page: _Page, first: ChainLink | None, bodies: _Texts) -> list[RecordedEvent]:
    """The page's events decoded and upcast, their bodies joined back, as `decode_stored`
    gives them: an event without a reference first, from its text, in order; then the bodies
    (`unpack` failing on one stops here), then each event with references, from the payload
    the chain parsed (the first event's is parsed again: `_started` reads it later)."""
    decoded: list[RecordedEvent | None] = []
    waiting: list[tuple[int, dict[str, Any]]] = []
    for index, (stored, link) in enumerate(page):
        if REFERENCE_HINT not in stored.payload:
            payload = decode_payload_json(stored.type, stored.schema_version, stored.payload)
            decoded.append(recorded_event(stored, payload))
            continue
        decoded.append(None)
        data = json.loads(stored.payload) if link is first else link.payload
        waiting.append((index, data))  # type: ignore[arg-type]  # json.loads gave a dict
    if waiting:
        texts = bodies.read()
        for index, data in waiting:
            stored = page[index][0]
            decoded[index] = recorded_event(stored, joined_payload(stored, data, texts))
    return [event for event in decoded if event is not None]


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
