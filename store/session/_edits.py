"""Editing what a session's context shows, by hand: restore, redact, revert, undo, pin, pop,
clear.

Each edit is an event appended after the handle's version, read against the fold it has
caught up: the log keeps every original, so an edit takes messages or parts out of the live
context, or brings them back, and replay before it still shows the context as it was (a
redaction alone deletes content, and says so). What the automatic checks and a compaction
decide is `sessionstore.context.WindowKeeper`'s; these are the caller's own decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sessionstore.context import count
from sessionstore.events import (
    ContextCompacted,
    InvalidArgument,
    Message,
    MessagePinned,
    MessagePopped,
    MessagesReverted,
    MessageUnpinned,
    NotInContext,
    OutputsPruned,
    OutputsRestored,
    PartsPreviewed,
    Payload,
    RecordedEvent,
    SessionCleared,
    SessionStarted,
    ToolCallPart,
    ToolResultPart,
    brief,
)
from sessionstore.log import EventLog, plan_redaction, redacted_parts
from sessionstore.projections import ContextFold, context_of
from sessionstore.session._reinstate import plan_restore, taken_out


class ContextEdits:
    """The edits of one session, on its `log`: `fold` is the handle's fold, `catch_up` folds
    in what other writers appended, `append` appends after the fold and folds what it records
    in. The handle checks the arguments; each edit catches up before it reads the fold."""

    def __init__(
        self,
        log: EventLog,
        fold: Callable[[], ContextFold],
        catch_up: Callable[[], None],
        append: Callable[[Sequence[Payload]], list[RecordedEvent]],
    ) -> None:
        self._log = log
        self._fold = fold
        self._catch_up = catch_up
        self._append = append

    def restore(self, wanted: list[str] | None) -> RecordedEvent | None:
        """`Session.restore`: the `OutputsRestored` of `wanted` (every pruned and previewed
        part when `None`), or `None` when each shows its original already."""
        self._catch_up()
        fold = self._fold()
        gone = redacted_parts(self._log.recorder, self._lineage())
        if wanted is None:
            every = [*fold.pruned_part_ids(), *fold.previewed_part_ids()]
            ids = [p for p in dict.fromkeys(every) if p not in gone]
        else:
            ids = list(dict.fromkeys(wanted))
            for part_id in ids:
                if not fold.has_restorable_part(part_id):
                    raise NotInContext(
                        f"no tool result, tool call, reasoning or truncated text {brief(part_id)} "
                        "in the live context"
                    )
                if part_id in gone:
                    raise InvalidArgument(
                        f"part {brief(part_id)} was redacted ({gone[part_id]}): its original "
                        "is deleted and cannot be restored"
                    )
            ids = [part_id for part_id in ids if fold.is_restorable(part_id)]
        if not ids:
            return None
        assert fold.header is not None
        encoding = fold.header.encoding
        counted = {}
        for part_id in ids:
            text = fold.truncated_text(part_id)
            if text is not None:
                if text.truncation is not None and text.truncation.output_tokens is None:
                    counted[part_id] = count(text.text, encoding)
                continue
            part = fold.tool_result(part_id)
            if part is None:
                continue  # cleared reasoning: its count was recorded at append
            if part.truncation is not None and part.truncation.output_tokens is None:
                counted[part_id] = count(part.output, encoding)
        return self._append([OutputsRestored(part_ids=tuple(ids), output_tokens=counted)])[0]

    def redact(self, wanted: list[str], reason: str) -> RecordedEvent | None:
        """`Session.redact`: the `ContentRedacted` of `wanted`, or `None` (and the bodies a
        crash left behind scrubbed) when all of it was redacted already."""
        self._catch_up()
        fold = self._fold()
        event = plan_redaction(self._log.recorder, fold.session_id, fold.seq, wanted, reason)
        if event is None:
            # a redaction retried after a crash between its commit and its scrub scrubs now
            self._log.scrub(f"redacted bodies of {fold.session_id}")
            return None
        return self._append([event])[0]

    def _lineage(self) -> list[str]:
        """This session and the sessions it forks from, nearest first."""
        fold = self._fold()
        chain = [fold.session_id]
        header = fold.header
        while header is not None and header.parent_session_id is not None:
            parent = header.parent_session_id
            if parent in chain:
                break
            chain.append(parent)
            first = self._log.read(parent, 1, 1)[0].payload
            header = first if isinstance(first, SessionStarted) else None
        return chain

    def revert(self, to_message_id: str) -> RecordedEvent | None:
        """`Session.revert`: every message after `to_message_id` leaves, but results of the
        calls made at or before it; `None` when nothing follows it."""
        self._catch_up()
        fold = self._fold()
        self._require_live(to_message_id)
        ids = fold.message_ids()
        point = ids.index(to_message_id)
        kept_calls: set[str] = set()
        reverted = []
        for position, message_id in enumerate(ids):
            message = fold.message(message_id)
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
        return self._append([event])[0]

    def restore_messages(self, seq: int) -> RecordedEvent | None:
        """`Session.restore_messages`: the `MessagesRestored` that undoes the event at `seq`,
        or `None` when its messages are all live."""
        self._catch_up()
        fold = self._fold()
        if seq > fold.seq:
            raise InvalidArgument(f"no event {seq}: the session is at {fold.seq}")
        session_id = fold.session_id
        gone, marker = taken_out(self._log.read(session_id, seq, seq)[0].payload, seq)
        restored = plan_restore(
            seq,
            gone,
            marker,
            live=fold.message_ids(),
            order=[m.id for m in context_of(self._log.fold_at(session_id, seq - 1)).messages],
            history=self._log.read(session_id, 1, seq),
        )
        if restored is None:
            return None
        return self._append([restored])[0]

    def undo(self, seq: int) -> RecordedEvent | None:
        """`Session.undo`: `restore_messages` for a drop or a compaction, `restore` of the
        parts still cut for a prune or previews."""
        self._catch_up()
        fold = self._fold()
        if seq > fold.seq:
            raise InvalidArgument(f"no event {seq}: the session is at {fold.seq}")
        payload = self._log.read(fold.session_id, seq, seq)[0].payload
        if not isinstance(payload, OutputsPruned | PartsPreviewed):
            if not isinstance(payload, ContextCompacted | MessagesReverted):
                raise InvalidArgument(
                    f"event {seq} ({type(payload).__name__}) took nothing out of the context: "
                    "there is nothing to undo"
                )
            return self.restore_messages(seq)
        cut = payload.part_ids if isinstance(payload, OutputsPruned) else tuple(payload.previews)
        gone = redacted_parts(self._log.recorder, self._lineage())
        live = [p for p in cut if fold.is_restorable(p) and p not in gone]
        return self.restore(live) if live else None

    def pin(self, message_id: str) -> RecordedEvent | None:
        self._catch_up()
        self._require_live(message_id)
        if message_id in self._fold().pinned:
            return None
        return self._append([MessagePinned(message_id=message_id)])[0]

    def unpin(self, message_id: str) -> RecordedEvent | None:
        self._catch_up()
        if message_id not in self._fold().pinned:
            return None
        return self._append([MessageUnpinned(message_id=message_id)])[0]

    def pop(self) -> Message | None:
        """`Session.pop`: the newest live message, taken out by a `MessagePopped`."""
        self._catch_up()
        fold = self._fold()
        ids = fold.message_ids()
        if not ids:
            return None
        message = fold.message(ids[-1])
        self._append([MessagePopped(message_id=message.id)])
        return message

    def clear(self, reason: str) -> RecordedEvent | None:
        """`Session.clear`: a `SessionCleared` of every live message; `None` when none is."""
        self._catch_up()
        ids = tuple(self._fold().message_ids())
        if not ids:
            return None
        return self._append([SessionCleared(cleared_message_ids=ids, reason=reason)])[0]

    def _require_live(self, message_id: str) -> None:
        fold = self._fold()
        if not fold.is_live(message_id):
            raise NotInContext(
                f"no message {brief(message_id)} in the live context of {fold.session_id}"
            )
