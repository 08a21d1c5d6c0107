"""What the HTML view of a session shows, folded in one pass over its events.

The token curve, the replay and the diffs all come from the same fold the store replays with:
after each event the fold's `tokens` is the live context's size (one point of the curve), and
its `Change` says which messages entered or left. So the view costs one fold, not one replay
per seq: each form a message is shown in (a "version": as appended, then pruned, restored...)
is kept once, with the [enter, leave) interval of seqs it is live in, and the page filters
them to show the context at any seq. What `context(at=seq)` returns is exactly the versions
live at seq, in the order they are kept here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from sessionstore.events import (
    CompressionConfig,
    ContentRedacted,
    ContextCompacted,
    MessageAppended,
    MessagePinned,
    MessagePopped,
    MessagesRestored,
    MessagesReverted,
    MessageUnpinned,
    OutputsPruned,
    OutputsRestored,
    PartsPreviewed,
    Payload,
    RecordedEvent,
    SessionCleared,
    SessionStarted,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from sessionstore.projections._artifacts import ArtifactFold, ArtifactTrail
from sessionstore.projections._fold import Change, ContextFold
from sessionstore.projections._live import LiveMessage
from sessionstore.projections._timeline import TimelineRow, describe
from sessionstore.projections._tool_map import DEFAULT_TOOLS, ToolMap

MARK_KINDS = (
    "truncation",
    "prune",
    "preview",
    "compaction",
    "provider-compaction",
    "restore",
    "revert",
    "redaction",
)
"""The kinds of event the token curve marks, in the order its legend lists them."""


@dataclass(frozen=True, slots=True)
class CurveMark:
    """An event that changed how the context is shown, marked on the curve: `kind` is one of
    `MARK_KINDS`, `text` says what it did and why (the timeline's row)."""

    seq: int
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class LiveVersion:
    """A message as the model was shown it from seq `enter` until seq `leave` (excluded;
    `None`: still live). `originals` holds, by part id, the full text of each part shown cut
    (truncated, pruned, previewed): what the view offers one click away."""

    message: LiveMessage
    enter: int
    leave: int | None
    originals: dict[str, str]


@dataclass(frozen=True, slots=True)
class CompactionShown:
    """One compaction: the messages it took out, as they were shown right before it, beside
    the summary that replaced them."""

    seq: int
    payload: ContextCompacted
    replaced: tuple[int, ...]
    """The replaced messages' versions (indexes into `SessionView.versions`)."""
    summary: int | None
    """The summary's version, or `None` when the summary was live already."""
    text: str


@dataclass(frozen=True, slots=True)
class UsageTurn:
    """One assistant response with the usage its provider reported."""

    seq: int
    message_id: str
    usage: Usage


@dataclass(frozen=True, slots=True)
class SessionView:
    """Everything the page of one session shows, in the order of its sections."""

    session_id: str
    header: SessionStarted
    rows: tuple[TimelineRow, ...]
    """One per event: the curve's points and the event list."""
    marks: tuple[CurveMark, ...]
    versions: tuple[LiveVersion, ...]
    """In context order: those live at any seq, in this order, are the context at that seq."""
    compactions: tuple[CompactionShown, ...]
    usage: tuple[UsageTurn, ...]
    trail: ArtifactTrail
    live_tokens: int
    usable_window: int | None
    trigger_tokens: int | None


@dataclass(slots=True)
class _Versions:
    """The versions so far, in a doubly linked list whose order is the context order at every
    seq: a version is put right after the one it replaces, or right before the next live
    message, and a version that left never comes back (a message that returns is a new one)."""

    items: list[LiveVersion] = field(default_factory=list)
    leave: list[int | None] = field(default_factory=list)
    after: list[int] = field(default_factory=list)
    before: list[int] = field(default_factory=list)
    first: int = -1
    last: int = -1
    live: dict[str, int] = field(default_factory=dict)

    def open(self, version: LiveVersion, *, after: int = -1, before: int = -1) -> int:
        """Add `version`, live now, right after `after`, else right before `before`, else at
        the end."""
        index = len(self.items)
        self.items.append(version)
        self.leave.append(None)
        self.after.append(-1)
        self.before.append(-1)
        if after < 0 and before >= 0:
            after = self.before[before]
            if after < 0:  # it goes first
                self.after[index] = self.first
                self.before[self.first] = index
                self.first = index
                self.live[version.message.id] = index
                return index
        if after < 0:
            after = self.last
        if after < 0:
            self.first = self.last = index
        else:
            following = self.after[after]
            self.after[after] = index
            self.before[index] = after
            self.after[index] = following
            if following >= 0:
                self.before[following] = index
            else:
                self.last = index
        self.live[version.message.id] = index
        return index

    def close(self, message_id: str, seq: int) -> int | None:
        index = self.live.pop(message_id, None)
        if index is not None:
            self.leave[index] = seq
        return index

    def ordered(self) -> tuple[tuple[LiveVersion, ...], dict[int, int]]:
        """The versions in context order, and where each one made (by its index here) went."""
        found: list[LiveVersion] = []
        position: dict[int, int] = {}
        index = self.first
        while index >= 0:
            version = self.items[index]
            leave = self.leave[index]
            if leave is not None:
                version = LiveVersion(version.message, version.enter, leave, version.originals)
            position[index] = len(found)
            found.append(version)
            index = self.after[index]
        return tuple(found), position


def session_view(
    events: Iterable[RecordedEvent],
    start: ContextFold | None = None,
    *,
    tools: ToolMap | None = None,
) -> SessionView:
    """The view of one session's events (in order, from its first), folded on top of `start`
    (a fork's parent history at the fork, whose messages are live from the start)."""
    fold = start if start is not None else ContextFold()
    trail = ArtifactFold(tools=tools if tools is not None else DEFAULT_TOOLS)
    versions = _Versions()
    owners: dict[str, str] = {}
    for message_id in fold.message_ids():
        _open(versions, fold, message_id, 0, owners)
    rows: list[TimelineRow] = []
    marks: list[CurveMark] = []
    compactions: list[CompactionShown] = []
    usage: list[UsageTurn] = []
    for event in events:
        change = fold.apply(event)
        trail.apply(event)
        payload = event.payload
        text = describe(payload, change)
        rows.append(
            TimelineRow(
                seq=event.seq,
                time=event.recorded_at,
                type=event.type,
                summary=text,
                tokens=fold.tokens,
                added=change.added,
                removed=change.removed,
                pruned=change.pruned,
                restored=change.restored,
                previewed=change.previewed,
            )
        )
        kind = mark_kind(payload)
        if kind is not None:
            marks.append(CurveMark(event.seq, kind, text))
        left = {i: versions.close(i, event.seq) for i in change.removed}
        _enter(versions, fold, payload, change, event.seq, owners)
        _reshow(versions, fold, payload, change, event.seq, owners)
        if isinstance(payload, ContextCompacted):
            summary = versions.live.get(payload.summary.id) if change.added else None
            compactions.append(
                CompactionShown(
                    seq=event.seq,
                    payload=payload,
                    replaced=tuple(i for i in left.values() if i is not None),
                    summary=summary,
                    text=text,
                )
            )
        elif isinstance(payload, MessageAppended) and change.added:
            message = payload.message
            if message.role == "assistant" and message.usage is not None:
                usage.append(UsageTurn(event.seq, message.id, message.usage))
    if fold.header is None:
        raise ValueError("a view needs at least the session's SessionStarted event")
    usable, trigger = _limits(fold.header)
    ordered, position = versions.ordered()
    return SessionView(
        session_id=fold.session_id,
        header=fold.header,
        rows=tuple(rows),
        marks=tuple(marks),
        versions=ordered,
        compactions=tuple(
            replace(
                shown,
                replaced=tuple(position[i] for i in shown.replaced),
                summary=None if shown.summary is None else position[shown.summary],
            )
            for shown in compactions
        ),
        usage=tuple(usage),
        trail=trail.trail(),
        live_tokens=fold.tokens,
        usable_window=usable,
        trigger_tokens=trigger,
    )


def mark_kind(payload: Payload) -> str | None:
    """The curve's mark for an event, or `None` when it gets none (an append that cut nothing,
    a state change...)."""
    if isinstance(payload, MessageAppended):
        cut = any(
            isinstance(part, ToolResultPart | TextPart) and part.truncation is not None
            for part in payload.message.parts
        )
        return "truncation" if cut else None
    if isinstance(payload, ContextCompacted):
        return "provider-compaction" if payload.reason == "provider" else "compaction"
    kinds: dict[type[Payload], str] = {
        OutputsPruned: "prune",
        PartsPreviewed: "preview",
        OutputsRestored: "restore",
        MessagesRestored: "restore",
        MessagesReverted: "revert",
        MessagePopped: "revert",
        SessionCleared: "revert",
        ContentRedacted: "redaction",
    }
    return kinds.get(type(payload))


def _limits(header: SessionStarted) -> tuple[int | None, int | None]:
    """The usable window (window minus output reserve) and the overflow trigger, in tokens; a
    stored config this version refuses reads as the defaults, as the session itself reads it."""
    if header.context_window is None:
        return None, None
    usable = max(header.context_window - header.output_reserve, 0)
    try:
        ratio = CompressionConfig.model_validate(header.compression).trigger_ratio
    except ValueError:
        ratio = CompressionConfig().trigger_ratio
    return usable, int(usable * ratio)


def _open(
    versions: _Versions,
    fold: ContextFold,
    message_id: str,
    seq: int,
    owners: dict[str, str],
    *,
    after: int = -1,
    before: int = -1,
) -> int:
    stored = fold.message(message_id)
    for part in stored.parts:
        owners[part.id] = message_id
    shown = fold.live_message(message_id)
    version = LiveVersion(shown, seq, None, _originals(fold, shown))
    return versions.open(version, after=after, before=before)


def _enter(
    versions: _Versions,
    fold: ContextFold,
    payload: Payload,
    change: Change,
    seq: int,
    owners: dict[str, str],
) -> None:
    """Open a version for each message that entered. An append enters at the end; a
    compaction's summary and a restored message may enter in the middle: before the next
    live message that already has a version."""
    if not change.added:
        return
    if not isinstance(payload, ContextCompacted | MessagesRestored):
        for message_id in change.added:
            _open(versions, fold, message_id, seq, owners)
        return
    order = fold.message_ids()
    entering = set(change.added)
    for n, message_id in enumerate(order):
        if message_id not in entering:
            continue
        following = next(
            (versions.live[i] for i in order[n + 1 :] if i not in entering and i in versions.live),
            -1,
        )
        _open(versions, fold, message_id, seq, owners, before=following)
        entering.discard(message_id)


def _reshow(
    versions: _Versions,
    fold: ContextFold,
    payload: Payload,
    change: Change,
    seq: int,
    owners: dict[str, str],
) -> None:
    """A new version for each live message the event shows differently (a part pruned,
    restored, cut to a preview or redacted; a pin), right after the one it replaces."""
    touched: set[str] = set()
    for part_id in (*change.pruned, *change.restored, *change.previewed):
        owner = owners.get(part_id)
        if owner is not None:
            touched.add(owner)
    if isinstance(payload, ContentRedacted):
        touched.update(versions.live)
    elif isinstance(payload, MessagePinned | MessageUnpinned):
        touched.add(payload.message_id)
    touched -= set(change.added)
    for message_id in [i for i in versions.live if i in touched]:
        if not fold.is_live(message_id):
            continue
        current = versions.live[message_id]
        shown = fold.live_message(message_id)
        if shown == versions.items[current].message:
            continue
        versions.close(message_id, seq)
        _open(versions, fold, message_id, seq, owners, after=current)


def _originals(fold: ContextFold, shown: LiveMessage) -> dict[str, str]:
    """The full text of each part of `shown` that shows less than it holds."""
    stored = {part.id: part for part in fold.message(shown.id).parts}
    originals: dict[str, str] = {}
    for part in shown.parts:
        kept = stored.get(part.id)
        if isinstance(kept, ToolResultPart) and getattr(part, "status", "") in (
            "truncated",
            "pruned",
            "previewed",
        ):
            originals[part.id] = kept.output
        elif isinstance(kept, TextPart) and isinstance(part, TextPart) and part.text != kept.text:
            originals[part.id] = kept.text
        elif (
            isinstance(kept, ToolCallPart)
            and isinstance(part, ToolCallPart)
            and part.arguments != kept.arguments
        ):
            originals[part.id] = kept.arguments
    return originals
