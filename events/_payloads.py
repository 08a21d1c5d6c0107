"""Event payloads: one pydantic model per kind of change, in one union discriminated on `type`.

Principle: an event records what the model was shown, not a recipe to recompute it, so replay
gives the same context whatever version of the code replays it. Each model states the
`schema_version` it writes; older stored versions are upgraded on read (`UPCASTERS`, in
`events._codec`).

Truncation is not an event of its own: a `ToolResultPart` carries its `truncation` (the exact
text shown and the limits used) next to the full `output`, so the cut is recorded atomically
with the result it cuts.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, JsonValue

from sessionstore.events._messages import FrozenModel, Message, Record

CompactionReason = Literal["before_llm_call", "after_tool", "manual", "provider"]
"""Why a compaction was made: a check before a model call or after tool results, a caller's
request, or the provider's own (its compaction item or block in a response, recorded as it
came: see `sessionstore.providers`), or an agent framework's (an ADK compaction event)."""
PartIds = Annotated[tuple[Annotated[str, Field(min_length=1)], ...], Field(min_length=1)]
Label = Annotated[str, Field(min_length=1, max_length=128)]
"""An app, user or tag name: what sessions are listed by."""
Tags = Annotated[tuple[Label, ...], Field(max_length=64)]


class Payload(FrozenModel):
    """Base of event payloads; `schema_version` is the version this code writes."""

    schema_version: ClassVar[int] = 1


class SessionStarted(Payload):
    """Always the first event of a session: what it is and how its context is managed."""

    type: Literal["SessionStarted"] = "SessionStarted"
    title: str = ""
    model: str = ""
    context_window: int | None = Field(default=None, gt=0)
    output_reserve: int = Field(default=4096, ge=0)
    encoding: str = "cl100k_base"
    compression: dict[str, JsonValue] = Field(default_factory=dict)
    parent_session_id: str | None = None
    parent_seq: int | None = Field(default=None, ge=1)
    parent_hash: str | None = Field(
        default=None, pattern="^[0-9a-f]{64}$", exclude_if=lambda value: value is None
    )
    """The hash of the parent's event at `parent_seq`: a fork names exactly the history it
    continues, so a fork cannot be pointed at another session's events (forks written before
    this field existed have none)."""
    app: Label | None = Field(default=None, exclude_if=lambda value: value is None)
    user: Label | None = Field(default=None, exclude_if=lambda value: value is None)
    tags: Tags = Field(default=(), exclude_if=lambda value: not value)
    """What the session is listed by (`SessionStore.sessions(app=, user=, tag=)`): the app
    that runs it, the user who owns it, free tags. `MetadataChanged` replaces them."""


class MessageAppended(Payload):
    type: Literal["MessageAppended"] = "MessageAppended"
    message: Message


class OutputsPruned(Payload):
    """Tool outputs that leave the live context; each shows `placeholder` instead. Reasoning
    parts named here (an older turn's thinking, cleared before any output) leave with no
    placeholder: renders send nothing of them. `OutputsRestored` brings either back.

    `{part_id}` in the placeholder stands for each part's own id, so one event can tell the
    model how to get every output back. `placeholder_tokens` counts one rendered placeholder.
    """

    type: Literal["OutputsPruned"] = "OutputsPruned"
    part_ids: PartIds
    placeholder: str
    placeholder_tokens: int | None = Field(default=None, ge=0)
    tokens_freed: int = Field(ge=0)
    reason: str = ""


class OutputsRestored(Payload):
    """Pruned or truncated outputs whose originals return to the live context.
    `output_tokens` holds the count of each truncated original, taken when it was restored
    (an append counts only what the model is shown)."""

    type: Literal["OutputsRestored"] = "OutputsRestored"
    part_ids: PartIds
    output_tokens: dict[str, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, exclude_if=lambda value: not value
    )


class Preview(FrozenModel):
    """One part cut to a preview: the first `chars` characters of what the model was shown of
    it (a tool result's shown output, a tool call's arguments), then the event's notice, then
    (a tool result only) its last `tail` characters; `tokens` counts the preview as rendered.

    The tail is for the newest step's results cut to fit the window (`sessionstore.context`'s
    `fit_newest`): a test log's verdict and a stack trace's last frame are at the end. It is
    left out of the stored form when 0, so previews written before it hash as they did."""

    chars: int = Field(ge=0)
    tokens: int = Field(ge=0)
    tail: int = Field(default=0, ge=0, exclude_if=lambda value: not value)


class PartsPreviewed(Payload):
    """Long fields of tool blocks that stay in the context, cut to a preview: each tool result
    shows the head of its output, each tool call its arguments' head inside a small JSON object
    (`{"_preview": ..., "_note": ...}`, so every provider still gets an object), followed by
    `notice`. The event holds no content, only where each cut falls, so a redaction of the
    original leaves nothing behind and replay shows the same text. `OutputsRestored` brings
    the originals back.

    `{part_id}` and `{omitted}` (characters cut, with thousands separators) in the notice stand
    for each part's own values, as in `OutputsPruned.placeholder`."""

    type: Literal["PartsPreviewed"] = "PartsPreviewed"
    previews: dict[Annotated[str, Field(min_length=1)], Preview] = Field(min_length=1)
    notice: str = Field(min_length=1, max_length=500)
    tokens_freed: int = Field(ge=0)
    strategy: str = Field(default="", max_length=64, exclude_if=lambda value: not value)
    why: str = Field(default="", max_length=500, exclude_if=lambda value: not value)


class ContextCompacted(Payload):
    """The head of the conversation, up to `first_kept_message_id`, replaced by `summary`."""

    type: Literal["ContextCompacted"] = "ContextCompacted"
    summary: Message
    first_kept_message_id: str = Field(min_length=1)
    replaced_message_ids: tuple[str, ...]
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    reason: CompactionReason
    summarizer: str = Field(min_length=1)
    strategy: str = Field(default="", max_length=64, exclude_if=lambda value: not value)
    """The context strategy that made this decision (`CompressionConfig.strategy`); empty in
    events written before strategies existed, and left out of the stored form when empty so
    their hashes do not change."""
    why: str = Field(default="", max_length=500, exclude_if=lambda value: not value)
    """The strategy's own account of what it removed and why, shown by the timeline."""


class RecordAppended(Payload):
    """An entry a framework or a source format keeps that is not a message, verbatim (`Record`):
    the log holds everything it was given, in order, while the context holds only messages."""

    type: Literal["RecordAppended"] = "RecordAppended"
    record: Record


class MessagesReverted(Payload):
    """An undo: the messages after `after_message_id` leave the live context (replay keeps them)."""

    type: Literal["MessagesReverted"] = "MessagesReverted"
    after_message_id: str = Field(min_length=1)
    reverted_message_ids: tuple[str, ...]
    strategy: str = Field(default="", max_length=64, exclude_if=lambda value: not value)
    """Set when a context strategy (not an undo) took the messages out, with no marker: the
    ids need not follow `after_message_id` then (it names the kept message before the first
    of them, or the first kept message). Left out of the stored form when empty."""
    why: str = Field(default="", max_length=500, exclude_if=lambda value: not value)


class MessagesRestored(Payload):
    """Messages a context strategy or a compaction took out (the event at `undone_seq`) come
    back to the live context: copies of the originals in the log, each placed before the live
    message `before` names for it (at the end when none), in the order given. The drop's
    marker or summary (`marker_message_id`) leaves: what it stood for is back."""

    type: Literal["MessagesRestored"] = "MessagesRestored"
    undone_seq: int = Field(ge=1)
    messages: tuple[Message, ...] = Field(min_length=1)
    before: dict[str, str] = Field(default_factory=dict)
    summary_ids: tuple[str, ...] = ()
    """Restored messages that were compaction summaries (they stay marked as such)."""
    marker_message_id: str | None = None


class MessagePopped(Payload):
    """The newest live message leaves the live context, whatever it is (a tool result too): a
    framework's "pop the last item". Replay before this event still shows it."""

    type: Literal["MessagePopped"] = "MessagePopped"
    message_id: str = Field(min_length=1)


class SessionCleared(Payload):
    """The live context starts empty again (a framework's "clear session"): every live message
    leaves it, with its pins and pending calls. `cleared_message_ids` names them, for audits.
    The history stays (replay before this event shows it; nothing is deleted, which is what a
    purge is for), and so does the session's state."""

    type: Literal["SessionCleared"] = "SessionCleared"
    cleared_message_ids: tuple[str, ...]
    reason: str = ""


class StateChanged(Payload):
    """A delta to the session's key-value state: `values` sets each key to its JSON value,
    `removed` deletes keys. The state after any event is every delta up to it, in order, so it
    replays like the context; a fork starts from its parent's state at the fork point."""

    type: Literal["StateChanged"] = "StateChanged"
    values: dict[str, JsonValue] = Field(default_factory=dict)
    removed: tuple[str, ...] = ()


class ContentRedacted(Payload):
    """Content removed from the store for good (a leaked secret, a user's request to delete):
    the bodies `digests` of the parts `part_ids` are deleted. The events and their hashes stay,
    so every chain still verifies; replays, renders and exports show `[redacted: <reason>]`
    where the content was, and no restore brings it back. Every part of the session whose
    content is one of `digests` is named, so the live context and a replay agree: copies an
    undo restored, and the compaction summaries written after the content (which could quote
    it). A digest that is the session's title's retitles the session."""

    type: Literal["ContentRedacted"] = "ContentRedacted"
    part_ids: tuple[Annotated[str, Field(min_length=1)], ...]
    """May be empty: a purge of a session whose only content is its title names no part."""
    digests: tuple[Annotated[str, Field(pattern="^[0-9a-f]{64}$")], ...] = Field(min_length=1)
    reason: str = Field(min_length=1, max_length=500)

    @property
    def placeholder(self) -> str:
        return redaction_placeholder(self.reason)


REDACTED_PREFIX = "[redacted: "


def redaction_placeholder(reason: str) -> str:
    return f"{REDACTED_PREFIX}{reason}]"


class MetadataChanged(Payload):
    """New listing metadata for the session: `app`, `user` and `tags` as a whole (a field left
    out is cleared)."""

    type: Literal["MetadataChanged"] = "MetadataChanged"
    app: Label | None = None
    user: Label | None = None
    tags: Tags = ()


class CompressionChanged(Payload):
    """New context-management settings for the session (a full `CompressionConfig` object)."""

    type: Literal["CompressionChanged"] = "CompressionChanged"
    compression: dict[str, JsonValue]


class MessagePinned(Payload):
    """A message compaction must always keep."""

    type: Literal["MessagePinned"] = "MessagePinned"
    message_id: str = Field(min_length=1)


class MessageUnpinned(Payload):
    type: Literal["MessageUnpinned"] = "MessageUnpinned"
    message_id: str = Field(min_length=1)


EventPayload = Annotated[
    SessionStarted
    | MessageAppended
    | OutputsPruned
    | OutputsRestored
    | ContextCompacted
    | MessagesReverted
    | MessagePinned
    | MessageUnpinned
    | CompressionChanged
    | ContentRedacted
    | MessagePopped
    | MessagesRestored
    | SessionCleared
    | StateChanged
    | MetadataChanged
    | RecordAppended
    | PartsPreviewed,
    Field(discriminator="type"),
]

PAYLOAD_TYPES: tuple[type[Payload], ...] = (
    SessionStarted,
    MessageAppended,
    OutputsPruned,
    OutputsRestored,
    ContextCompacted,
    MessagesReverted,
    MessagePinned,
    MessageUnpinned,
    CompressionChanged,
    ContentRedacted,
    MessagePopped,
    MessagesRestored,
    SessionCleared,
    StateChanged,
    MetadataChanged,
    RecordAppended,
    PartsPreviewed,
)
