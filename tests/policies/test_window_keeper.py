"""`WindowKeeper` through its narrow interface alone: a fold in memory, a list for a log, a fixed
clock, a word counter and a stub summarizer; no database. Each decision is checked by the
events it appended, with exact ids and token figures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from sessionstore.context import (
    CompactionProposal,
    ContextCheck,
    SessionView,
    WindowKeeper,
    WindowMemory,
)
from sessionstore.events import (
    CompactionError,
    CompressionConfig,
    ConcurrencyError,
    ContextCompacted,
    Message,
    MessagesReverted,
    OutputsPruned,
    PartsPreviewed,
    Payload,
    Preview,
    RecordedEvent,
    ToolCallPart,
    Usage,
)
from sessionstore.projections import NOTICE, SUMMARY_MARKER, LiveMessage, context_of, fold_events
from tests.projections.log import Log

NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
CONFIG = CompressionConfig(safety_margin=0)
"""Defaults, but for the margin: the stored counts are the measure, to the token. In `Log`'s
window of 1,000 tokens (no output reserve) the limit is 800, outputs are protected up to 250
tokens, a prune must free 100, and compaction keeps 150."""


def words(text: str) -> int:
    return len(text.split())


@dataclass
class StubSummarizer:
    """Returns `text` and remembers the ids of the messages it was given."""

    text: str = "read a.py three times"
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def __call__(self, messages: Sequence[LiveMessage], target_tokens: int) -> str:
        self.calls.append(tuple(m.id for m in messages))
        return self.text


class InMemorySession:
    """A session held in memory: the fold of a `Log`, and an append that adds payloads to the
    log and folds them in, as `Session.append_events` does with a database."""

    def __init__(self, log: Log, config: CompressionConfig = CONFIG) -> None:
        self.log = log
        self.fold = fold_events(log.events)
        self.config = config
        self.summarizer = StubSummarizer()
        """The session's own: a check that names none, and `propose_compaction`, use it."""
        self.memory = WindowMemory()
        self.view = SessionView(
            fold=lambda: self.fold,
            live=lambda: context_of(self.fold),
            append=self.append,
            read=lambda first, last: self.log.events[first - 1 : last],
            clock=lambda: NOW,
            count=words,
            config=lambda: self.config,
            summarizer=lambda: self.summarizer,
        )
        self.keeper = WindowKeeper(self.view, self.memory)

    def append(self, payloads: Sequence[Payload]) -> list[RecordedEvent]:
        recorded = [self.log.add(payload) for payload in payloads]
        for event in recorded:
            self.fold.apply(event)
        return recorded

    @property
    def live_ids(self) -> list[str]:
        return [m.id for m in context_of(self.fold).messages]


def three_reads(outputs: tuple[int, int, int] = (300, 300, 300)) -> Log:
    """u1 (10), then three read steps: a call (5) and its output (as given) each."""
    log = Log(output_reserve=0)
    log.text("user", "read a.py", 10, "u1")
    for n, tokens in enumerate(outputs, start=1):
        log.call(f"c{n}", 5, f"a{n}")
        log.result(f"c{n}", "x", tokens, f"t{n}")
    return log


def three_turns() -> Log:
    """Three user turns of one read each: u (10), call (5), output (100); 345 tokens."""
    log = Log(output_reserve=0)
    for n in (1, 2, 3):
        log.text("user", f"step {n}", 10, f"u{n}")
        log.call(f"c{n}", 5, f"a{n}")
        log.result(f"c{n}", "x", 100, f"t{n}")
    return log


def four_turns() -> Log:
    """Four user turns of text alone (nothing to prune): u (200), answer (10); 840 tokens."""
    log = Log(output_reserve=0)
    for n in (1, 2, 3, 4):
        log.text("user", f"step {n}", 200, f"u{n}")
        log.text("assistant", f"done {n}", 10, f"a{n}")
    return log


def test_the_measure_is_the_folds_tokens_against_the_limit() -> None:
    session = InMemorySession(three_reads())

    measured = session.keeper.measure()

    assert (measured.tokens, measured.source, measured.limit, measured.usable) == (
        925,
        "stored",
        800,
        1000,
    )
    assert measured.overflowing


def test_a_check_prunes_through_the_append_callable_and_stops_when_that_is_enough() -> None:
    session = InMemorySession(three_reads())

    check = session.keeper.keep_in_window("before_llm_call")

    assert len(session.log.events) == 9  # the session's 8 and the prune
    assert check.pruned is session.log.events[-1]
    prune = check.pruned.payload
    assert isinstance(prune, OutputsPruned)
    # t3 answers the newest call: it stays; t1 and t2 leave, the oldest first
    assert prune.part_ids == ("t1.r", "t2.r")
    placeholder = "[Output pruned at 2026-11-23T10:00:00Z; restore with part id {part_id}]"
    assert prune.placeholder == placeholder
    assert prune.placeholder_tokens == 9  # its words, with the id in it
    assert prune.tokens_freed == 600 - 2 * 9
    assert prune.reason == "overflow at before_llm_call (incremental)"
    assert (check.before.tokens, check.after.tokens) == (925, 925 - 582)
    assert check.compactions == ()
    assert check.note == "pruning was enough"
    assert check.acted and not check.over_window
    assert session.summarizer.calls == []


def test_a_context_within_the_window_is_left_alone() -> None:
    session = InMemorySession(three_reads((100, 100, 100)))

    check = session.keeper.keep_in_window("after_tool")

    assert check == ContextCheck(
        "after_tool", check.before, check.before, None, (), "within the window"
    )
    assert check.before.tokens == 325
    assert len(session.log.events) == 8


def test_a_huge_output_of_the_current_step_is_cut_to_a_preview_to_fit() -> None:
    session = InMemorySession(three_reads((1, 1, 1200)))
    summarizer = StubSummarizer("word " * 20)

    check = session.keeper.keep_in_window("before_llm_call", summarizer)

    # no output is worth pruning; the first two attempts keep every turn (there is one), the
    # last keeps none: it summarizes all before the current step (22 tokens), into 24; the
    # step's own output, over the window alone, is then cut to a preview (its notice: 15)
    assert summarizer.calls == [("u1", "a1", "t1", "a2", "t2")]
    assert check.skipped == ((22, 24),)
    assert check.pruned is None and check.compactions == ()
    assert check.previewed is not None and check.previewed.seq == 9
    assert check.previewed.payload == PartsPreviewed(
        previews={"t3.r": Preview(chars=0, tokens=15)},
        notice=NOTICE,
        tokens_freed=1185,
        strategy="fit",
        why=(
            "over the window by 227 tokens after pruning and compaction: 1 tool field(s) cut "
            "to head and tail previews, the newest step's results first, freeing 1,185"
        ),
    )
    assert (check.after.tokens, check.after.usable) == (42, 1000)
    assert not check.over_window and not check.beyond_window
    assert check.note == (
        "still overflowing: every summary saved less than 20% of what it would replace; "
        "cooling down; then 1 tool field(s) cut to previews to fit the window"
    )
    assert len(session.log.events) == 9  # the previews alone

    # the next check, by a keeper made anew on the same memory, finds it within the window
    again = WindowKeeper(session.view, session.memory).keep_in_window("after_tool", summarizer)
    assert (again.note, len(summarizer.calls)) == ("within the window", 1)


def test_a_check_that_cannot_shrink_a_huge_answer_rests_until_the_context_grows() -> None:
    log = three_reads((1, 1, 1))
    log.text("assistant", "a long answer", 1200, "a4")  # no preview shrinks an answer
    session = InMemorySession(log)
    summarizer = StubSummarizer("word " * 20)

    first = session.keeper.keep_in_window("before_llm_call", summarizer)
    assert (first.previewed, first.over_window, first.beyond_window) == (None, True, False)
    assert len(summarizer.calls) == 1

    # the next check, by a keeper made anew on the same memory, rests: nothing has grown
    again = WindowKeeper(session.view, session.memory).keep_in_window("after_tool", summarizer)

    assert len(summarizer.calls) == 1
    assert again.note == "still overflowing: compaction could not shrink it further; cooling down"
    assert again.over_window
    # a fresh memory knows of no failed check: it tries, and fails, again
    WindowKeeper(session.view).keep_in_window("after_tool", summarizer)
    assert len(summarizer.calls) == 2


def test_a_check_compacts_by_the_stub_summarizer_when_pruning_is_not_enough() -> None:
    session = InMemorySession(four_turns())
    summarizer = StubSummarizer("four steps, all done")

    check = session.keeper.keep_in_window("before_llm_call", summarizer)

    # keep_recent_turns=2 and 150 tokens: the cut is before u3, so u1..a2 are summarized
    assert summarizer.calls == [("u1", "a1", "u2", "a2")]
    assert session.summarizer.calls == []  # the call's, not the session's
    (event,) = check.compactions
    compacted = event.payload
    assert isinstance(compacted, ContextCompacted)
    summary_tokens = words(f"{SUMMARY_MARKER}\nfour steps, all done")
    assert (compacted.tokens_before, compacted.tokens_after) == (840, 420 + summary_tokens)
    assert compacted.first_kept_message_id == "u3"
    assert compacted.replaced_message_ids == ("u1", "a1", "u2", "a2")
    assert compacted.strategy == "incremental"
    assert compacted.why == (
        "incremental: summarized 4 message(s), keeping 2 turn(s) and 150 tokens (attempt 1)"
    )
    assert check.note == "compacted in 1 attempt(s)"
    assert check.after.tokens == 420 + summary_tokens
    assert session.live_ids == [compacted.summary.id, "u3", "a3", "u4", "a4"]


def test_a_declined_compaction_appends_nothing_and_names_the_turns_to_drop() -> None:
    session = InMemorySession(four_turns())
    shown: list[CompactionProposal] = []

    def refuse(proposal: CompactionProposal) -> bool:
        shown.append(proposal)
        return False

    check = session.keeper.keep_in_window("before_llm_call", confirm=refuse)

    assert check.declined is shown[0]
    assert (check.declined.session_id, check.declined.version) == ("s1", 9)
    assert check.declined.leaving == ("u1", "a1", "u2", "a2")
    assert check.compactions == () and len(session.log.events) == 9
    assert check.drop_turns == 1  # the oldest turn's 210 tokens get 840 under 800
    assert check.note == "compaction declined: nothing appended for it"

    dropped = session.keeper.drop_oldest_turns(check.drop_turns)

    assert dropped is session.log.events[-1]
    assert isinstance(dropped.payload, MessagesReverted)
    assert dropped.payload.reverted_message_ids == ("u1", "a1")
    assert session.keeper.measure().tokens == 630


def test_a_proposal_is_applied_exactly_while_the_session_has_not_moved() -> None:
    session = InMemorySession(three_turns())

    proposal = session.keeper.propose_compaction(keep_turns=1, keep_tokens=0)

    assert session.summarizer.calls == [("u1", "a1", "t1", "u2", "a2", "t2")]
    assert len(session.log.events) == 10  # proposing appends nothing
    summary_tokens = words(f"{SUMMARY_MARKER}\nread a.py three times")
    assert (proposal.version, proposal.leaving_tokens, proposal.summary_tokens) == (
        10,
        230,
        summary_tokens,
    )
    assert (proposal.tokens_before, proposal.tokens_after) == (345, 115 + summary_tokens)

    applied = session.keeper.apply(proposal)

    assert applied.payload is proposal.event
    assert session.fold.tokens == 115 + summary_tokens
    assert session.live_ids == [proposal.event.summary.id, "u3", "a3", "t3"]
    with pytest.raises(ConcurrencyError):
        session.keeper.apply(proposal)  # made at version 10; the session is at 11


def test_a_summary_that_saves_too_little_is_refused_and_nothing_is_appended() -> None:
    session = InMemorySession(three_turns())
    session.summarizer = StubSummarizer("word " * 200)

    refused = r"^the summary \(204 tokens\) saves less than 20% of the 230 tokens it would replace$"
    with pytest.raises(CompactionError, match=refused):
        session.keeper.propose_compaction(keep_turns=1, keep_tokens=0)
    assert len(session.log.events) == 10


def test_a_manual_prune_is_a_plan_a_dry_run_does_not_append() -> None:
    session = InMemorySession(three_reads())

    planned = session.keeper.prune(dry_run=True)

    assert planned is not None and planned.worth_it
    assert planned.part_ids == ("t1.r", "t2.r")
    assert len(session.log.events) == 8

    pruned = session.keeper.prune(reason="by hand")

    assert pruned == planned
    payload = session.log.events[-1].payload
    assert isinstance(payload, OutputsPruned)
    assert (payload.part_ids, payload.reason) == (("t1.r", "t2.r"), "by hand")
    assert session.fold.tokens == 925 - 582


def test_a_fit_after_a_reported_usage_gets_under_the_window_as_the_next_measure_counts() -> None:
    """The provider's figure said 15 tokens over; a preview resets it, and the context is then
    measured by the stored counts plus the safety margin (100 here): the cut is sized for that."""
    log = Log(output_reserve=0)
    log.text("user", "read a.py", 10, "u1")
    call = ToolCallPart.from_input(id="a1.c", call_id="c1", name="read", input={}, tokens=5)
    log.message(Message(id="a1", role="assistant", parts=(call,), usage=Usage(input=15)))
    text = " ".join(f"w{k}" for k in range(1000))
    log.result("c1", text, 1000, "t1")
    session = InMemorySession(log, CompressionConfig(safety_margin_ratio=0.1))

    check = session.keeper.keep_in_window("after_tool")

    assert (check.before.source, check.before.tokens) == ("usage", 1015)
    assert check.previewed is not None
    assert (check.after.source, check.after.usable) == ("stored", 1000)
    assert check.after.tokens <= 1000 and not check.over_window
