"""The context fold: a session's events, one by one, into its live context.

`ContextFold.apply(event)` is the fold step. It needs nothing but the event (token counts,
placeholders and times were recorded when the event was appended), so replaying the same
events always gives the same context. The state is mutated in place rather than copied per
event: a 50k-event session folds in linear time. Build a fresh fold (or `from_snapshot`) for
each replay; never share one between readers.

Messages are kept as their stored JSON (plain dicts, bodies joined), never as models: a resume
folds thousands of them, and the read path hands them over as read (`StoredAppend`), unvalidated
(the write validated each once; `verify` checks them). The live context is built as plain dicts
too (`shown_messages`), which the renders read; models are built only for a caller who asks for
them (`live_messages`, `message`, `tool_result`...).

The originals of truncated parts (`ORIGINAL_FIELDS`: a 100 MB output cut to its view) come from
the read path as body references, unread. The fold needs only their sizes, which the
references hold; it reads them through `bodies` (the store, given by whoever loaded the fold)
once something shows them: a restore, `restore_pruned`, or a caller asking for the message.

The fold is lenient by design: an event naming a message or part that is not live (written by
hand, or by a buggy client through the raw `append`) changes nothing for that id. The
`Session` API refuses such events before they are written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import datetime
from typing import Any

from pydantic import JsonValue, ValidationError

from sessionstore.events import (
    GENESIS_HASH,
    ORIGINAL_FIELDS,
    CompressionChanged,
    ContentRedacted,
    ContextCompacted,
    InvalidEvent,
    Message,
    MessageAppended,
    MessagePinned,
    MessagePopped,
    MessagesRestored,
    MessagesReverted,
    MessageUnpinned,
    MetadataChanged,
    OutputsPruned,
    OutputsRestored,
    PartsPreviewed,
    RecordedEvent,
    SessionCleared,
    SessionStarted,
    StateChanged,
    StoredAppend,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    body_digests,
    describe_validation_error,
    digest_of,
    format_timestamp,
    is_reference,
    join_bodies,
    redacted,
    value_text,
)
from sessionstore.projections._live import (
    LiveMessage,
    ShownMessage,
    estimate_tokens,
    field,
    original_result_tokens,
    original_text_tokens,
    shown_result_tokens,
    stored_tokens,
)
from sessionstore.projections._preview import preview
from sessionstore.projections._provider_compaction import is_provider_summary
from sessionstore.projections._snapshot import SnapshotState, snapshot_digest

PROJECTION = "context"
PROJECTION_VERSION = 6
"""Bump when the fold or its snapshot shape changes: snapshots of other versions are ignored."""

EventRef = tuple[str, int]
"""Where a live message is stored: (session id, seq) of the event that carries it."""

PlainMessage = dict[str, Any]
"""A message as stored JSON (`Message`'s fields; bodies joined), or a live message as the
JSON of `LiveMessage` (`ContextFold.shown_messages`): what the fold and the renders read."""

PlainPart = dict[str, Any]

BodyReader = Callable[[str, set[str]], Mapping[str, str]]
"""(session id, digests) -> the texts of those bodies of the session, a redacted one as its
placeholder (`sessionstore.log` reads them)."""


def plain_message(message: Message) -> PlainMessage:
    """A message model as the fold keeps it: its JSON, as it is stored (bodies joined)."""
    return message.model_dump(mode="json")


_READ_AS_TEXT = {
    "text": ("id", "text"),
    "reasoning": ("id", "text"),
    "tool_call": ("id", "call_id", "name", "arguments"),
    "tool_result": ("id", "call_id", "output"),
    "file": ("id", "media_type"),
    "native": ("id",),
}
"""The fields of each kind of part that the fold and the renders read as text, unchecked."""

_ROLES = frozenset({"system", "user", "assistant", "tool"})
_APPENDED = "MessageAppended"


def checked_message(
    message: PlainMessage, ref: EventRef, unshown: Set[str] = frozenset()
) -> PlainMessage:
    """The message stored at `ref`, when what the fold and the renders read of it has the JSON
    type they read it as (a row written by the store always has: its model was validated at
    append). Anything else, a row edited by hand, is validated by the model: `InvalidEvent`
    names what does not fit, and a message the model takes after all is its JSON. The parts in
    `unshown` (not shown to the model: see `decode_for_fold`) may hold references."""
    if _fits(message, unshown):
        return message
    try:
        return plain_message(Message.model_validate(message))
    except ValidationError as exc:
        raise InvalidEvent(
            f"the message stored at seq {ref[1]} of {ref[0]!r} does not fit the model: "
            f"{describe_validation_error(exc)}"
        ) from None


def _fits(message: object, unshown: Set[str]) -> bool:
    if type(message) is not dict or message.get("role") not in _ROLES:
        return False
    parts = message.get("parts")
    if type(message.get("id")) is not str or type(parts) is not list or not parts:
        return False
    if not _usage_fits(message.get("usage")) or not _native_fits(message):
        return False
    return all(_part_fits(part, _READ_AS_TEXT, unshown) for part in parts)


_COUNTED = ("input", "output", "cache_read", "cache_write")
"""What the fold adds up of a message's usage."""


def _usage_fits(usage: object) -> bool:
    if usage is None:
        return True
    return type(usage) is dict and all(type(usage.get(key, 0)) is int for key in _COUNTED)


_BLOCKS = {kind: _READ_AS_TEXT[kind] for kind in ("text", "file")}


def _part_fits(
    part: object, kinds: Mapping[str, tuple[str, ...]], unshown: Set[str] = frozenset()
) -> bool:
    if not isinstance(part, dict):
        return False
    truncation = part.get("truncation")
    unread = truncation is not None or part.get("id") in unshown  # may hold references
    fields = kinds.get(part.get("type"))  # type: ignore[arg-type]
    if fields is None or any(not _text_fits(part, name, unread) for name in fields):
        return False
    tokens = part.get("tokens")
    blocks = part.get("blocks")
    if tokens is not None and type(tokens) is not int:
        return False
    if truncation is not None and (
        type(truncation) is not dict or type(truncation.get("shown")) is not str
    ):
        return False
    if unread:  # its blocks and provider block are originals, not shown
        return type(blocks) is list or blocks is None
    if blocks is not None and (
        type(blocks) is not list or not all(_part_fits(b, _BLOCKS) for b in blocks)
    ):
        return False
    return _native_fits(part)


def _text_fits(part: dict[str, Any], name: str, unread: bool) -> bool:
    """A text field holds text, or, for the original of a truncated part or a part not shown,
    the reference to it that the read path left unread."""
    value = part.get(name)
    if type(value) is str:
        return True
    return unread and name in ORIGINAL_FIELDS and is_reference(value)


def _holds_unread(part: PlainPart, unshown: Set[str]) -> bool:
    """Whether the original of a truncated part, or of a part in `unshown`, is still a
    reference (see the module)."""
    if part.get("truncation") is None and part["id"] not in unshown:
        return False
    return any(is_reference(part.get(name)) for name in ORIGINAL_FIELDS) or any(
        is_reference(block.get(name))
        for block in part.get("blocks") or ()
        if isinstance(block, dict)
        for name in ORIGINAL_FIELDS
    )


def _native_fits(value: dict[str, Any]) -> bool:
    native = value.get("native")
    return native is None or (type(native) is dict and type(native.get("api")) is str)


@dataclass(frozen=True, slots=True)
class PruneMark:
    placeholder: str
    tokens: int
    at: datetime
    reason: str


@dataclass(frozen=True, slots=True)
class PreviewMark:
    """A part shown cut to a preview (`PartsPreviewed`): where the cut falls, the notice, and
    the preview's token count."""

    chars: int
    tokens: int
    notice: str
    tail: int = 0
    """A tool result's last characters shown after the notice (`Preview.tail`)."""


@dataclass(frozen=True, slots=True)
class Change:
    """What one event did to the live context (for the audit timeline)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    pruned: tuple[str, ...] = ()
    restored: tuple[str, ...] = ()
    previewed: tuple[str, ...] = ()


@dataclass(slots=True)
class _Entry:
    message: PlainMessage
    ref: EventRef
    summary: bool
    tokens: int = 0
    shown: ShownMessage | None = None
    """The message as last rendered; reset whenever what it shows may change (`_recount`, a
    pin), so an agent loop's `context()` after each append renders only the new message."""


@dataclass(slots=True)
class ContextFold:
    """A session's live context after the events applied so far."""

    session_id: str = ""
    seq: int = 0
    hash: str = GENESIS_HASH
    time: datetime | None = None
    header: SessionStarted | None = None
    tokens: int = 0
    pinned: set[str] = dataclass_field(default_factory=set)
    state: dict[str, JsonValue] = dataclass_field(default_factory=dict)
    """The session's key-value state (`StateChanged` deltas so far)."""
    _entries: dict[str, _Entry] = dataclass_field(default_factory=dict)
    _result_owner: dict[str, str] = dataclass_field(default_factory=dict)
    _reasoning_owner: dict[str, str] = dataclass_field(default_factory=dict)
    """Reasoning parts by id -> message id: a prune can clear an older turn's reasoning."""
    _text_owner: dict[str, str] = dataclass_field(default_factory=dict)
    """Truncated text parts (a long user message) by id -> message id: restorable."""
    _call_owner: dict[str, str] = dataclass_field(default_factory=dict)
    """Tool-call parts by id -> message id: a long call's arguments can be previewed."""
    _pruned: dict[str, PruneMark] = dataclass_field(default_factory=dict)
    """Pruned tool results (shown as the placeholder) and cleared reasoning (left out)."""
    _previewed: dict[str, PreviewMark] = dataclass_field(default_factory=dict)
    """Tool results and tool calls shown cut to a preview."""
    _restored: dict[str, int | None] = dataclass_field(default_factory=dict)
    """Restored parts, with their originals' token counts when the restore recorded them."""
    _calls: dict[str, PlainPart] = dataclass_field(default_factory=dict)  # live calls by call_id
    _answers: dict[str, int] = dataclass_field(default_factory=dict)  # live results per call_id
    usage_base: tuple[int, int] | None = None
    """(tokens the provider reported for the last assistant turn, our count right after it):
    kept while only appends follow, so overflow can start from the provider's own figure."""
    last_compaction: tuple[int, int] | None = None
    """(seq, live tokens right after) of the newest compaction."""
    bodies: BodyReader | None = dataclass_field(default=None, compare=False, repr=False)
    """Where the originals the read path left unread are read from (see the module)."""
    _unread: set[str] = dataclass_field(default_factory=set)
    """Live messages holding an original not read yet, by id."""

    # the fold step

    def apply(self, event: RecordedEvent | StoredAppend) -> Change:
        """Fold one event in; return what it changed."""
        if isinstance(event, StoredAppend):
            ref = (event.session_id, event.seq)
            change = self._append(checked_message(event.message, ref), ref)
            self._moved(event.session_id, event.seq, event.hash, event.recorded_at)
            return change
        payload = event.payload
        change = Change()
        if isinstance(payload, SessionStarted):
            # A fork's SessionStarted follows its parent's history: keep the messages. Its
            # seqs start again at 1, so the parent's last compaction no longer has a place.
            self.header = payload
            self.last_compaction = None
        elif isinstance(payload, CompressionChanged):
            if self.header is not None:
                self.header = self.header.model_copy(update={"compression": payload.compression})
        elif isinstance(payload, MetadataChanged):
            if self.header is not None:
                metadata = {"app": payload.app, "user": payload.user, "tags": payload.tags}
                self.header = self.header.model_copy(update=metadata)
        elif isinstance(payload, MessageAppended):
            change = self._append(plain_message(payload.message), (event.session_id, event.seq))
        elif isinstance(payload, OutputsPruned):
            change = self._prune(payload, event.recorded_at)
        elif isinstance(payload, OutputsRestored):
            change = self._restore(payload.part_ids, payload.output_tokens)
        elif isinstance(payload, PartsPreviewed):
            change = self._preview(payload)
        elif isinstance(payload, ContextCompacted):
            change = self._compact(payload, (event.session_id, event.seq))
        elif isinstance(payload, MessagesReverted):
            change = self._remove(payload.reverted_message_ids)
        elif isinstance(payload, MessagesRestored):
            change = self._reinstate(payload, (event.session_id, event.seq))
        elif isinstance(payload, MessagePopped):
            change = self._remove((payload.message_id,))
        elif isinstance(payload, SessionCleared):
            change = self._remove(tuple(self._entries))
            self.last_compaction = None
        elif isinstance(payload, StateChanged):
            for key in payload.removed:
                self.state.pop(key, None)
            self.state.update(payload.values)
        elif isinstance(payload, MessagePinned):
            if payload.message_id in self._entries:
                self.pinned.add(payload.message_id)
                self._entries[payload.message_id].shown = None
        elif isinstance(payload, MessageUnpinned):
            self.pinned.discard(payload.message_id)
            if payload.message_id in self._entries:
                self._entries[payload.message_id].shown = None
        elif isinstance(payload, ContentRedacted):
            self._redact(frozenset(payload.part_ids), payload.placeholder)
            self._redact_header(frozenset(payload.digests), payload.placeholder)
        if isinstance(payload, ContextCompacted):
            self.last_compaction = (event.seq, self.tokens)
        if change.removed or change.pruned or change.restored or change.previewed:
            self.usage_base = None  # the provider's figure no longer describes this context
        if isinstance(payload, ContextCompacted) and payload.reason == "provider":
            # the provider compacted and reported what the context is now: count from there
            self.usage_base = (payload.tokens_after, self.tokens)
        self._moved(event.session_id, event.seq, event.hash, event.recorded_at)
        return change

    def _moved(self, session_id: str, seq: int, hash: str, recorded_at: datetime) -> None:
        self.session_id = session_id
        self.seq = seq
        self.hash = hash
        self.time = recorded_at

    def _append(self, message: PlainMessage, ref: EventRef) -> Change:
        change = self._add(message, ref)
        usage = message.get("usage")
        if change.added and usage is not None:
            self.usage_base = (sum(usage.get(key, 0) for key in _COUNTED), self.tokens)
        return change

    def _redact(self, part_ids: frozenset[str], placeholder: str) -> None:
        """The parts' content becomes the placeholder. Counted sizes stay (a previewed part
        keeps its preview's count and shows the placeholder alone: no notice offers an
        original that is gone); a part stored without a count is estimated from what it
        shows now, as a replay (which reads the placeholder from the start) estimates it."""
        for part_id in part_ids:
            cut = self._previewed.get(part_id)
            if cut is not None:  # shown as the placeholder, no notice, counted as it was
                self._previewed[part_id] = PreviewMark(len(placeholder), cut.tokens, "")
        for entry in self._entries.values():
            if not any(part["id"] in part_ids for part in entry.message["parts"]):
                continue
            self._read_originals([entry])
            model = Message.model_validate(entry.message)  # one rule: `redacted`'s
            self._replace(entry, plain_message(redacted(model, part_ids, placeholder)))
            self._recount(entry)  # a part counted by estimate now shows the placeholder

    def _redact_header(self, digests: frozenset[str], placeholder: str) -> None:
        """The title and the state's values read the placeholder once their bodies are
        deleted, as a replay reads them."""
        header = self.header
        if header is not None and header.title and digest_of(header.title) in digests:
            self.header = header.model_copy(update={"title": placeholder})
        for key, value in self.state.items():
            if digest_of(value_text(value)) in digests:
                self.state[key] = placeholder

    def _replace(self, entry: _Entry, message: PlainMessage) -> None:
        """The entry's message becomes `message` (the same one, redacted or read whole): the
        live calls it registered are its new parts."""
        entry.shown = None
        if message is entry.message:
            return
        entry.message = message
        for part in message["parts"]:
            call = self._calls.get(part.get("call_id")) if part["type"] == "tool_call" else None
            if call is not None and call["id"] == part["id"]:
                self._calls[part["call_id"]] = part

    def _add(
        self,
        message: PlainMessage,
        ref: EventRef,
        *,
        summary: bool = False,
        unshown: Set[str] = frozenset(),
    ) -> Change:
        message_id: str = message["id"]
        if message_id in self._entries:
            return Change()  # a message id is appended once; a duplicate changes nothing
        entry = _Entry(message, ref, summary)
        for part in message["parts"]:
            kind = part["type"]
            if kind == "tool_result":
                self._result_owner[part["id"]] = message_id
                self._answers[part["call_id"]] = self._answers.get(part["call_id"], 0) + 1
            elif kind == "tool_call":
                self._calls.setdefault(part["call_id"], part)
                self._call_owner[part["id"]] = message_id
            elif kind == "reasoning":
                self._reasoning_owner[part["id"]] = message_id
            elif kind == "text" and part.get("truncation") is not None:
                self._text_owner[part["id"]] = message_id
            if _holds_unread(part, unshown):
                self._unread.add(message_id)
        self._entries[message_id] = entry
        self._recount(entry)
        return Change(added=(message_id,))

    def _remove(self, message_ids: tuple[str, ...]) -> Change:
        """The live ones among `message_ids` leave the context (a revert, a pop, a clear)."""
        gone = tuple(i for i in message_ids if i in self._entries)
        for message_id in gone:
            self._drop(message_id)
        return Change(removed=gone)

    def _drop(self, message_id: str) -> None:
        entry = self._entries.pop(message_id)
        self._unread.discard(message_id)
        self.tokens -= entry.tokens
        self.pinned.discard(message_id)  # a pin ends with its message
        for part in entry.message["parts"]:
            kind, part_id = part["type"], part["id"]
            if kind == "tool_result":
                self._result_owner.pop(part_id, None)
                self._pruned.pop(part_id, None)
                self._previewed.pop(part_id, None)
                self._restored.pop(part_id, None)
                self._answers[part["call_id"]] -= 1
                if not self._answers[part["call_id"]]:
                    del self._answers[part["call_id"]]
            elif kind == "tool_call":
                self._call_owner.pop(part_id, None)
                self._previewed.pop(part_id, None)
                self._restored.pop(part_id, None)
                call = self._calls.get(part["call_id"])
                if call is not None and call["id"] == part["id"]:
                    del self._calls[part["call_id"]]
            elif kind in ("reasoning", "text"):
                self._reasoning_owner.pop(part_id, None)
                self._text_owner.pop(part_id, None)
                self._pruned.pop(part_id, None)
                self._restored.pop(part_id, None)

    def _prune(self, payload: OutputsPruned, at: datetime) -> Change:
        """Tool results show the placeholder; reasoning parts are left out (no placeholder:
        a render sends nothing of them, so they count nothing)."""
        pruned = []
        for part_id in dict.fromkeys(payload.part_ids):
            reasoning = part_id in self._reasoning_owner
            if not (reasoning or part_id in self._result_owner) or part_id in self._pruned:
                continue
            placeholder = payload.placeholder.replace("{part_id}", part_id)
            tokens = payload.placeholder_tokens
            if reasoning:
                tokens = 0
            elif tokens is None:
                tokens = estimate_tokens(placeholder)
            self._pruned[part_id] = PruneMark(placeholder, tokens, at, payload.reason)
            self._previewed.pop(part_id, None)
            self._restored.pop(part_id, None)
            pruned.append(part_id)
        self._recount_parts(pruned)
        return Change(pruned=tuple(pruned))

    def _restore(self, part_ids: tuple[str, ...], counted: Mapping[str, int]) -> Change:
        restored = []
        for part_id in dict.fromkeys(part_ids):
            if not self.is_restorable(part_id):
                continue  # already shown in full: nothing to restore
            self._pruned.pop(part_id, None)
            self._previewed.pop(part_id, None)
            self._restored[part_id] = counted.get(part_id)
            restored.append(part_id)
        self._recount_parts(restored)
        return Change(restored=tuple(restored))

    def _preview(self, payload: PartsPreviewed) -> Change:
        """Live tool results and calls, not pruned nor previewed already, show their preview."""
        previewed = []
        for part_id, cut in payload.previews.items():
            live = part_id in self._result_owner or part_id in self._call_owner
            if not live or part_id in self._previewed or part_id in self._pruned:
                continue  # not live, previewed already, or a placeholder shows less already
            self._previewed[part_id] = PreviewMark(cut.chars, cut.tokens, payload.notice, cut.tail)
            self._restored.pop(part_id, None)
            previewed.append(part_id)
        self._recount_parts(previewed)
        return Change(previewed=tuple(previewed))

    def _compact(self, payload: ContextCompacted, ref: EventRef) -> Change:
        # A provider's compaction item replaces everything before it, pins included: the
        # provider dropped them, and sending them back before the item is refused. Only the
        # system prompt, which no provider counts among the messages, stays.
        always_kept = (
            {i for i, e in self._entries.items() if e.message["role"] == "system"}
            if is_provider_summary(payload.summary)
            else self._always_kept()
        )
        replaced = [
            i for i in payload.replaced_message_ids if i in self._entries and i not in always_kept
        ]
        for message_id in replaced:
            self._drop(message_id)
        if payload.summary.id in self._entries:
            return Change(removed=tuple(replaced))  # a message id is live once
        ordered = list(self._entries.items())
        boundary = next(
            (n for n, (i, _) in enumerate(ordered) if i == payload.first_kept_message_id),
            len(ordered),
        )
        self._entries = dict(ordered[:boundary])
        added = self._add(plain_message(payload.summary), ref, summary=True)
        self._entries.update(ordered[boundary:])
        return Change(added=added.added, removed=tuple(replaced))

    def _reinstate(self, payload: MessagesRestored, ref: EventRef) -> Change:
        """Put restored messages back, each before its anchor (at the end without a live one);
        the drop's marker leaves."""
        removed: tuple[str, ...] = ()
        marker = payload.marker_message_id
        if marker is not None and marker in self._entries:
            self._drop(marker)
            removed = (marker,)
        added: list[str] = []
        for message in payload.messages:
            if message.id in self._entries:
                continue  # live already: a message id is live once
            self._add(plain_message(message), ref, summary=message.id in payload.summary_ids)
            added.append(message.id)
            anchor = payload.before.get(message.id)
            if anchor is not None and anchor in self._entries:
                ordered = [item for item in self._entries.items() if item[0] != message.id]
                at = next(n for n, (i, _) in enumerate(ordered) if i == anchor)
                ordered.insert(at, (message.id, self._entries[message.id]))
                self._entries = dict(ordered)
        return Change(added=tuple(added), removed=removed)

    def _always_kept(self) -> set[str]:
        return always_kept(
            [(i, e.message["role"], e.message["parts"]) for i, e in self._entries.items()],
            self.pinned,
        )

    # token accounting

    def _recount_parts(self, part_ids: list[str]) -> None:
        for message_id in dict.fromkeys(self._owner(p) for p in part_ids):
            if message_id is not None:
                self._recount(self._entries[message_id])

    def _owner(self, part_id: str) -> str | None:
        """The live message holding a result, reasoning or truncated text part."""
        for owners in (
            self._result_owner,
            self._reasoning_owner,
            self._text_owner,
            self._call_owner,
        ):
            if part_id in owners:
                return owners[part_id]
        return None

    def _recount(self, entry: _Entry) -> None:
        tokens = sum(self._part_tokens(part) for part in entry.message["parts"])
        self.tokens += tokens - entry.tokens
        entry.tokens = tokens
        entry.shown = None  # a pruned or restored output changes how the message shows

    def _part_tokens(self, part: PlainPart) -> int:
        kind, part_id = part["type"], part["id"]
        if kind == "reasoning" and part_id in self._pruned:
            return 0  # cleared: left out of every render
        if kind == "text" and part.get("truncation") is not None and part_id in self._restored:
            counted = self._restored[part_id]
            return counted if counted is not None else original_text_tokens(part)
        cut = self._previewed.get(part_id)
        if kind == "tool_call" and cut is not None:
            return cut.tokens
        if kind != "tool_result":
            return stored_tokens(part)
        mark = self._pruned.get(part_id)
        if mark is not None:
            return mark.tokens
        if part_id in self._restored:
            counted = self._restored[part_id]
            return counted if counted is not None else original_result_tokens(part)
        return cut.tokens if cut is not None else shown_result_tokens(part)

    # reading the state

    def _part(self, owner: str, part_id: str) -> PlainPart:
        """A part of a live message, its original read (the accessors hand out models)."""
        self._read_originals([self._entries[owner]])
        return self._stored_part(owner, part_id)

    def _stored_part(self, owner: str, part_id: str) -> PlainPart:
        part: PlainPart
        for part in self._entries[owner].message["parts"]:
            if part["id"] == part_id:
                return part
        raise KeyError(part_id)  # pragma: no cover - the index and the entries agree

    def _read_originals(self, entries: Iterable[_Entry]) -> None:
        """Join the originals the read path left unread in these entries (one read per
        session), then check the messages as a stored one is checked (`checked_message`)."""
        unread = [entry for entry in entries if entry.message["id"] in self._unread]
        if not unread:
            return
        if self.bodies is None:
            raise InvalidEvent("a message's original was not read, and no store was given")
        referenced = [body_digests(_APPENDED, {"message": entry.message}) for entry in unread]
        wanted: dict[str, set[str]] = {}
        for entry, digests in zip(unread, referenced, strict=True):
            wanted.setdefault(entry.ref[0], set()).update(digests)
        texts = {session: self.bodies(session, digests) for session, digests in wanted.items()}
        for entry, digests in zip(unread, referenced, strict=True):
            found = texts[entry.ref[0]]
            missing = {digest for digest in digests if digest not in found}
            if missing:
                raise InvalidEvent(
                    f"the message stored at seq {entry.ref[1]} of {entry.ref[0]!r} references "
                    f"body {min(missing)}, which the store does not hold and no redaction deleted"
                )
            join_bodies(_APPENDED, {"message": entry.message}, found)
            self._replace(entry, checked_message(entry.message, entry.ref))
            self._unread.discard(entry.message["id"])

    @property
    def live_count(self) -> int:
        """How many messages the live context holds."""
        return len(self._entries)

    def message_ids(self) -> list[str]:
        """Ids of the live messages, in context order."""
        return list(self._entries)

    def message(self, message_id: str) -> Message:
        """A live message as stored, as a model."""
        entry = self._entries[message_id]
        self._read_originals([entry])
        return Message.model_validate(entry.message)

    def live_message(self, message_id: str) -> LiveMessage:
        """One live message as the model is shown it, as `live_messages` renders it (cached
        until the fold changes how it is shown): a view reads a message's new form after an
        event without rendering the whole context."""
        return self._shown(self._entries[message_id]).model()

    def is_live(self, message_id: str) -> bool:
        return message_id in self._entries

    def tool_result(self, part_id: str) -> ToolResultPart | None:
        """A live tool-result part by id, or `None`."""
        owner = self._result_owner.get(part_id)
        return None if owner is None else ToolResultPart.model_validate(self._part(owner, part_id))

    def pruned_part_ids(self) -> list[str]:
        """Live tool results now shown as a placeholder, oldest first, then cleared reasoning
        parts."""
        results = [p for p in self._result_owner if p in self._pruned]
        return results + [p for p in self._reasoning_owner if p in self._pruned]

    def previewed_part_ids(self) -> list[str]:
        """Live tool results and calls now shown cut to a preview, oldest first."""
        return list(self._previewed)

    def has_restorable_part(self, part_id: str) -> bool:
        """Whether `part_id` is a live part a restore can name: a tool result, a reasoning
        part, a text part that was truncated, or a tool call (its arguments may be cut to a
        preview)."""
        return self._owner(part_id) is not None

    def is_restorable(self, part_id: str) -> bool:
        """Whether a live part shows less than its original: a tool result pruned or
        truncated, reasoning cleared, a long text truncated."""
        if part_id in self._reasoning_owner:
            return part_id in self._pruned
        if part_id in self._text_owner:
            return part_id not in self._restored
        if part_id in self._previewed:
            return True
        if part_id in self._call_owner:
            return False
        owner = self._result_owner.get(part_id)
        if owner is None or part_id in self._restored:
            return False
        truncation = self._stored_part(owner, part_id).get("truncation")
        return part_id in self._pruned or truncation is not None

    def truncated_text(self, part_id: str) -> TextPart | None:
        """A live text part that was truncated (a long user message), by id, or `None`."""
        owner = self._text_owner.get(part_id)
        return None if owner is None else TextPart.model_validate(self._part(owner, part_id))

    def tool_call(self, call_id: str) -> ToolCallPart | None:
        """The live tool call with this call id, or `None`."""
        call = self._calls.get(call_id)
        return None if call is None else ToolCallPart.model_validate(call)

    def is_call_id_used(self, call_id: str) -> bool:
        """Whether a live call or a live result already uses `call_id`."""
        return call_id in self._calls or call_id in self._answers

    def is_pending(self, call_id: str) -> bool:
        """Whether a live tool call `call_id` has no live result yet."""
        return call_id in self._calls and call_id not in self._answers

    def pending_call_ids(self) -> list[str]:
        """Tool calls in the live context that no live result answers yet, in call order."""
        return [call_id for call_id in self._calls if call_id not in self._answers]

    def live_messages(self, *, restore_pruned: bool = False) -> tuple[LiveMessage, ...]:
        """The live context as the model is shown it, as models (`shown_messages` is the same
        as plain dicts, which is what the renders read); with `restore_pruned`, every tool
        result shows its full original output instead."""
        return tuple(shown.model() for shown in self.shown_messages(restore_pruned))

    def shown_messages(self, restore_pruned: bool = False) -> tuple[ShownMessage, ...]:
        """The live context as the model is shown it, each message as the JSON of its
        `LiveMessage` (with its model built once asked for)."""
        if restore_pruned:
            entries = self._entries.values()
            self._read_originals(entries)  # every original is shown: one read per session
            return tuple(ShownMessage(self._live_message(entry, True)) for entry in entries)
        return tuple(self._shown(entry) for entry in self._entries.values())

    def _shown(self, entry: _Entry) -> ShownMessage:
        if entry.shown is None:
            entry.shown = ShownMessage(self._live_message(entry, False))
        return entry.shown

    def _live_message(self, entry: _Entry, restore_pruned: bool) -> PlainMessage:
        if entry.message["id"] in self._unread and (
            restore_pruned or any(part["id"] in self._restored for part in entry.message["parts"])
        ):
            self._read_originals([entry])  # a restore shows them
        message = entry.message
        parts: list[PlainPart] = []
        status: dict[str, str] = {}
        cleared = False
        for part in message["parts"]:
            kind, part_id = part["type"], part["id"]
            if kind == "tool_result":
                parts.append(self._live_result(part, restore_pruned))
            elif kind == "reasoning" and part_id in self._pruned and not restore_pruned:
                cleared = True  # an older turn's reasoning, cleared: no render sends it
            elif kind == "text" and part.get("truncation") is not None:
                parts.append(self._live_text(part, restore_pruned))
            elif kind == "tool_call" and (part_id in self._previewed or part_id in self._restored):
                # how its call shows when not as recorded (`LiveMessage.call_status`)
                cut = self._previewed.get(part_id)
                if cut is None or restore_pruned:
                    status[part_id] = "restored"
                    parts.append(part)
                    continue
                status[part_id] = "previewed"
                arguments = preview(
                    part.get("arguments", "{}"), cut.chars, cut.notice, part_id, arguments=True
                )
                parts.append({**part, "arguments": arguments, "tokens": cut.tokens, "native": None})
            else:
                parts.append(part)
        tokens = entry.tokens if not restore_pruned else sum(_live_part_tokens(p) for p in parts)
        shown: PlainMessage = {
            "id": message["id"],
            "role": message["role"],
            "parts": parts,
            "usage": message.get("usage"),
            "tokens": tokens,
            "pinned": message["id"] in self.pinned,
            "summary": entry.summary,
        }
        if message.get("native") is not None:
            shown["native"] = message["native"]
        if status:
            shown["call_status"] = status
        if cleared:
            shown["reasoning_cleared"] = True
        return shown

    def _live_text(self, part: PlainPart, restore_pruned: bool) -> PlainPart:
        """A truncated text part as the model is shown it: `text` is the truncated view (its
        provider block left out, which holds the original) and `truncation` says it was cut;
        restored, `text` is the original again, counted in full."""
        if restore_pruned or part["id"] in self._restored:
            counted = self._restored.get(part["id"])
            tokens = counted if counted is not None else original_text_tokens(part)
            return {**part, "tokens": tokens}
        return {**part, "text": part["truncation"]["shown"], "native": None}

    def _live_result(self, part: PlainPart, restore_pruned: bool) -> PlainPart:
        """A tool result as the JSON of its `LiveToolResult`."""
        part_id = part["id"]
        mark = self._pruned.get(part_id)
        truncation = part.get("truncation")
        shown: PlainPart = {
            "type": "tool_result",
            "id": part_id,
            "call_id": part["call_id"],
            "name": part.get("name"),
            "is_error": part.get("is_error", False),
        }
        if restore_pruned or part_id in self._restored:
            cut = (
                mark is not None
                or truncation is not None
                or part_id in self._restored
                or part_id in self._previewed
            )
            counted = self._restored.get(part_id)
            shown["output"] = part["output"]
            shown["tokens"] = counted if counted is not None else original_result_tokens(part)
            shown["status"] = "restored" if cut else "original"
            if part.get("blocks") is not None:
                shown["blocks"] = part["blocks"]
            return shown
        if mark is not None:
            shown["output"] = mark.placeholder
            shown["tokens"] = mark.tokens
            shown["status"] = "pruned"
            shown["compacted_at"] = mark.at
            return shown
        output = part["output"] if truncation is None else truncation["shown"]
        head = self._previewed.get(part_id)
        if head is not None:
            shown["output"] = preview(
                output, head.chars, head.notice, part_id, arguments=False, tail=head.tail
            )
            shown["tokens"] = head.tokens
            shown["status"] = "previewed"
            return shown
        shown["output"] = output
        shown["tokens"] = shown_result_tokens(part)
        shown["status"] = "truncated" if truncation is not None else "original"
        if truncation is None and part.get("blocks") is not None:
            shown["blocks"] = part["blocks"]
        return shown

    # snapshots

    def to_snapshot(self) -> dict[str, Any]:
        """The state as JSON (`SnapshotState`), with messages by reference: a snapshot stays
        small however large the outputs, and the messages are read back from their events."""
        assert self.header is not None and self.time is not None
        sessions = list(dict.fromkeys(entry.ref[0] for entry in self._entries.values()))
        index = {session_id: n for n, session_id in enumerate(sessions)}
        state: dict[str, Any] = {
            "session_id": self.session_id,
            "seq": self.seq,
            "hash": self.hash,
            "time": format_timestamp(self.time),
            "header": self.header.model_dump(mode="json"),
            "sessions": sessions,
            "entries": [
                [message_id, index[entry.ref[0]], entry.ref[1], int(entry.summary)]
                for message_id, entry in self._entries.items()
            ],
            "pruned": {
                part_id: [mark.placeholder, mark.tokens, format_timestamp(mark.at), mark.reason]
                for part_id, mark in self._pruned.items()
            },
            "restored": sorted(self._restored),
            **self._restored_counts(),
            **self._previews(),
            "pinned": sorted(self.pinned),
            "state": self.state,
            "tokens": self.tokens,
            "usage_base": list(self.usage_base) if self.usage_base else None,
            "last_compaction": list(self.last_compaction) if self.last_compaction else None,
        }
        state["digest"] = snapshot_digest(state)
        return state

    def _restored_counts(self) -> dict[str, Any]:
        """The originals' counts restores recorded; absent when none did, so snapshots of
        sessions without one read as they were written before counts were recorded."""
        counts = {p: n for p, n in sorted(self._restored.items()) if n is not None}
        return {"restored_tokens": counts} if counts else {}

    def _previews(self) -> dict[str, Any]:
        """The parts shown as previews; absent when none are, so snapshots of sessions without
        one read as they were written before previews existed."""
        previews = {
            p: [c.chars, c.tokens, c.notice] + ([c.tail] if c.tail else [])
            for p, c in self._previewed.items()
        }
        return {"previewed": previews} if previews else {}

    @staticmethod
    def snapshot_refs(state: SnapshotState) -> list[tuple[EventRef, bool]]:
        """Where the snapshot's messages are stored, and whether each is a summary."""
        return [((state.sessions[s], seq), bool(summary)) for _, s, seq, summary in state.entries]

    @classmethod
    def from_snapshot(
        cls, state: SnapshotState, messages: Mapping[EventRef, PlainMessage | Message]
    ) -> ContextFold:
        """Rebuild a fold from a parsed snapshot and the messages its refs point to;
        `ValueError` when the two disagree."""
        fold = cls(
            session_id=state.session_id,
            seq=state.seq,
            hash=state.hash,
            time=datetime.fromisoformat(state.time),
            header=state.header,
            pinned=set(state.pinned),
            state=dict(state.state),
        )
        fold._pruned = {
            part_id: PruneMark(placeholder, tokens, datetime.fromisoformat(at), reason)
            for part_id, (placeholder, tokens, at, reason) in state.pruned.items()
        }
        fold._restored = dict.fromkeys(state.restored)
        fold._restored.update(
            (p, n) for p, n in state.restored_tokens.items() if p in fold._restored
        )
        fold._previewed = {part_id: PreviewMark(*mark) for part_id, mark in state.previewed.items()}
        unshown = fold._pruned.keys()  # their bodies may be unread (`decode_for_fold`)
        for message_id, s, seq, summary in state.entries:
            ref = (state.sessions[s], seq)
            stored = messages[ref]
            if isinstance(stored, Message):
                message = plain_message(stored)
            else:
                message = checked_message(stored, ref, unshown)
            if message["id"] != message_id or message_id in fold._entries:
                raise ValueError(
                    f"snapshot expects message {message_id} at {ref}, not {message['id']}"
                )
            fold._add(message, ref, summary=bool(summary), unshown=unshown)
        if not fold.pinned <= fold._entries.keys():
            raise ValueError("snapshot pins a message it does not hold")
        if fold.tokens != state.tokens:
            raise ValueError("snapshot token total does not match its messages")
        fold.usage_base = state.usage_base
        fold.last_compaction = state.last_compaction
        return fold


def always_kept(
    messages: Sequence[tuple[str, str, Sequence[object]]], pinned: Set[str]
) -> set[str]:
    """Ids of the messages no compaction removes: system and pinned messages, with the other
    half of every tool call/result pair they hold, so a kept call never loses its result (nor
    a kept result its call). `messages` are (id, role, parts) in context order."""
    kept = {
        message_id for message_id, role, _ in messages if role == "system" or message_id in pinned
    }
    while True:
        call_ids = {
            call_id
            for message_id, _, parts in messages
            if message_id in kept
            for call_id in _call_ids(parts)
        }
        grown = kept | {
            message_id for message_id, _, parts in messages if call_ids & _call_ids(parts)
        }
        if grown == kept:
            return kept
        kept = grown


def _call_ids(parts: Sequence[object]) -> set[str]:
    """The call ids of the calls and results among `parts` (models or stored JSON)."""
    return {field(p, "call_id") for p in parts if field(p, "type") in ("tool_call", "tool_result")}


def _live_part_tokens(part: PlainPart) -> int:
    return int(part["tokens"]) if part["type"] == "tool_result" else stored_tokens(part)
