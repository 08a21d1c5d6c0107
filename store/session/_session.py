"""`Session`: one agent session, as an agent loop uses it.

A `Session` holds the session's context fold at the version it last saw. Every append goes
through the store with that version as `expected_version`, so two handles on one session can
never interleave silently: the one that is behind gets `ConcurrencyError` and can `refresh()`
and decide again. Reads (`context()`, `timeline()`) first fold in whatever other writers
appended, so they always show the session as it is.
"""

from __future__ import annotations

import copy
import functools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar, get_args

from pydantic import JsonValue, ValidationError

from sessionstore.context import (
    CompactionPlan,
    CompactionProposal,
    CompactionRefused,
    Confirm,
    ExtractiveSummarizer,
    Measure,
    PrunePlan,
    Summarizer,
    SummaryAnchors,
    accepts_anchors,
    attempt_limits,
    confirmed,
    cooling_down,
    count,
    guard_compaction,
    longest_token,
    marked_summary,
    measure,
    oldest_turns,
    phase,
    plan_compaction,
    plan_prune,
    plan_strategy,
    proposal_of,
    run_summarizer,
    saves_enough,
    size_and_lines,
    strategy_of,
    truncate,
    turns_to_drop,
    with_tokens,
)
from sessionstore.events import (
    CompactionError,
    CompactionReason,
    CompressionChanged,
    CompressionConfig,
    ConcurrencyError,
    ContextCompacted,
    InvalidArgument,
    InvalidEvent,
    Message,
    MessageAppended,
    MessagePinned,
    MessagePopped,
    MessagesReverted,
    MessageUnpinned,
    MetadataChanged,
    Native,
    NativePart,
    NewEvent,
    NotInContext,
    OutputsPruned,
    OutputsRestored,
    Part,
    PartsPreviewed,
    Payload,
    Record,
    RecordAppended,
    RecordedEvent,
    SessionCleared,
    SessionStarted,
    StateChanged,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    brief,
    check_text,
    describe_validation_error,
    described,
    new_id,
)
from sessionstore.log import MAX_SEQ, EventLog, check_text_size, plan_redaction, redacted_parts
from sessionstore.projections import (
    ArtifactFold,
    ArtifactTrail,
    Context,
    ContextFold,
    LiveMessage,
    TimelineRow,
    ToolMap,
    artifact_trail,
    context_of,
    timeline,
)
from sessionstore.providers import anthropic_message, chat_message, responses_message
from sessionstore.session import _arguments as check
from sessionstore.session._reinstate import plan_restore, taken_out
from sessionstore.session._state import state_delta
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


_COMPACTION_REASONS: tuple[CompactionReason, ...] = get_args(CompactionReason)


@dataclass(frozen=True, slots=True)
class ContextCheck:
    """What `before_llm_call` / `after_tool_result` found and did.

    `before` and `after` measure the context on entry and on return; `pruned` and `compactions`
    are the events appended on the way (none when it was within the window); `note` says why
    it stopped where it did. `skipped` holds the compactions planned but not appended because
    their summary saved too little (`minimum_compaction_saving`), each as (tokens it would
    replace, tokens of its summary).
    """

    point: Literal["before_llm_call", "after_tool"]
    before: Measure
    after: Measure
    pruned: RecordedEvent | None
    compactions: tuple[RecordedEvent, ...]
    note: str
    skipped: tuple[tuple[int, int], ...] = ()
    declined: CompactionProposal | None = None
    """The compaction a `confirm` callback refused (nothing of it was appended)."""
    drop_turns: int = 0
    """When a compaction was declined: the fewest oldest turns `Session.drop_oldest_turns`
    would take out to get under the limit (0 when only the current turn is left)."""

    @property
    def acted(self) -> bool:
        return self.pruned is not None or bool(self.compactions)

    @property
    def over_window(self) -> bool:
        """Whether the context is still larger than the usable window: nothing left could be
        shrunk (a huge message in the current turn, say); sending it would fail."""
        return self.after.usable is not None and self.after.tokens > self.after.usable

    def stop(self) -> None:
        """The third way out of a declined compaction: raise `CompactionRefused`, whose message
        names the other two (`drop_oldest_turns`, `fork_with_summary`). Does nothing when no
        compaction was declined."""
        if self.declined is not None:
            raise CompactionRefused(self.declined, self.drop_turns)


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
        self._fruitless: tuple[int, int] | None = None  # (seq, tokens) of a check that failed
        self._live: tuple[tuple[int, bool], Context] | None = None  # the last context built
        self._config: tuple[SessionStarted, CompressionConfig] | None = None
        self._stale = False  # the fold missed events that are stored: reload before use
        self._config_warned = False
        self._trail: ArtifactFold | None = None
        """The artifact trail up to the last compaction's replaced events, folded on from there
        for the next one (summarizers that take anchors)."""

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
        call = self._pending_call(call_id)
        tool = name or call.name
        self._check_size(text, blocks, tool)
        max_lines, max_bytes, direction = self.config.limits_for(tool)
        part_id = new_id()
        try:
            cut = truncate(
                text,
                max_lines=max_lines,
                max_bytes=max_bytes,
                direction=direction,
                part_id=part_id,
            )
        except UnicodeEncodeError as exc:  # the same refusal an append of the text would make
            raise InvalidEvent(
                f"output: text is not valid UTF-8 (lone surrogate at offset {exc.start})"
            ) from None
        return ToolResultPart(
            id=part_id,
            call_id=call_id,
            name=tool,
            output=text,
            is_error=is_error,
            truncation=cut,
            blocks=blocks,
        )

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
        changes = self._state_changes(state)
        self._check_message(message)
        self._check_size(message)
        encoding = self.header.encoding
        parts = message.parts
        if message.role == "user":  # cut before counting: a huge text is never tokenised whole
            parts = tuple(self._shortened(part) for part in parts)
        parts = tuple(with_tokens(part, encoding) for part in parts)
        counted = message.model_copy(update={"parts": parts})
        self.append_events([_keyed(MessageAppended(message=counted), event_id), *changes])
        return counted

    def _shortened(self, part: Part) -> Part:
        """A user text part over `max_user_message_tokens` (scaled to the window) with its
        truncated view: the head of the text that fits, and a notice; the original stays in
        the part and `restore` brings it back. Other parts, and texts that fit, as they are
        (counted later, with the rest).

        Only what the model is shown is tokenised. A token stands for 1 to `longest_token`
        bytes, so a text of at most `limit` bytes fits and one of more than `limit *
        longest_token` bytes does not, whatever it holds: only a text between the two is
        counted whole (at most 1 MB at the default limit) to tell. One over is cut by bytes
        first, and the view alone is counted (tiktoken took 10 to 20 s on 50 MB, minutes on
        one long word); the original's count is then left to `restore`, which shows it."""
        if not isinstance(part, TextPart) or part.truncation is not None:
            return part
        config = self.config
        limit = config.budgets(_usable(self.header)).max_user_message_tokens
        encoding = self.header.encoding
        measured = size_and_lines(part.text)  # once: each cut below reads only the head it shows
        if part.tokens is None:
            size = measured[0]
            if size <= limit:
                return part
            if size <= limit * longest_token(encoding):
                part = part.model_copy(update={"tokens": count(part.text, encoding)})
        if part.tokens is not None and part.tokens <= limit:
            return part
        max_bytes = limit * 4  # about four bytes a token; shrunk until the view fits
        while True:
            try:
                cut = truncate(
                    part.text,
                    max_lines=config.max_lines,
                    max_bytes=max_bytes,
                    direction="head",
                    part_id=part.id,
                    noun="message",
                    measured=measured,
                )
            except UnicodeEncodeError:  # the refusal an append of the text would make
                check_text(part.text, "text")  # names the offset in the text, not in a line
                raise
            if cut is None:
                return part  # the view would not be shorter
            tokens = count(cut.shown, encoding)
            if tokens <= limit or max_bytes == 1:
                break
            max_bytes = max(1, max_bytes * limit // (tokens + 1))
        truncation = cut.model_copy(update={"output_tokens": part.tokens})
        return part.model_copy(update={"truncation": truncation, "tokens": tokens})

    # appending what a provider's SDK returned, verbatim

    def append_anthropic(self, message: object) -> Message:
        """An Anthropic Messages API response (`anthropic.types.Message` or its dict): every
        content block kept as it came (thinking with its signature, tool_use, server tools),
        with its usage and model, so `context().to_anthropic()` sends it back unchanged."""
        return self.append_message(anthropic_message(message))

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
        them back."""
        return self.append_message(responses_message(response))

    # changing what the context shows

    @_serialized
    def restore(self, part_ids: Iterable[str] | None = None) -> RecordedEvent | None:
        """Bring back the original outputs of pruned, truncated or previewed tool results,
        previewed tool-call arguments, cleared reasoning and truncated user messages (all
        pruned outputs, previews and cleared reasoning when `part_ids` is `None`). Returns the
        event, or `None` when every part named shows its original already."""
        wanted = None if part_ids is None else _part_ids(part_ids)
        self._catch_up()
        gone = redacted_parts(self._log.recorder, self._lineage())
        if wanted is None:
            every = [*self._fold.pruned_part_ids(), *self._fold.previewed_part_ids()]
            ids = [p for p in dict.fromkeys(every) if p not in gone]
        else:
            ids = list(dict.fromkeys(wanted))
            for part_id in ids:
                if not self._fold.has_restorable_part(part_id):
                    raise NotInContext(
                        f"no tool result, tool call, reasoning or truncated text {brief(part_id)} "
                        "in the live context"
                    )
                if part_id in gone:
                    raise InvalidArgument(
                        f"part {brief(part_id)} was redacted ({gone[part_id]}): its original "
                        "is deleted and cannot be restored"
                    )
            ids = [part_id for part_id in ids if self._fold.is_restorable(part_id)]
        if not ids:
            return None
        counted = {}
        for part_id in ids:
            text = self._fold.truncated_text(part_id)
            if text is not None:
                if text.truncation is not None and text.truncation.output_tokens is None:
                    counted[part_id] = count(text.text, self.header.encoding)
                continue
            part = self._fold.tool_result(part_id)
            if part is None:
                continue  # cleared reasoning: its count was recorded at append
            if part.truncation is not None and part.truncation.output_tokens is None:
                counted[part_id] = count(part.output, self.header.encoding)
        return self.append_events([OutputsRestored(part_ids=tuple(ids), output_tokens=counted)])[0]

    @_serialized
    def redact(self, part_ids: Iterable[str], *, reason: str) -> RecordedEvent | None:
        """Delete the content of parts for good (a leaked secret, say): their bodies leave the
        database and its files, and the session shows `[redacted: <reason>]` where they were,
        in the live context, replays and exports. The hash chain still verifies. Parts that
        hold the same text are redacted with them (it is stored once), so are the copies an
        undo restored, and so is every compaction summary written after them (it may quote
        them). Returns the `ContentRedacted` event, or `None` when all of it was redacted
        already.

        Only this session's own parts can be named: a fork redacts its parent's in the
        parent. Content written before it was a body (inline in its event) cannot be deleted
        without breaking the chain: `InvalidArgument` says so."""
        wanted = _part_ids(part_ids)
        check.redaction_reason(reason)
        self._catch_up()
        event = plan_redaction(self._log.recorder, self.id, self.version, wanted, reason)
        if event is None:
            # a redaction retried after a crash between its commit and its scrub scrubs now
            self._log.scrub(f"redacted bodies of {self.id}")
            return None
        return self.append_events([event])[0]

    def _lineage(self) -> list[str]:
        """This session and the sessions it forks from, nearest first."""
        chain = [self.id]
        header = self._fold.header
        while header is not None and header.parent_session_id is not None:
            parent = header.parent_session_id
            if parent in chain:
                break
            chain.append(parent)
            first = self._log.read(parent, 1, 1)[0].payload
            header = first if isinstance(first, SessionStarted) else None
        return chain

    @_serialized
    def revert(self, to_message_id: str) -> RecordedEvent | None:
        """Undo every message after `to_message_id` (replay still shows them). Results of tool
        calls made at or before it are kept, so the context stays valid for the API."""
        check.text("to_message_id", to_message_id)
        self._catch_up()
        self._require_live(to_message_id)
        ids = self._fold.message_ids()
        point = ids.index(to_message_id)
        kept_calls: set[str] = set()
        reverted = []
        for position, message_id in enumerate(ids):
            message = self._fold.message(message_id)
            if position <= point:
                kept_calls.update(p.call_id for p in message.parts if isinstance(p, ToolCallPart))
            elif message.role == "tool" and all(
                isinstance(p, ToolResultPart) and p.call_id in kept_calls for p in message.parts
            ):
                continue
            else:
                reverted.append(message_id)
        if not reverted:
            return None
        event = MessagesReverted(
            after_message_id=to_message_id, reverted_message_ids=tuple(reverted)
        )
        return self.append_events([event])[0]

    @_serialized
    def restore_messages(self, seq: int) -> RecordedEvent | None:
        """Undo what the `ContextCompacted` or `MessagesReverted` event at `seq` took out (a
        strategy's drop, a compaction, an undo): its messages come back where they were, as
        the log recorded them, and its marker or summary leaves. Returns the
        `MessagesRestored` event, or `None` when every one of them is live already."""
        check.integer("seq", seq, minimum=1)
        self._catch_up()
        if seq > self._fold.seq:
            raise InvalidArgument(f"no event {seq}: the session is at {self._fold.seq}")
        gone, marker = taken_out(self._log.read(self.id, seq, seq)[0].payload, seq)
        restored = plan_restore(
            seq,
            gone,
            marker,
            live=self._fold.message_ids(),
            order=[m.id for m in self.context(at=seq - 1).messages],
            history=self._log.read(self.id, 1, seq),
        )
        if restored is None:
            return None
        return self.append_events([restored])[0]

    @_serialized
    def undo(self, seq: int) -> RecordedEvent | None:
        """Undo the context decision at `seq`, whichever strategy made it: a drop or a
        compaction (its messages come back, as `restore_messages` does), a prune or previews
        (the parts they cut that are still live show their originals again, as `restore`
        does; a redacted one stays redacted, and a part pruned since comes back too).
        Returns the event that undoes it, or `None` when nothing of it is left to undo;
        `InvalidArgument` for an event that took nothing out. `seq` is this session's own: a
        fork undoes its parent's decisions with `restore`, or in the parent."""
        check.integer("seq", seq, minimum=1)
        self._catch_up()
        if seq > self._fold.seq:
            raise InvalidArgument(f"no event {seq}: the session is at {self._fold.seq}")
        payload = self._log.read(self.id, seq, seq)[0].payload
        if not isinstance(payload, OutputsPruned | PartsPreviewed):
            if not isinstance(payload, ContextCompacted | MessagesReverted):
                raise InvalidArgument(
                    f"event {seq} ({type(payload).__name__}) took nothing out of the context: "
                    "there is nothing to undo"
                )
            return self.restore_messages(seq)
        cut = payload.part_ids if isinstance(payload, OutputsPruned) else tuple(payload.previews)
        gone = redacted_parts(self._log.recorder, self._lineage())
        live = [p for p in cut if self._fold.is_restorable(p) and p not in gone]
        return self.restore(live) if live else None

    @_serialized
    def pin(self, message_id: str) -> RecordedEvent | None:
        """Keep a message through every compaction (the original task, say)."""
        check.text("message_id", message_id)
        self._catch_up()
        self._require_live(message_id)
        if message_id in self._fold.pinned:
            return None
        return self.append_events([MessagePinned(message_id=message_id)])[0]

    @_serialized
    def unpin(self, message_id: str) -> RecordedEvent | None:
        check.text("message_id", message_id)
        self._catch_up()
        if message_id not in self._fold.pinned:
            return None
        return self.append_events([MessageUnpinned(message_id=message_id)])[0]

    @_serialized
    def append_record(
        self,
        kind: str,
        *natives: Native,
        state: Mapping[str, Any] | None = None,
        event_id: str | None = None,
    ) -> Record:
        """Keep a framework's or a source's entry that is not a message (a Claude Code
        `file-history-snapshot` line, an ADK event that only changes state), verbatim: one
        `RecordAppended` event whose record holds each `native` as a part. It is in the log,
        exports and audits (`SessionStore.read`), never in the context; its content is stored
        and redactable like a message's. `state` and `event_id` as in `append_message`."""
        changes = self._state_changes(state)
        for native in natives:
            if not isinstance(native, Native):
                raise InvalidArgument(f"a record holds Native values, got {described(native)}")
        check_text_size(natives, self._log.max_payload_bytes, "RecordAppended")
        try:
            record = Record(kind=kind, parts=tuple(NativePart(native=n) for n in natives))
        except ValidationError as exc:
            raise InvalidArgument(f"not a valid record: {describe_validation_error(exc)}") from None
        self.append_events([_keyed(RecordAppended(record=record), event_id), *changes])
        return record

    # lifecycle: what agent frameworks' sessions do besides appending

    @_serialized
    def pop(self) -> Message | None:
        """Take the newest live message out of the live context, whatever it is (a tool result
        too: a framework's "pop the last item") and return it; `None` when the context is
        empty. Replay before the `MessagePopped` event still shows it."""
        self._catch_up()
        ids = self._fold.message_ids()
        if not ids:
            return None
        message = self._fold.message(ids[-1])
        self.append_events([MessagePopped(message_id=message.id)])
        return message

    @_serialized
    def clear(self, *, reason: str = "") -> RecordedEvent | None:
        """Empty the live context (a framework's "clear session") by a `SessionCleared` event;
        `None` when it is empty already. The history, replay and the state stay: deleting the
        content is `SessionStore.purge`."""
        check.text("reason", reason)
        self._catch_up()
        ids = tuple(self._fold.message_ids())
        if not ids:
            return None
        return self.append_events([SessionCleared(cleared_message_ids=ids, reason=reason)])[0]

    @_serialized
    def update_state(
        self, values: Mapping[str, Any] | None = None, *, remove: Iterable[str] = ()
    ) -> RecordedEvent | None:
        """Set keys of the session's key-value state to JSON values and delete others, in one
        `StateChanged` event; `None` when that changes nothing. A key may not be both set and
        removed; values must be JSON (`InvalidArgument` otherwise, and nothing is written)."""
        delta = state_delta(values, remove)
        self._catch_up()
        changes = self._state_changes(delta.values, delta.removed)
        return self.append_events(changes)[0] if changes else None

    def _state_changes(
        self, values: Mapping[str, Any] | None, remove: Iterable[str] = ()
    ) -> list[StateChanged]:
        """The `StateChanged` that sets `values` and removes `remove`, or none when that
        changes nothing in the state as this handle sees it (checked: `InvalidArgument`)."""
        delta = state_delta(values, remove)
        current = self._fold.state
        changed = {k: v for k, v in delta.values.items() if k not in current or current[k] != v}
        gone = tuple(key for key in delta.removed if key in current)
        return [StateChanged(values=changed, removed=gone)] if changed or gone else []

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

    # keeping the context inside the window

    @_serialized
    def measure(self) -> Measure:
        """How full the context is against its overflow limit, without changing anything."""
        self._catch_up()
        return measure(self._fold, self.config)

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
        _check_confirm(confirm)
        return self._keep_in_window("before_llm_call", summarizer, confirm)

    def after_tool_result(
        self, summarizer: Summarizer | None = None, *, confirm: Confirm | None = None
    ) -> ContextCheck:
        """Call after appending tool results: the same check, recorded as `after_tool`."""
        check.summarizer_or_none(summarizer)
        _check_confirm(confirm)
        return self._keep_in_window("after_tool", summarizer, confirm)

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
        config = self.config
        turns = config.keep_recent_turns if keep_turns is None else keep_turns
        scaled = config.budgets(_usable(self.header)).keep_recent_tokens
        kept_tokens = scaled if keep_tokens is None else keep_tokens
        plan = plan_compaction(self.context().messages, keep_turns=turns, keep_tokens=kept_tokens)
        if plan is None:
            raise CompactionError(
                f"nothing to compact: the last {turns} turns and {kept_tokens:,} tokens are kept, "
                "and what lies before them is system, pinned or summarized already"
            )
        event = self._compaction(plan, summarizer or self.summarizer, reason)
        if isinstance(event, int):
            raise CompactionError(
                f"the summary ({event:,} tokens) saves less than "
                f"{config.minimum_compaction_saving:.0%} of the {plan.replaced_tokens:,} tokens "
                "it would replace"
            )
        return proposal_of(self.id, self.version, event)

    @_serialized
    def apply(self, proposal: CompactionProposal) -> RecordedEvent:
        """Append the compaction `proposal` shows, exactly. `ConcurrencyError` (and nothing
        written) when the session moved on since it was proposed: the plan was made for a
        context that is no longer the live one; propose again."""
        if not isinstance(proposal, CompactionProposal):
            raise InvalidArgument(
                f"proposal must be a CompactionProposal, got {described(proposal)}"
            )
        if proposal.session_id != self.id:
            raise InvalidArgument(
                f"proposal is for session {proposal.session_id!r}, not {self.id!r}"
            )
        self._catch_up()
        if self.version != proposal.version:
            raise ConcurrencyError(self.id, proposal.version, self.version)
        return self.append_events([proposal.event])[0]

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
        messages = self.context().messages
        leaving = oldest_turns(messages, n)
        if not leaving:
            return None
        first = next(k for k, m in enumerate(messages) if m.id == leaving[0])
        before = [m.id for m in messages[:first] if m.id not in leaving]
        staying = [m.id for m in messages if m.id not in leaving]
        after = before[-1] if before else staying[0]
        event = MessagesReverted(
            after_message_id=after,
            reverted_message_ids=leaving,
            strategy="drop_oldest_turns",
            why=f"the oldest {n} turn(s) left ({len(leaving)} message(s)) instead of a compaction",
        )
        return self.append_events([event])[0]

    @_serialized
    def fork_with_summary(
        self, proposal: CompactionProposal, *, title: str | None = None
    ) -> Session:
        """A new session that starts where `proposal` was made, with its compaction applied:
        the summary and the kept messages. This session is not changed. The fork's history is
        this one's up to `proposal.version` (read, not copied) and then the compaction, so
        every original is still in replay, and `restore`/`fork(at=)` work there as anywhere."""
        if not isinstance(proposal, CompactionProposal):
            raise InvalidArgument(
                f"proposal must be a CompactionProposal, got {described(proposal)}"
            )
        if proposal.session_id != self.id:
            raise InvalidArgument(
                f"proposal is for session {proposal.session_id!r}, not {self.id!r}"
            )
        check.optional_text("title", title)
        history = self._log.fold_at(self.id, proposal.version)
        assert history.header is not None
        started = history.header.model_copy(
            update={
                "title": title if title is not None else history.header.title,
                "parent_session_id": self.id,
                "parent_seq": history.seq,
                "parent_hash": history.hash,
            }
        )
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
        plan = self._prune_plan(None)
        if plan is not None and plan.worth_it and not dry_run:
            self.append_events([plan.event(reason)])
        return plan

    def _prune_plan(self, needed: int | None) -> PrunePlan | None:
        return plan_prune(
            self.context().messages,
            self.config,
            now=self._log.now(),
            count=lambda text: count(text, self.header.encoding),
            usable=_usable(self.header),
            needed=needed,
        )

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
    def _keep_in_window(
        self,
        point: Literal["before_llm_call", "after_tool"],
        summarizer: Summarizer | None,
        confirm: Confirm | None = None,
    ) -> ContextCheck:
        self._catch_up()
        config = self.config
        before = measure(self._fold, config)
        if not before.overflowing:
            return ContextCheck(point, before, before, None, (), "within the window")
        if not config.auto:
            note = "overflowing; automatic pruning and compaction are off"
            return ContextCheck(point, before, before, None, (), note)
        strategy = strategy_of(config)
        start = self._fold.seq
        compactions: list[RecordedEvent] = []
        if config.strategy != "incremental":
            with phase(
                self.id,
                point,
                "selective",
                strategy=strategy,
                reason=f"overflow at {point} ({strategy})",
                tokens_before=before.tokens,
            ) as selecting:
                dropped = self._strategy_drop(point, before)
                before_incremental = measure(self._fold, config)
                note = _strategy_note(strategy, [_said(e.payload) for e in dropped])
                selecting.tokens_after = before_incremental.tokens
                selecting.outcome = note if dropped else "nothing to do"
            early = next((e for e in dropped if isinstance(e.payload, OutputsPruned)), None)
            compactions.extend(e for e in dropped if e is not early)
            if dropped and not before_incremental.overflowing:
                now = before_incremental
                return ContextCheck(point, before, now, early, tuple(compactions), note)
        else:
            before_incremental = before
        # incremental (and the fallback of every other strategy): prune, then summarize
        label = _incremental_label(config)
        needed = (
            before_incremental.tokens - before_incremental.limit
            if before_incremental.limit is not None
            else None
        )
        pruned = None
        reason = f"overflow at {point} ({label})"
        with phase(
            self.id,
            point,
            "prune",
            strategy=strategy,
            reason=reason,
            tokens_before=before_incremental.tokens,
        ) as pruning:
            plan = self._prune_plan(needed)
            if plan is not None and plan.worth_it:
                pruned = self.append_events([plan.event(reason)])[0]
            now = measure(self._fold, config)
            pruning.tokens_after = now.tokens
            pruning.outcome = "pruned" if pruned else "nothing worth pruning"
        skipped: list[tuple[int, int]] = []
        declined: CompactionProposal | None = None
        note = "pruning was enough" if pruned else "within the window"
        if now.overflowing and self._resting(config, now, start):
            note = "still overflowing: compaction could not shrink it further; cooling down"
        elif now.overflowing:
            note = "still overflowing: nothing left that compaction can shrink; cooling down"
            with phase(
                self.id,
                point,
                "summary",
                strategy=strategy,
                reason=f"still overflowing at {point} after pruning",
                tokens_before=now.tokens,
            ) as summarizing:
                for attempt in range(config.max_attempts):
                    keep_turns, keep_tokens = attempt_limits(config, attempt, now.usable)
                    messages = self.context().messages
                    cut = guard_compaction(
                        plan_compaction(messages, keep_turns=keep_turns, keep_tokens=keep_tokens),
                        messages,
                    )
                    if cut is None or all(m.summary for m in cut.replaced):
                        continue  # keeps too much, or would only summarize a summary: shrink more
                    try:
                        event = self._compaction(cut, summarizer or self.summarizer, point)
                        if not isinstance(event, int):
                            why = (
                                f"summarized {len(cut.replaced)} message(s), keeping "
                                f"{keep_turns} turn(s) and {keep_tokens:,} tokens "
                                f"(attempt {attempt + 1})"
                            )
                            by = "adaptive" if config.strategy == "adaptive" else "incremental"
                            event = event.model_copy(
                                update={"strategy": by, "why": f"{label}: {why}"}
                            )
                            if confirm is not None:
                                proposal = proposal_of(self.id, self.version, event)
                                if not confirmed(confirm, proposal):
                                    declined = proposal
                                    note = "compaction declined: nothing appended for it"
                                    break
                    except CompactionError as error:
                        error.check = ContextCheck(
                            point,
                            before,
                            now,
                            pruned,
                            tuple(compactions),
                            f"failed: {error}",
                            tuple(skipped),
                        )
                        summarizing.outcome = f"failed: {error}"
                        raise
                    if isinstance(event, int):
                        skipped.append((cut.replaced_tokens, event))
                        continue  # the summary saved too little
                    compactions.extend(self.append_events([event]))
                    now = measure(self._fold, config)
                    if not now.overflowing:
                        note = f"compacted in {attempt + 1} attempt(s)"
                        break
                if now.overflowing and declined is None:
                    self._fruitless = (self._fold.seq, now.tokens)
                    if skipped and not compactions:
                        note = (
                            "still overflowing: every summary saved less than "
                            f"{config.minimum_compaction_saving:.0%} of what it would replace; "
                            "cooling down"
                        )
                summarizing.tokens_after = now.tokens
                summarizing.outcome = note
        drop = 0
        if declined is not None:
            over = now.tokens - now.limit if now.limit is not None else None
            drop = turns_to_drop(self.context().messages, over)
        return ContextCheck(
            point, before, now, pruned, tuple(compactions), note, tuple(skipped), declined, drop
        )

    def _strategy_drop(
        self, point: Literal["before_llm_call", "after_tool"], before: Measure
    ) -> list[RecordedEvent]:
        """The session's strategy's events (`sessionstore.context._strategies`), appended, down to
        `strategy_target_ratio` of the usable window; none when it takes nothing out."""
        config = self.config
        target = (
            None if before.usable is None else int(before.usable * config.strategy_target_ratio)
        )
        events = plan_strategy(
            self.context().messages,
            config,
            reason=point,
            tokens_before=self._fold.tokens,
            needed=None if target is None else max(before.tokens - target, 0),
            count=lambda text: count(text, self.header.encoding),
            pressure=None if not before.usable else before.tokens / before.usable,
            now=self._log.now(),
            summarize=self._summary_of,
        )
        return self.append_events(list(events)) if events else []

    def _summary_of(self, messages: tuple[LiveMessage, ...]) -> tuple[str, str] | None:
        """`key_events`' summary of the blocks it takes out: the session's summarizer, marked;
        `None` (the marker stands in) when the summarizer fails or saves too little, as the
        originals stay in the log either way and a strategy's check must not fail."""
        config = self.config
        try:
            text, name = run_summarizer(self.summarizer, messages, config.summary_tokens)
        except CompactionError as error:
            log.warning("key_events: the summarizer failed (%s); a marker stands in", error)
            return None
        text = marked_summary(text)
        tokens = count(text, self.header.encoding)
        replaced = sum(m.tokens for m in messages)
        return (text, name) if saves_enough(config, replaced, tokens) else None

    def _resting(self, config: CompressionConfig, now: Measure, start: int) -> bool:
        """Whether compaction failed to get under the limit recently and the context has not
        grown since: trying again would only summarize summaries (or pay for a summary that
        is not shorter) on every call. A strategy's drop in this very check (after `start`)
        does not count: the summary is its fallback, for what the drop could not free."""
        last = self._fold.last_compaction
        if cooling_down(self._fold, config, now) and (last is None or last[0] <= start):
            return True
        if self._fruitless is None:
            return False
        seq, tokens = self._fruitless
        return self._fold.seq - seq < config.cooldown_events and now.tokens <= tokens

    def _compaction(
        self, plan: CompactionPlan, summarizer: Summarizer, reason: CompactionReason
    ) -> ContextCompacted | int:
        """The compaction event for `plan`, or its summary's token count when the summary
        saves less than `minimum_compaction_saving` of what it would replace (not appended)."""
        config = self.config
        anchors = self._anchors(plan) if accepts_anchors(summarizer) else None
        text, name = run_summarizer(summarizer, plan.replaced, config.summary_tokens, anchors)
        text = marked_summary(text)
        tokens = count(text, self.header.encoding)
        if not saves_enough(config, plan.replaced_tokens, tokens):
            return tokens
        before = self._fold.tokens
        return ContextCompacted(
            summary=Message(role="user", parts=(TextPart(text=text, tokens=tokens),)),
            first_kept_message_id=plan.first_kept_message_id,
            replaced_message_ids=tuple(m.id for m in plan.replaced),
            tokens_before=before,
            tokens_after=before - plan.replaced_tokens + tokens,
            reason=reason,
            summarizer=name,
        )

    def _anchors(self, plan: CompactionPlan) -> SummaryAnchors:
        """The previous summary among the replaced messages, and the artifact trail of the whole
        log so far: the summary is the session's state when it is written, so an error or a
        file that only a pruned output of the kept messages still shows is not lost with it.
        The trail is folded on from the last compaction's, so each compaction reads only the
        events since."""
        fold = self._trail if self._trail is not None else ArtifactFold()
        for event in self._log.read(self.id, fold.seq + 1, self._fold.seq):
            fold.apply(event)
        self._trail = fold
        trail = fold.trail()
        previous = [
            "".join(p.text for p in m.parts if isinstance(p, TextPart))
            for m in plan.replaced
            if m.summary
        ]
        return SummaryAnchors(
            previous="\n\n".join(previous) if previous else None,
            trail=trail,
            encoding=self.header.encoding,
            usable=_usable(self.header),
        )

    @_serialized
    def append_events(self, payloads: Sequence[Payload | NewEvent]) -> list[RecordedEvent]:
        """Append events in one transaction after this handle's version (optimistic
        concurrency), and fold them in. The lower-level door for policies and importers."""
        if self._stale:
            self._catch_up()
        fold = self._fold
        assert fold.time is not None
        head = Head(fold.seq, fold.hash, fold.time)
        recorded = self._log.append(self.id, payloads, head.seq, known_head=head)
        if recorded[0].seq != self._fold.seq + 1:
            # A retry of events stored earlier: they are in the log (and maybe folded here)
            # already, so catch up with the log rather than fold them twice.
            self._catch_up()
            return recorded
        # The events are stored: from here on nothing may raise, or a caller would retry them.
        try:
            for event in recorded:
                self._fold.apply(event)
        except Exception:
            log.exception("could not fold events of %s in; the handle reloads them", self.id)
            self._stale = True
            return recorded
        self._snapshot_seq = self._log.after_append(self._fold, self._snapshot_seq, recorded)
        return recorded

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
        start = None
        header = events[0].payload
        if isinstance(header, SessionStarted) and header.parent_session_id is not None:
            assert header.parent_seq is not None
            start = self._log.fold_at(header.parent_session_id, header.parent_seq)
        return timeline(events, start)

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

    def _require_live(self, message_id: str) -> None:
        if not self._fold.is_live(message_id):
            raise NotInContext(f"no message {brief(message_id)} in the live context of {self.id}")

    def _pending_call(self, call_id: str) -> ToolCallPart:
        call = self._fold.tool_call(call_id)
        if call is None or not self._fold.is_pending(call_id):
            raise NotInContext(
                f"no tool call {brief(call_id)} in {self.id} is waiting for a result"
            )
        return call

    def _check_size(self, *values: object) -> None:
        """`PayloadTooLarge` for a message whose text alone is over the store's limit: before
        tiktoken or truncation spends seconds and memory on it."""
        check_text_size(values, self._log.max_payload_bytes, "MessageAppended")

    def _check_message(self, message: Message) -> None:
        if self._fold.is_live(message.id):
            raise InvalidEvent(f"message {message.id} is in the session already")
        calls = [p.call_id for p in message.parts if isinstance(p, ToolCallPart)]
        if len(set(calls)) != len(calls):
            raise InvalidEvent("a message calls two tools with the same call id")
        for call_id in calls:
            if self._fold.is_call_id_used(call_id):
                raise InvalidEvent(f"tool call id {brief(call_id)} is used already in this session")
        answered = [p.call_id for p in message.parts if isinstance(p, ToolResultPart)]
        if len(set(answered)) != len(answered):
            raise InvalidEvent("a message answers one tool call twice")
        for call_id in answered:
            self._pending_call(call_id)


def _keyed(payload: Payload, event_id: str | None) -> Payload | NewEvent:
    """The payload, under the caller's idempotency key when it chose one."""
    return payload if event_id is None else NewEvent(payload, event_id)


def _check_confirm(confirm: object) -> None:
    if confirm is not None and not callable(confirm):
        raise InvalidArgument(f"confirm must be callable or None, got {described(confirm)}")


def _said(payload: object) -> str:
    """What a strategy's event says of itself (`why`, or a prune's `reason`)."""
    return str(getattr(payload, "why", "") or getattr(payload, "reason", ""))


def _strategy_note(strategy: str, said: list[str]) -> str:
    """A check's note from what its strategy's events say: each account once (a drop's `why`
    may name the prune that came before it), under the strategy's name once."""
    unique = [w for w in dict.fromkeys(said) if w and not any(w != o and w in o for o in said)]
    text = "; ".join(unique)
    return text if text.startswith(f"{strategy}:") else f"{strategy}: {text}"


def _incremental_label(config: CompressionConfig) -> str:
    """What the prune-then-summarize path is, for the session's strategy: the strategy itself,
    adaptive's light stage, or the fallback of a dropping strategy that could not get under."""
    if config.strategy == "incremental":
        return "incremental"
    if config.strategy == "adaptive":
        return "adaptive, light stage"
    return f"incremental, fallback of {config.strategy}"


def _usable(header: SessionStarted) -> int | None:
    """The usable window: the context window minus the output reserve (`None` if unknown)."""
    if header.context_window is None:
        return None
    return max(header.context_window - header.output_reserve, 0)


def _part_ids(part_ids: object) -> list[str]:
    if isinstance(part_ids, str):
        raise InvalidArgument(
            f"part_ids must be a list of part ids, not one str: restore([{brief(part_ids)}])"
        )
    if isinstance(part_ids, bytes | Mapping) or not isinstance(part_ids, Iterable):
        raise InvalidArgument(
            f"part_ids must be a list of part ids or None, got {described(part_ids)}"
        )
    ids = list(part_ids)
    for part_id in ids:
        if not isinstance(part_id, str):
            raise InvalidArgument(f"part_ids must hold str part ids, got {described(part_id)}")
    return ids
