"""Compaction the user confirms: a compaction shown as a plan before anything is written.

A `CompactionProposal` is the compaction a check (or `Session.propose_compaction`) would
append, with what would leave the live context, the summary (computed, not appended), tokens
before and after, and why. The caller says yes (`Session.apply`, or a `confirm` callback that
returns True) or no; a no appends nothing and leaves two other ways out, both ordinary calls:
`Session.drop_oldest_turns(n)` and `Session.fork_with_summary(proposal)`. `CompactionRefused`
is the third, stopping.

Pure: the plans here read live messages and return ids; the `Session` appends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionstore.context._policies import turn_starts
from sessionstore.context._summarize import called_back
from sessionstore.events import (
    CompactionError,
    CompactionReason,
    ContextCompacted,
    InvalidArgument,
    SessionStoreError,
    TextPart,
    described,
)
from sessionstore.projections import LiveMessage, always_kept


@dataclass(frozen=True, slots=True)
class CompactionProposal:
    """A compaction planned on `session_id` at `version`, not appended.

    `leaving` are the ids of the messages the summary would replace (they leave the live
    context; the log keeps them), `leaving_tokens` their tokens; `summary` is the summary's
    text, `summary_tokens` its count; `tokens_before`/`tokens_after` the live context's size
    without and with it; `reason` the check point (`before_llm_call`, `after_tool`) or
    `manual`. `Session.apply` appends exactly this compaction, and only while the session is
    still at `version`."""

    session_id: str
    version: int
    reason: CompactionReason
    leaving: tuple[str, ...]
    leaving_tokens: int
    summary: str
    summary_tokens: int
    tokens_before: int
    tokens_after: int
    first_kept_message_id: str
    summarizer: str
    event: ContextCompacted = field(repr=False, compare=False)
    """The event `apply` appends (its summary message id is fixed here, so the plan shown is
    the one written)."""


def proposal_of(session_id: str, version: int, event: ContextCompacted) -> CompactionProposal:
    """The proposal that shows `event`, planned at `version`."""
    text = "".join(p.text for p in event.summary.parts if isinstance(p, TextPart))
    summary_tokens = sum(p.tokens or 0 for p in event.summary.parts if isinstance(p, TextPart))
    leaving_tokens = event.tokens_before - event.tokens_after + summary_tokens
    return CompactionProposal(
        session_id=session_id,
        version=version,
        reason=event.reason,
        leaving=event.replaced_message_ids,
        leaving_tokens=leaving_tokens,
        summary=text,
        summary_tokens=summary_tokens,
        tokens_before=event.tokens_before,
        tokens_after=event.tokens_after,
        first_kept_message_id=event.first_kept_message_id,
        summarizer=event.summarizer,
        event=event,
    )


Confirm = Callable[[CompactionProposal], Any]
"""A callback that is shown a proposal and returns True to append it, False to refuse (an
awaitable of that on the async face)."""


def confirmed(confirm: Confirm, proposal: CompactionProposal) -> bool:
    """What `confirm` answers to `proposal`, awaited when it returns an awaitable (on the
    `AsyncSession` caller's loop, as an async summarizer is).

    The answer must be a bool: anything else is a mistake worth naming rather than a truthy
    yes that compacts a session the user meant to keep. A callback that raises, or answers
    something else, fails the compaction as a failing summarizer does: `CompactionError`,
    nothing appended for it (the check's `CompactionError.check` says what it did before)."""
    answer = called_back("the confirm callback", lambda: confirm(proposal))
    if not isinstance(answer, bool):
        raise CompactionError(f"confirm must return True or False, got {described(answer)}")
    return answer


class CompactionRefused(SessionStoreError):
    """A compaction was refused and the caller chose to stop: nothing was appended. The
    message names the two other ways out; `proposal` is the refused plan."""

    def __init__(self, proposal: CompactionProposal, drop_turns: int) -> None:
        turns = (
            f"s.drop_oldest_turns({drop_turns}) takes the oldest turns out of the live context"
            if drop_turns
            else "s.drop_oldest_turns(n) cannot help: only the current turn is left"
        )
        super().__init__(
            f"compaction of session {proposal.session_id!r} refused "
            f"({proposal.tokens_before:,} -> {proposal.tokens_after:,} tokens); nothing was "
            f"appended. Instead: {turns}, or s.fork_with_summary(proposal) starts a new "
            "session with the summary and the kept messages"
        )
        self.proposal = proposal
        self.drop_turns = drop_turns


# dropping the oldest turns


def oldest_turns(messages: Sequence[LiveMessage], n: int) -> tuple[str, ...]:
    """Ids of the messages of the oldest `n` user turns, except system and pinned messages
    and the other half of their tool call/result pairs; what precedes the first turn (the
    system prompt, a summary) stays. `InvalidArgument` when that would leave no turn: the
    current one always stays."""
    starts = turn_starts(messages)
    if n >= len(starts):
        raise InvalidArgument(
            f"n must be less than the {len(starts)} user turn(s) in the live context "
            "(the current turn always stays)"
        )
    kept = always_kept(
        [(m.id, m.role, m.parts) for m in messages], {m.id for m in messages if m.pinned}
    )
    return tuple(m.id for m in messages[starts[0] : starts[n]] if m.id not in kept) if n else ()


def turns_to_drop(messages: Sequence[LiveMessage], needed: int | None) -> int:
    """The fewest oldest turns whose messages hold `needed` tokens (the last turn excluded);
    every droppable turn when they do not, 0 when there is none or nothing is needed."""
    starts = turn_starts(messages)
    if needed is None or needed <= 0 or len(starts) < 2:
        return 0
    kept = always_kept(
        [(m.id, m.role, m.parts) for m in messages], {m.id for m in messages if m.pinned}
    )
    freed = 0
    for turn in range(1, len(starts)):
        span = messages[starts[turn - 1] : starts[turn]]
        freed += sum(m.tokens for m in span if m.id not in kept)
        if freed >= needed:
            return turn
    return len(starts) - 1
