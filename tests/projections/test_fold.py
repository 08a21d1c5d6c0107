"""The context fold, event by event, on hand-built logs with exact expected contexts."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore.events import (
    Message,
    MessagePinned,
    MessagesReverted,
    MessageUnpinned,
    OutputsPruned,
    OutputsRestored,
    TextPart,
)
from sessionstore.projections import ContextFold, LiveToolResult, context_of, fold_events, timeline
from sessionstore.projections._snapshot import parse_snapshot
from tests.builders import compaction
from tests.projections.log import T0, Log

PLACEHOLDER = "[Output pruned; restore with part id {part_id}]"


def coding_session() -> Log:
    """system, user, call c1, result (100 tokens), call c2, truncated result (30 of 400)."""
    log = Log()
    log.text("system", "You are a coding agent.", 6, "sys")
    log.text("user", "Fix the failing test.", 5, "u1")
    log.call("c1", 10, "a1")
    log.result("c1", "x" * 400, 100, "t1")
    log.call("c2", 10, "a2")
    log.result("c2", "y" * 1600, 30, "t2", shown="y" * 120, output_tokens=400)
    return log


def result_of(fold: ContextFold, message_id: str) -> LiveToolResult:
    part = context_of(fold).message(message_id).parts[0]
    assert isinstance(part, LiveToolResult)
    return part


def test_messages_fold_in_order_with_their_stored_token_counts() -> None:
    fold = fold_events(coding_session().events)
    context = context_of(fold)
    assert [m.id for m in context.messages] == ["sys", "u1", "a1", "t1", "a2", "t2"]
    assert [m.tokens for m in context.messages] == [6, 5, 10, 100, 10, 30]
    assert context.tokens == fold.tokens == 161
    assert (context.seq, context.time) == (7, T0 + timedelta(seconds=7))
    assert (context.model, context.context_window) == ("gpt-4o", 1000)


def test_a_truncated_output_shows_its_truncated_text() -> None:
    fold = fold_events(coding_session().events)
    result = result_of(fold, "t2")
    assert (result.output, result.status, result.tokens) == ("y" * 120, "truncated", 30)


def test_pruned_outputs_show_their_placeholder_and_when_they_were_pruned() -> None:
    log = coding_session()
    log.add(
        OutputsPruned(
            part_ids=("t1.r",), placeholder=PLACEHOLDER, placeholder_tokens=12, tokens_freed=88
        )
    )
    fold = fold_events(log.events)
    result = result_of(fold, "t1")
    assert result.output == "[Output pruned; restore with part id t1.r]"
    assert (result.status, result.tokens) == ("pruned", 12)
    assert result.compacted_at == T0 + timedelta(seconds=8)
    assert fold.tokens == 161 - 88
    assert fold.pruned_part_ids() == ["t1.r"]


def test_restore_brings_back_pruned_and_truncated_originals() -> None:
    log = coding_session()
    log.add(
        OutputsPruned(part_ids=("t1.r",), placeholder="-", placeholder_tokens=1, tokens_freed=99)
    )
    log.add(OutputsRestored(part_ids=("t1.r", "t2.r")))
    fold = fold_events(log.events)
    assert (result_of(fold, "t1").output, result_of(fold, "t1").status) == ("x" * 400, "restored")
    assert (result_of(fold, "t2").output, result_of(fold, "t2").tokens) == ("y" * 1600, 400)
    assert fold.tokens == 161 - 30 + 400
    assert fold.pruned_part_ids() == []


def test_restore_pruned_view_changes_nothing_in_the_fold() -> None:
    log = coding_session()
    log.add(
        OutputsPruned(part_ids=("t1.r",), placeholder="-", placeholder_tokens=1, tokens_freed=99)
    )
    fold = fold_events(log.events)
    restored = context_of(fold, restore_pruned=True)
    assert [m.tokens for m in restored.messages] == [6, 5, 10, 100, 10, 400]
    assert restored.tokens == 531
    assert context_of(fold).tokens == fold.tokens == 62


def test_pruning_an_unknown_or_already_pruned_part_changes_nothing() -> None:
    log = coding_session()
    log.add(
        OutputsPruned(part_ids=("t1.r",), placeholder="-", placeholder_tokens=1, tokens_freed=99)
    )
    fold = fold_events(log.events)
    before = context_of(fold)
    log.add(OutputsPruned(part_ids=("t1.r", "nope"), placeholder="!", tokens_freed=0))
    change = fold.apply(log.events[-1])
    assert change.pruned == ()
    assert context_of(fold).messages == before.messages


def test_compaction_replaces_the_head_by_its_summary_keeping_system_and_pins() -> None:
    log = coding_session()
    log.add(MessagePinned(message_id="u1"))
    summary = Message(id="sum", role="user", parts=(TextPart(text="Summary: read a.py", tokens=7),))
    log.add(
        compaction(summary, "a2", ("sys", "u1", "a1", "t1"), tokens_before=161, tokens_after=58)
    )
    fold = fold_events(log.events)
    context = context_of(fold)
    assert [m.id for m in context.messages] == ["sys", "u1", "sum", "a2", "t2"]
    assert [m.summary for m in context.messages] == [False, False, True, False, False]
    assert context.message("u1").pinned
    assert context.tokens == 6 + 5 + 7 + 10 + 30


def test_unpinned_messages_can_be_compacted_away() -> None:
    log = coding_session()
    log.add(MessagePinned(message_id="u1"))
    log.add(MessageUnpinned(message_id="u1"))
    summary = Message(id="sum", role="user", parts=(TextPart(text="s", tokens=1),))
    log.add(compaction(summary, "a2", ("u1", "a1", "t1"), tokens_before=161, tokens_after=48))
    assert [m.id for m in context_of(fold_events(log.events)).messages] == [
        "sys",
        "sum",
        "a2",
        "t2",
    ]


def test_a_summary_reusing_a_live_message_id_is_not_counted_twice() -> None:
    log = coding_session()
    summary = Message(id="t2", role="user", parts=(TextPart(text="s", tokens=1),))
    log.add(compaction(summary, "a2", ("u1", "a1", "t1"), tokens_before=161, tokens_after=0))
    fold = fold_events(log.events)
    assert fold.message_ids() == ["sys", "a2", "t2"]
    assert fold.tokens == context_of(fold).tokens == 6 + 10 + 30


def test_revert_hides_the_messages_it_names() -> None:
    log = coding_session()
    log.add(MessagesReverted(after_message_id="t1", reverted_message_ids=("a2", "t2")))
    fold = fold_events(log.events)
    assert fold.message_ids() == ["sys", "u1", "a1", "t1"]
    assert fold.tokens == 121


def test_a_duplicate_message_id_is_folded_once() -> None:
    log = coding_session()
    log.text("user", "again", 2, "u1")
    assert fold_events(log.events).message_ids() == ["sys", "u1", "a1", "t1", "a2", "t2"]


def test_pending_calls_are_the_calls_without_a_live_result() -> None:
    log = coding_session()
    log.call("c3", 10, "a3")
    fold = fold_events(log.events)
    assert fold.pending_call_ids() == ["c3"]
    log.add(MessagesReverted(after_message_id="a1", reverted_message_ids=("t1",)))
    fold.apply(log.events[-1])
    assert fold.pending_call_ids() == ["c1", "c3"]


def test_a_fork_keeps_its_parents_history() -> None:
    parent = coding_session()
    fold = fold_events(parent.events[:4])
    child = Log("s2", parent_session_id="s1", parent_seq=4)
    child.text("user", "try another way", 4, "u2")
    fold_events(child.events, fold)
    assert fold.session_id == "s2"
    assert fold.message_ids() == ["sys", "u1", "a1", "u2"]
    assert fold.header is not None and fold.header.parent_seq == 4


@pytest.mark.parametrize("prune", [False, True])
def test_a_snapshot_round_trip_gives_the_same_fold(prune: bool) -> None:
    log = coding_session()
    if prune:
        log.add(OutputsPruned(part_ids=("t1.r",), placeholder="-", tokens_freed=99))
        log.add(OutputsRestored(part_ids=("t2.r",)))
        log.add(MessagePinned(message_id="u1"))
    fold = fold_events(log.events)
    messages = {
        (e.session_id, e.seq): e.payload.message  # type: ignore[attr-defined]
        for e in log.events
        if e.type == "MessageAppended"
    }
    stored = json.dumps(fold.to_snapshot())
    rebuilt = ContextFold.from_snapshot(parse_snapshot(stored), messages)
    assert context_of(rebuilt) == context_of(fold)
    assert rebuilt.to_snapshot() == fold.to_snapshot()


def test_timeline_rows_say_what_each_event_did() -> None:
    log = coding_session()
    log.add(
        OutputsPruned(
            part_ids=("t1.r",), placeholder="-", placeholder_tokens=1, tokens_freed=99, reason="old"
        )
    )
    rows = timeline(log.events)
    assert [(r.seq, r.type, r.tokens) for r in rows] == [
        (1, "SessionStarted", 0),
        (2, "MessageAppended", 6),
        (3, "MessageAppended", 11),
        (4, "MessageAppended", 21),
        (5, "MessageAppended", 121),
        (6, "MessageAppended", 131),
        (7, "MessageAppended", 161),
        (8, "OutputsPruned", 62),
    ]
    assert [r.summary for r in rows] == [
        "started '' on gpt-4o, window 1,000",
        "system: You are a coding agent.",
        "user: Fix the failing test.",
        'assistant: read({"path":"a.py"})',
        "tool: read -> 400 bytes",
        'assistant: read({"path":"a.py"})',
        "tool: read -> 1,600 bytes, truncated",
        "pruned 1 tool output(s), freed 99 tokens (old)",
    ]
    assert rows[1].added == ("sys",)
    assert rows[7].pruned == ("t1.r",)


_CHANGES = [
    OutputsPruned(part_ids=("t1.r",), placeholder="-", placeholder_tokens=1, tokens_freed=99),
    OutputsPruned(part_ids=("t2.r",), placeholder="~", placeholder_tokens=2, tokens_freed=28),
    OutputsRestored(part_ids=("t1.r",)),
    OutputsRestored(part_ids=("t1.r", "t2.r")),
    MessagePinned(message_id="u1"),
    MessagePinned(message_id="t1"),
    MessageUnpinned(message_id="u1"),
    MessageUnpinned(message_id="t1"),
    MessagesReverted(after_message_id="t1", reverted_message_ids=("a2", "t2")),
]


@given(st.lists(st.sampled_from(range(len(_CHANGES) + 1)), max_size=12))
def test_a_fold_rendered_after_every_event_matches_a_fresh_fold(picks: list[int]) -> None:
    """The fold keeps each message as last rendered; every prune, restore, pin, compaction
    and revert must show in the next render exactly as a fresh fold of the same events."""
    log = coding_session()
    for pick in picks:
        if pick < len(_CHANGES):
            log.add(_CHANGES[pick])
        else:  # a compaction, then the conversation goes on
            summary = Message(id=f"sum{len(log.events)}", role="user", parts=(TextPart(text="s"),))
            log.add(compaction(summary, "a2", ("u1", "a1", "t1"), tokens_before=0, tokens_after=0))
            log.text("user", "go on", 2, f"u{len(log.events)}")
    live = ContextFold()
    for n, event in enumerate(log.events, start=1):
        live.apply(event)
        assert context_of(live) == context_of(fold_events(log.events[:n]))
