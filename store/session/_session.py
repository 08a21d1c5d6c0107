"""`Session`: one agent session, as an agent loop uses it.

A `Session` holds the session's context fold at the version it last saw. Every append goes
through the store with that version as `expected_version`, so two handles on one session can
never interleave silently: the one that is behind gets `ConcurrencyError` and can `refresh()`
and decide again. Reads (`context()`, `timeline()`) first fold in whatever other writers
appended, so they always show the session as it is.

The handle checks every argument and keeps the fold; the decisions are made elsewhere, each
behind a narrow interface: the window (checks, compaction, pruning) by
`sessionstore.context.WindowKeeper`, the caller's edits of what the context shows (restore,
redact, revert, undo, pin, pop, clear) by `ContextEdits`, the cuts a part gets at append by
`sessionstore.context`.
"""

from __future__ import annotations

import copy
import functools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar, get_args

from pydantic import JsonValue, ValidationError

from sessionstore.context import (
    CompactionProposal,
    Confirm,
    ContextCheck,
    ExtractiveSummarizer,
    Measure,
    PrunePlan,
    SessionView,
    Summarizer,
    WindowKeeper,
    WindowMemory,
    append_span,
    count,
    shortened_user_text,
    truncated_result,
    with_tokens,
)
from sessionstore.events import (
    CompactionReason,
    CompressionChanged,
    CompressionConfig,
    InvalidArgument,
    InvalidEvent,
    Message,
    MessageAppended,
    MetadataChanged,
    Native,
    NativePart,
    NewEvent,
    Part,
    Payload,
    Record,
    RecordAppended,
    RecordedEvent,
    SessionStarted,
    TextPart,
    ToolResultPart,
    Usage,
    brief,
    describe_validation_error,
    described,
    new_id,
)
from sessionstore.log import MAX_SEQ, EventLog, check_text_size
from sessionstore.projections import (
    ArtifactTrail,
    Context,
    ContextFold,
    TimelineRow,
    ToolMap,
    artifact_trail,
    context_of,
    history_markdown,
    markdown_of,
    timeline,
)
from sessionstore.providers import anthropic_message, chat_message, responses_message
from sessionstore.session import _arguments as check
from sessionstore.session._conversation import check_message, pending_call
from sessionstore.session._edits import ContextEdits
from sessionstore.session._fork import fork_header
from sessionstore.session._responses import response_events
from sessionstore.session._state import state_changes, state_delta
from sessionstore.session._tool_calls import (
    ToolCall as ToolCall,  # re-exported: its home used to be here
)
from sessionstore.session._tool_calls import ToolCallLike
from sessionstore.session._tool_calls import tool_calls as tool_calls_of
from sessionstore.session._tool_results import ResultBlock, result_content
from sessionstore.storage import Head

log = logging.getLogger("sessionstore")

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _serialized(
    method: Callable[Concatenate[Session, _P], _R],
) -> Callable[Concatenate[Session, _P], _R]:
    """Run a `Session` method under the handle's lock: a handle shared by threads then reads
    and decides on one state of its fold at a time (a check plans and appends as one step)."""

    @functools.wraps(method)
    def serialized(self: Session, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)

    return serialized


_COMPACTION_REASONS: tuple[CompactionReason, ...] = tuple(
    reason for reason in get_args(CompactionReason) if reason != "provider"
)
"""What a caller may name as a compaction's reason: `provider` is the provider's own, recorded
from its response."""


class Session:
    """A handle on one session; get one from `SessionStore.create_session`, `.session(id)` or
    `.fork(...)`."""

    def __init__(self, log: EventLog, fold: ContextFold, snapshot_seq: int = 0) -> None:
        self._lock = threading.RLock()
        self._log = log
        self._fold = fold
        self._snapshot_seq = snapshot_seq
        self.summarizer: Summarizer = ExtractiveSummarizer()
        """Used by `compact()` and the automatic checks unless a call names another."""
        self._live: tuple[tuple[int, bool], Context] | None = None  # the last context built
        self._config: tuple[SessionStarted, CompressionConfig] | None = None
        self._stale = False  # the fold missed events that are stored: reload before use
        self._config_warned = False
        self._window_memory = WindowMemory()
        """What context management keeps from one check of this handle to the next."""

    @property
    def _window(self) -> WindowKeeper:
        """Context management on this handle: its checks and compactions. Made for each call,
        as `_edits` is: kept here, it would hold the handle through its view, and a handle its
        caller dropped would wait for the cyclic collector, fold and all, instead of being
        freed at once."""
        view = SessionView(
            fold=lambda: self._fold,
            live=self.context,
            append=self.append_events,
            read=lambda first, last: self._log.read(self.id, first, last),
            clock=self._log.now,
            count=self._count,
            config=lambda: self.config,
            summarizer=lambda: self.summarizer,
        )
        return WindowKeeper(view, self._window_memory)

    @property
    def _edits(self) -> ContextEdits:
        """The caller's own edits of what the context shows (see `_window`)."""
        return ContextEdits(self._log, lambda: self._fold, self._catch_up, self.append_events)

    def __repr__(self) -> str:
        return f"<Session {self.id} at version {self.version}>"

    @property
    def id(self) -> str:
        return self._fold.session_id

    @property
    def version(self) -> int:
        """The last seq this handle has seen: its next append expects the head to be here."""
        return self._fold.seq

    @property
    def header(self) -> SessionStarted:
        """The session's `SessionStarted`: model, window, encoding, compression settings."""
        assert self._fold.header is not None
        return self._fold.header

    @property
    def config(self) -> CompressionConfig:
        """The context-management settings in force (`configure` changes them).

        Settings are checked before they are written, but a stored config this version
        refuses (written by an older one) must not make the session unusable: events are
        never rewritten, so the whole config falls back to the defaults, with one warning
        per handle, until `configure` writes a valid one."""
        header = self.header
        if self._config is None or self._config[0] is not header:
            self._config = (header, self._config_of(header))
        return self._config[1]

    def _config_of(self, header: SessionStarted) -> CompressionConfig:
        try:
            return CompressionConfig.model_validate(header.compression)
        except ValidationError as exc:
            if not self._config_warned:
                self._config_warned = True
                log.warning(
                    "session %s: its stored compression settings are invalid (%s); "
                    "using the defaults",
                    self.id,
                    describe_validation_error(exc),
                )
            return CompressionConfig()

    @property
    @_serialized
    def tokens(self) -> int:
        """The live context's size in tokens: the fold keeps it as events arrive, so this is
        cheap after every append (no context is built, nothing re-tokenized).

        It sums every live part's recorded count, whatever a render sends of it (reasoning of
        every provider, another provider's blocks as their JSON), without the synthetic result
        of a pending call: what the overflow policies measure. `context().tokens` counts what
        the render for the session's API sends (see `Context`)."""
        self._catch_up()
        return self._fold.tokens

    @property
    def seen_tokens(self) -> int:
        """`tokens` at `version`, as this handle last saw the session, with no read (`tokens`
        first folds in what other writers appended): what a property on an event loop can
        give (`AsyncSession.tokens`)."""
        return self._fold.tokens

    # appending messages

    def append_system(self, text: str) -> Message:
        check.text("text", text)
        return self.append_message(Message(role="system", parts=(TextPart(text=text),)))

    def append_user(self, text: str) -> Message:
        check.text("text", text)
        return self.append_message(Message(role="user", parts=(TextPart(text=text),)))

    def append_assistant(
        self,
        text: str = "",
        *,
        tool_calls: Iterable[ToolCallLike] | None = (),
        usage: Usage | None = None,
    ) -> Message:
        """An assistant turn: its text (may be empty when it only calls tools), its tool calls
        and the usage the provider reported for it.

        `tool_calls` takes `ToolCall`s, the SDK's own calls (`message.tool_calls` of a
        `ChatCompletion` as it comes, `None` included) or their dicts (see `ToolCall`); their
        arguments are recorded as the exact text the model produced."""
        check.text("text", text)
        calls = tool_calls_of(tool_calls)
        if usage is not None and not isinstance(usage, Usage):
            raise InvalidArgument(f"usage must be a Usage or None, got {described(usage)}")
        if calls:
            self._check_size(text, calls)  # before their inputs are dumped to JSON text
        parts: list[Part] = [TextPart(text=text)] if text or not calls else []
        parts.extend(call.to_part() for call in calls)
        return self.append_message(Message(role="assistant", parts=tuple(parts), usage=usage))

    @_serialized
    def append_tool_result(
        self,
        call_id: str,
        output: str | Sequence[ResultBlock | Mapping[str, Any]],
        *,
        is_error: bool = False,
        name: str | None = None,
        native: Native | None = None,
    ) -> Message:
        """The result of the pending tool call `call_id` (the tool's name is taken from it).

        `output` is the tool's text, or a list of content blocks, text and images, as any
        provider shapes them or as `TextPart`/`FilePart` (see
        `sessionstore.session._tool_results`): the result keeps the blocks, and its text (the text
        blocks joined) is what truncation and pruning act on; a truncated or pruned result shows
        only that text. `native` is kept as the message's envelope: what a framework recorded the
        result as (see `sessionstore.integrations`)."""
        if native is not None and not isinstance(native, Native):
            raise InvalidArgument(f"native must be a Native or None, got {described(native)}")
        part = self.tool_result_part(call_id, output, is_error=is_error, name=name)
        return self.append_message(Message(role="tool", parts=(part,), native=native))

    @_serialized
    def tool_result_part(
        self,
        call_id: str,
        output: str | Sequence[ResultBlock | Mapping[str, Any]],
        *,
        is_error: bool = False,
        name: str | None = None,
    ) -> ToolResultPart:
        """The part `append_tool_result` records, truncated by the session's limits for the
        tool, without appending it: for a framework whose one message answers several calls
        (an ADK event with parallel function responses), appended with `append_message`."""
        check.text("call_id", call_id)
        text, blocks = result_content(output)
        check.flag("is_error", is_error)
        check.optional_text("name", name)
        tool = name or pending_call(self._fold, call_id).name
        self._check_size(text, blocks, tool)
        try:
            return truncated_result(
                self.config,
                call_id,
                tool,
                text,
                header=self.header,
                is_error=is_error,
                blocks=blocks,
            )
        except UnicodeEncodeError as exc:  # the same refusal an append of the text would make
            raise InvalidEvent(
                f"output: text is not valid UTF-8 (lone surrogate at offset {exc.start})"
            ) from None

    @_serialized
    def append_message(
        self,
        message: Message,
        *,
        state: Mapping[str, Any] | None = None,
        event_id: str | None = None,
    ) -> Message:
        """Append any message; parts without a token count are counted now. `state` sets keys
        of the session's state in the same transaction (a framework's event that says
        something and changes state, as an ADK event with a `state_delta`), as
        `update_state` would. `event_id` is the idempotency key of the message's event (see
        `NewEvent`), for a framework whose own event ids must be unique in a session."""
        if not isinstance(message, Message):
            raise InvalidArgument(f"message must be a Message, got {described(message)}")
        changes = state_changes(self._fold.state, state)
        check_message(self._fold, message)
        self._check_size(message)
        encoding = self.header.encoding
        parts = message.parts
        if message.role == "user":  # cut before counting: a huge text is never tokenised whole
            config, header = self.config, self.header
            parts = tuple(shortened_user_text(part, config, header) for part in parts)
        parts = tuple(with_tokens(part, encoding) for part in parts)
        counted = message.model_copy(update={"parts": parts})
        self.append_events([_keyed(MessageAppended(message=counted), event_id), *changes])
        return counted

    # appending what a provider's SDK returned, verbatim

    def append_anthropic(
        self, message: object, *, context_management: Mapping[str, Any] | None = None
    ) -> Message:
        """An Anthropic Messages API response (`anthropic.types.Message` or its dict): every
        content block kept as it came (thinking with its signature, tool_use, server tools),
        with its usage and model, so `context().to_anthropic()` sends it back unchanged.

        What the server did to the context is recorded with it (`_responses`): a `compaction`
        block is a compaction whose summary is the block, and `context_management.
        applied_edits` prunes what the edits cleared. `context_management` is the request's
        own, when its `clear_tool_uses` edit names `exclude_tools`."""
        if context_management is not None and not isinstance(context_management, Mapping):
            raise InvalidArgument(
                f"context_management must be the request's mapping, got "
                f"{described(context_management)}"
            )
        return self._append_response(anthropic_message(message), context_management)

    def append_openai(self, completion: object) -> Message:
        """A Chat Completions response (`ChatCompletion`, its `choices[0].message`, or their
        dicts): text, tool calls with their `arguments` exactly as the model wrote them, a
        `refusal` (text to every other render, sent back as `refusal` to Chat Completions), the
        rest of the message and completion as they came, and usage (prompt minus cached tokens
        as `input`, cached as `cache_read`, completion as `output`)."""
        return self.append_message(chat_message(completion))

    def append_openai_response(self, response: object) -> Message:
        """A Responses API response (`openai.types.responses.Response` or its dict): every
        output item kept with its id and status (reasoning with `encrypted_content` and its
        summary, function calls with `id` and `call_id`), so `context().to_responses()` sends
        them back. A `compaction` item is recorded as a compaction whose summary is the item
        (see `append_anthropic`), so the context sends it and what follows, nothing older."""
        return self._append_response(responses_message(response))

    @_serialized
    def _append_response(
        self, message: Message, context_management: Mapping[str, Any] | None = None
    ) -> Message:
        """A provider's response, with what the provider did to the context (see
        `sessionstore.session._responses`), in one transaction."""
        self._catch_up()
        check_message(self._fold, message)
        self._check_size(message)
        encoding = self.header.encoding
        counted = message.model_copy(
            update={"parts": tuple(with_tokens(part, encoding) for part in message.parts)}
        )
        events, returned = response_events(self._fold, counted, self._count, context_management)
        self.append_events(events)
        return returned

    # changing what the context shows

    @_serialized
    def restore(self, part_ids: Iterable[str] | None = None) -> RecordedEvent | None:
        """Bring back the original outputs of pruned, truncated or previewed tool results,
        previewed tool-call arguments, cleared reasoning and truncated user messages (all
        pruned outputs, previews and cleared reasoning when `part_ids` is `None`). Returns the
        event, or `None` when every part named shows its original already."""
        return self._edits.restore(None if part_ids is None else check.part_ids(part_ids))

    @_serialized
    def redact(self, part_ids: Iterable[str], *, reason: str) -> RecordedEvent | None:
        """Delete the content of parts for good (a leaked secret, say): their bodies leave the
        database and its files, and the session shows `[redacted: <reason>]` where they were,
        in the live context, replays and exports. The hash chain still verifies. Parts that
        hold the same text are redacted with them (stored once in the session), so are the copies an
        undo restored, and so is every compaction summary written after them (it may quote
        them). Returns the `ContentRedacted` event, or `None` when all of it was redacted
        already.

        Only this session's own parts can be named: a fork redacts its parent's in the
        parent. Content written before it was a body (inline in its event) cannot be deleted
        without breaking the chain: `InvalidArgument` says so."""
        wanted = check.part_ids(part_ids)
        return self._edits.redact(wanted, check.redaction_reason(reason))

    @_serialized
    def revert(self, to_message_id: str) -> RecordedEvent | None:
        """Undo every message after `to_message_id` (replay still shows them). Results of tool
        calls made at or before it are kept, so the context stays valid for the API."""
        return self._edits.revert(check.text("to_message_id", to_message_id))

    @_serialized
    def restore_messages(self, seq: int) -> RecordedEvent | None:
        """Undo what the `ContextCompacted` or `MessagesReverted` event at `seq` took out (a
        strategy's drop, a compaction, an undo): its messages come back where they were, as
        the log recorded them, and its marker or summary leaves. Returns the
        `MessagesRestored` event, or `None` when every one of them is live already."""
        return self._edits.restore_messages(check.integer("seq", seq, minimum=1))

    @_serialized
    def undo(self, seq: int) -> RecordedEvent | None:
        """Undo the context decision at `seq`, whichever strategy made it: a drop or a
        compaction (its messages come back, as `restore_messages` does), a prune or previews
        (the parts they cut that are still live show their originals again, as `restore`
        does; a redacted one stays redacted, and a part pruned since comes back too).
        Returns the event that undoes it, or `None` when nothing of it is left to undo;
        `InvalidArgument` for an event that took nothing out. `seq` is this session's own: a
        fork undoes its parent's decisions with `restore`, or in the parent."""
        return self._edits.undo(check.integer("seq", seq, minimum=1))

    @_serialized
    def pin(self, message_id: str) -> RecordedEvent | None:
        """Keep a message through every compaction (the original task, say)."""
        return self._edits.pin(check.text("message_id", message_id))

    @_serialized
    def unpin(self, message_id: str) -> RecordedEvent | None:
        return self._edits.unpin(check.text("message_id", message_id))

    @_serialized
    def append_record(
        self,
        kind: str,
        *natives: Native,
        state: Mapping[str, Any] | None = None,
        event_id: str | None = None,
        then: Sequence[Payload] = (),
    ) -> Record:
        """Keep a framework's or a source's entry that is not a message (a Claude Code
        `file-history-snapshot` line, an ADK event that only changes state), verbatim: one
        `RecordAppended` event whose record holds each `native` as a part. It is in the log,
        exports and audits (`SessionStore.read`), never in the context; its content is stored
        and redactable like a message's. `state` and `event_id` as in `append_message`; `then`
        are events that follow it in the same transaction (what the entry did to the context:
        an ADK compaction's `ContextCompacted`)."""
        changes = state_changes(self._fold.state, state)
        for native in natives:
            if not isinstance(native, Native):
                raise InvalidArgument(f"a record holds Native values, got {described(native)}")
        check_text_size(natives, self._log.max_payload_bytes, "RecordAppended")
        try:
            record = Record(kind=kind, parts=tuple(NativePart(native=n) for n in natives))
        except ValidationError as exc:
            raise InvalidArgument(f"not a valid record: {describe_validation_error(exc)}") from None
        self.append_events([_keyed(RecordAppended(record=record), event_id), *changes, *then])
        return record

    # lifecycle: what agent frameworks' sessions do besides appending

    @_serialized
    def pop(self) -> Message | None:
        """Take the newest live message out of the live context, whatever it is (a tool result
        too: a framework's "pop the last item") and return it; `None` when the context is
        empty. Replay before the `MessagePopped` event still shows it."""
        return self._edits.pop()

    @_serialized
    def clear(self, *, reason: str = "") -> RecordedEvent | None:
        """Empty the live context (a framework's "clear session") by a `SessionCleared` event;
        `None` when it is empty already. The history, replay and the state stay: deleting the
        content is `SessionStore.purge`."""
        return self._edits.clear(check.text("reason", reason))

    @_serialized
    def update_state(
        self, values: Mapping[str, Any] | None = None, *, remove: Iterable[str] = ()
    ) -> RecordedEvent | None:
        """Set keys of the session's key-value state to JSON values and delete others, in one
        `StateChanged` event; `None` when that changes nothing. A key may not be both set and
        removed; values must be JSON (`InvalidArgument` otherwise, and nothing is written)."""
        delta = state_delta(values, remove)
        self._catch_up()
        changes = state_changes(self._fold.state, delta.values, delta.removed)
        return self.append_events(changes)[0] if changes else None

    @_serialized
    def state(self, at: int | datetime | None = None) -> dict[str, JsonValue]:
        """The session's key-value state now, or right after event `at` (as `context(at=)`),
        as a copy: changing it changes nothing stored."""
        if at is None:
            self._catch_up()
            return copy.deepcopy(self._fold.state)
        return copy.deepcopy(self._log.fold_at(self.id, at).state)

    @_serialized
    def update_metadata(self, /, **changes: Any) -> RecordedEvent | None:
        """Change what the session is listed by: `app`, `user` (a name or `None`) and `tags`
        (a list, which replaces the old one), by a `MetadataChanged` event; `None` when that
        changes nothing. Anything else is `InvalidArgument`, and nothing is written."""
        unknown = sorted(set(changes) - {"app", "user", "tags"})
        if unknown:
            raise InvalidArgument(f"update_metadata takes app, user and tags, not {unknown[0]}")
        self._catch_up()
        header = self.header
        app = check.optional_label("app", changes.get("app", header.app))
        user = check.optional_label("user", changes.get("user", header.user))
        tags = check.tags(changes.get("tags", header.tags))
        if (app, user, tags) == (header.app, header.user, header.tags):
            return None
        return self.append_events([MetadataChanged(app=app, user=user, tags=tags)])[0]

    @_serialized
    def configure(self, /, **changes: Any) -> RecordedEvent:
        """Change context-management settings (any `CompressionConfig` field), by an event.
        Settings the config refuses raise `InvalidArgument`, and nothing is written."""
        try:
            config = CompressionConfig.model_validate({**self.config.model_dump(), **changes})
        except ValidationError as exc:
            raise InvalidArgument(f"configure: {describe_validation_error(exc)}") from None
        event = CompressionChanged(compression=config.model_dump(mode="json"))
        return self.append_events([event])[0]

    # keeping the context inside the window: `WindowKeeper` decides, this handle checks the
    # arguments and brings its fold up to date first

    @_serialized
    def measure(self) -> Measure:
        """How full the context is against its overflow limit, without changing anything."""
        self._catch_up()
        return self._window.measure()

    @_serialized
    def before_llm_call(
        self, summarizer: Summarizer | None = None, *, confirm: Confirm | None = None
    ) -> ContextCheck:
        """Call before each model request: prunes, then compacts, if the context overflows.

        With `confirm`, each compaction is first passed to it as a `CompactionProposal` and
        appended only when it returns True; on False nothing more is appended and the check's
        `declined` holds the proposal, with the ways out as calls: `drop_oldest_turns(
        check.drop_turns)`, `fork_with_summary(check.declined)`, or `check.stop()`. Pruning,
        which comes first, is not asked about."""
        check.summarizer_or_none(summarizer)
        check.confirm_or_none(confirm)
        self._catch_up()
        return self._window.keep_in_window("before_llm_call", summarizer, confirm)

    @_serialized
    def after_tool_result(
        self, summarizer: Summarizer | None = None, *, confirm: Confirm | None = None
    ) -> ContextCheck:
        """Call after appending tool results: the same check, recorded as `after_tool`."""
        check.summarizer_or_none(summarizer)
        check.confirm_or_none(confirm)
        self._catch_up()
        return self._window.keep_in_window("after_tool", summarizer, confirm)

    @_serialized
    def propose_compaction(
        self,
        summarizer: Summarizer | None = None,
        reason: CompactionReason = "manual",
        *,
        keep_turns: int | None = None,
        keep_tokens: int | None = None,
    ) -> CompactionProposal:
        """The compaction `compact` would append, as a plan, appending nothing (the summarizer
        runs: the summary is part of the plan). `apply(proposal)` appends it; `CompactionError`
        as `compact` when there is nothing to compact or the summary saves too little."""
        check.summarizer_or_none(summarizer)
        check.choice("reason", reason, _COMPACTION_REASONS)
        check.optional_integer("keep_turns", keep_turns, minimum=0)
        check.optional_integer("keep_tokens", keep_tokens, minimum=0)
        self._catch_up()
        return self._window.propose_compaction(
            summarizer, reason, keep_turns=keep_turns, keep_tokens=keep_tokens
        )

    @_serialized
    def apply(self, proposal: CompactionProposal) -> RecordedEvent:
        """Append the compaction `proposal` shows, exactly. `ConcurrencyError` (and nothing
        written) when the session moved on since it was proposed: the plan was made for a
        context that is no longer the live one; propose again."""
        check.proposal(proposal, self.id)
        self._catch_up()
        return self._window.apply(proposal)

    @_serialized
    def drop_oldest_turns(self, n: int) -> RecordedEvent | None:
        """Take the oldest `n` user turns out of the live context: what a caller that refused
        a compaction can do instead. One `MessagesReverted` event names every message that
        leaves (system and pinned messages, and what precedes the first turn, stay); its
        `after_message_id` is the newest message that stays before them (the oldest that stays
        when none does). Replay before the event shows them; `SessionStore.fork(id, at=seq - 1)`
        brings them back. `None` when `n` is 0; `InvalidArgument` when no turn would be left."""
        check.integer("n", n, minimum=0)
        self._catch_up()
        return self._window.drop_oldest_turns(n)

    @_serialized
    def fork_with_summary(
        self, proposal: CompactionProposal, *, title: str | None = None
    ) -> Session:
        """A new session that starts where `proposal` was made, with its compaction applied:
        the summary and the kept messages. This session is not changed. The fork's history is
        this one's up to `proposal.version` (read, not copied) and then the compaction, so
        every original is still in replay, and `restore`/`fork(at=)` work there as anywhere."""
        check.proposal(proposal, self.id)
        check.optional_text("title", title)
        history = self._log.fold_at(self.id, proposal.version)
        started = fork_header(history, self.id, title)
        # one transaction: no fork is ever seen without its summary
        started_event, compacted = self._log.append(new_id(), [started, proposal.event], 0)
        history.apply(started_event)
        self._log.save_snapshot(history)  # the fork's resume starts here, not in its parent
        history.apply(compacted)
        fork = Session(self._log, history, snapshot_seq=started_event.seq)
        fork.summarizer = self.summarizer
        return fork

    @_serialized
    def prune(self, *, dry_run: bool = False, reason: str = "manual") -> PrunePlan | None:
        """Clear older turns' reasoning and replace old tool outputs by placeholders when that
        frees at least `minimum_prune` tokens (scaled to the window; see `plan_prune`). Returns
        the plan, appended unless `dry_run` or not worth it; `None` when nothing is old
        enough."""
        check.flag("dry_run", dry_run)
        check.text("reason", reason)
        self._catch_up()
        return self._window.prune(dry_run=dry_run, reason=reason)

    @_serialized
    def compact(
        self,
        summarizer: Summarizer | None = None,
        reason: CompactionReason = "manual",
        *,
        keep_turns: int | None = None,
        keep_tokens: int | None = None,
    ) -> RecordedEvent:
        """Replace the head of the conversation by one summary, keeping the system prompt,
        pinned messages and the last turns. `CompactionError` (and nothing appended) when
        there is nothing to replace, the summarizer fails, or its summary is not shorter.
        The same as `apply(propose_compaction(...))` in one step."""
        proposal = self.propose_compaction(
            summarizer, reason, keep_turns=keep_turns, keep_tokens=keep_tokens
        )
        return self.apply(proposal)

    @_serialized
    def append_events(self, payloads: Sequence[Payload | NewEvent]) -> list[RecordedEvent]:
        """Append events in one transaction after this handle's version (optimistic
        concurrency), and fold them in. The lower-level door for policies and importers."""
        if self._stale:
            self._catch_up()
        fold = self._fold
        assert fold.time is not None
        head = Head(fold.seq, fold.hash, fold.time)
        try:
            with append_span(self.id, self.header.model) as traced:
                recorded = self._log.append(
                    self.id, payloads, head.seq, known_head=head, fold_in=self._fold_in
                )
                traced(recorded)
        except BaseException:
            if self._stale:  # folded in, not written: back to what the log holds
                self._reload_quietly()
            raise
        written = recorded[0].seq == head.seq + 1 and recorded[-1].hash == self._fold.hash
        if not written:
            # A retry of events stored earlier: they are in the log (and maybe folded here)
            # already, so catch up with the log rather than fold them twice.
            self._catch_up()
            return recorded
        # The events are stored, and folded in before they were written (their live tokens
        # went to the sessions row with them): from here on nothing may raise.
        self._stale = False
        self._snapshot_seq = self._log.after_append(self._fold, self._snapshot_seq, recorded)
        return recorded

    def _reload_quietly(self) -> None:
        """Reload a stale fold now, or leave it stale (reloaded before its next use) when
        the log cannot be read: the error the caller sees is the one that made it stale."""
        try:
            self._catch_up()
        except Exception as exc:
            log.info("could not reload %s now (%s): it reloads before its next use", self.id, exc)

    def _fold_in(self, events: Sequence[RecordedEvent]) -> int | None:
        """Fold the events about to be written into the handle's fold, for the live tokens
        their write keeps on the `sessions` row. Until the write is known to have stored them
        the fold is ahead of the log: a write that fails leaves the handle to reload. A fold
        that fails counts nothing (the row's figure is left for a listing to count), and the
        events are written all the same, as they were before folding came first."""
        self._stale = True
        try:
            for event in events:
                self._fold.apply(event)
        except Exception:
            log.exception("could not fold events of %s in; the handle reloads them", self.id)
            return None
        return self._fold.tokens

    # reading

    @_serialized
    def context(self, at: int | datetime | None = None, *, restore_pruned: bool = False) -> Context:
        """The live context now, or as it was right after event `at` (a seq, or the last event
        at or before a time). `restore_pruned=True` shows every tool result's original output;
        it changes nothing in the session."""
        check.flag("restore_pruned", restore_pruned)
        if at is None:
            self._catch_up()
            key = (self._fold.seq, restore_pruned)  # every event moves seq: the key is exact
            if self._live is None or self._live[0] != key:
                self._live = (key, context_of(self._fold, restore_pruned=restore_pruned))
            return self._live[1]
        return context_of(self._log.fold_at(self.id, at), restore_pruned=restore_pruned)

    def timeline(self) -> list[TimelineRow]:
        """One row per event of this session, for audits (a fork's rows start at its fork)."""
        events = self._log.read(self.id, 1, MAX_SEQ)
        return timeline(events, self._fork_point(events))

    @_serialized
    def to_markdown(self, at: int | datetime | None = None, *, history: bool = False) -> str:
        """The session as a Markdown transcript for people to read: a header (title, model,
        window), then each message with its role, tool calls and outputs in fenced blocks,
        thinking collapsed, truncated and pruned outputs shown as the model saw them with a
        note, compaction summaries marked, redacted content as `[redacted: <reason>]`.

        By default the live context (now, or right after event `at`, as `context(at=)`): what
        the model is shown. With `history=True`, every message ever appended up to that point,
        as the model was shown it when appended, with each prune, compaction (and its
        summary), revert and redaction marked where it happened. It reads the log and writes
        nothing."""
        check.flag("history", history)
        if not history:
            if at is not None:
                return markdown_of(self._log.fold_at(self.id, at))
            self._catch_up()
            return markdown_of(self._fold)
        seq = self._log.version(self.id) if at is None else self._log.seq_at(self.id, at)
        events = self._log.read(self.id, 1, seq)
        return history_markdown(events, self._fork_point(events))

    def _fork_point(self, events: Sequence[RecordedEvent]) -> ContextFold | None:
        """The parent's fold at the fork a fork's own events continue, else `None`."""
        header = events[0].payload
        if isinstance(header, SessionStarted) and header.parent_session_id is not None:
            assert header.parent_seq is not None
            return self._log.fold_at(header.parent_session_id, header.parent_seq)
        return None

    def artifacts(
        self, at: int | datetime | None = None, *, tools: ToolMap | None = None
    ) -> ArtifactTrail:
        """What the session did, from its log: files read and changed, commands and their
        outcomes, errors and their fixes, the todo list, the user's requests; now, or right
        after event `at` (as `context(at=)`). Pruned, compacted and reverted messages count:
        the trail is what happened, not what the model still sees. `tools` says how to read
        tool calls (`sessionstore.projections.DEFAULT_TOOLS` by default; extend it for your own
        tools)."""
        if tools is not None and not isinstance(tools, ToolMap):
            raise InvalidArgument(f"tools must be a ToolMap, got {brief(tools)}")
        seq = self._log.version(self.id) if at is None else self._log.seq_at(self.id, at)
        return artifact_trail(self._log.read(self.id, 1, seq), tools=tools)

    @_serialized
    def refresh(self) -> None:
        """Catch up with events other handles appended (after a `ConcurrencyError`, say)."""
        self._catch_up()

    # internals

    def _catch_up(self) -> None:
        """Fold in what other handles appended since; when nothing is new, one small read."""
        if self._stale:  # folding failed after an append: start again from the log
            self._fold = self._log.fold_at(self.id, self._log.version(self.id))
            self._live = None
            self._stale = False
            return
        if self._log.version(self.id) == self.version:
            return
        for event in self._log.read(self.id, self.version + 1, MAX_SEQ):
            self._fold.apply(event)

    def _count(self, text: str) -> int:
        """The tokens of `text` in the session's encoding."""
        return count(text, self.header.encoding)

    def _check_size(self, *values: object) -> None:
        """`PayloadTooLarge` for a message whose text alone is over the store's limit: before
        tiktoken or truncation spends seconds and memory on it."""
        check_text_size(values, self._log.max_payload_bytes, "MessageAppended")


def _keyed(payload: Payload, event_id: str | None) -> Payload | NewEvent:
    """The payload, under the caller's idempotency key when it chose one."""
    return payload if event_id is None else NewEvent(payload, event_id)
