"""Overflow, pruning and compaction decisions on hand-built contexts, with exact expected part
ids and token figures."""

from __future__ import annotations

from datetime import UTC, datetime

from sessionstore.context._policies import (
    Measure,
    cooling_down,
    measure,
    plan_compaction,
    plan_prune,
)
from sessionstore.events import (
    CompressionConfig,
    Message,
    MessagePinned,
    OutputsPruned,
    ToolCallPart,
    Usage,
)
from sessionstore.projections import LiveMessage, context_of, fold_events
from tests.builders import compaction
from tests.projections.log import Log

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
CONFIG = CompressionConfig(
    protect_turns=2, protect_tokens=100, minimum_prune=50, protected_tools=("skill",)
)


def five_tokens(_: str) -> int:
    return 5


def turns_log() -> Log:
    """u1, read (60) · skill (80) · read (70) | u2, read (90) | u3, read (500)."""
    log = Log()
    log.text("user", "one", 1, "u1")
    for n, (name, tokens) in enumerate([("read", 60), ("skill", 80), ("read", 70)], start=1):
        log.call(f"c{n}", 5, f"a{n}", name=name)
        log.result(f"c{n}", "x", tokens, f"t{n}", name=name)
    log.text("user", "two", 1, "u2")
    log.call("c4", 5, "a4")
    log.result("c4", "x", 90, "t4")
    log.text("user", "three", 1, "u3")
    log.call("c5", 5, "a5")
    log.result("c5", "x", 500, "t5")
    return log


def messages_of(log: Log) -> tuple[LiveMessage, ...]:
    return context_of(fold_events(log.events)).messages


def test_prune_skips_the_last_two_turns_and_the_newest_protected_tokens() -> None:
    plan = plan_prune(messages_of(turns_log()), CONFIG, now=NOW, count=five_tokens)
    assert plan is not None
    # t5 and t4 are in the last two turns; t3 (70) fits in protect_tokens; t2 is a skill;
    # t1 (70 + 60 > 100) is old enough.
    assert plan.part_ids == ("t1.r",)
    assert (plan.tokens, plan.placeholder_tokens, plan.tokens_freed) == (60, 5, 55)
    assert plan.worth_it
    assert plan.placeholder == (
        "[Output pruned at 2026-11-23T09:00:00Z; restore with part id {part_id}]"
    )
    event = plan.event("overflow")
    assert (event.part_ids, event.tokens_freed, event.reason) == (("t1.r",), 55, "overflow")


def test_prune_is_not_worth_it_below_the_minimum() -> None:
    config = CONFIG.model_copy(update={"minimum_prune": 56})
    plan = plan_prune(messages_of(turns_log()), config, now=NOW, count=five_tokens)
    assert plan is not None and not plan.worth_it


def test_prune_stops_at_an_output_pruned_already() -> None:
    log = Log()
    log.text("user", "zero", 1, "u0")
    log.call("c0", 5, "a0")
    log.result("c0", "x", 300, "t0")
    log.add(
        OutputsPruned(part_ids=("t0.r",), placeholder="-", placeholder_tokens=1, tokens_freed=0)
    )
    log.call("c9", 5, "a9")
    log.result("c9", "x", 400, "t9")
    for event in turns_log().events[1:]:
        log.add(event.payload)
    plan = plan_prune(messages_of(log), CONFIG, now=NOW, count=five_tokens)
    assert plan is not None
    assert plan.part_ids == ("t9.r", "t1.r")  # oldest first; t0 and anything older: not again


def test_prune_leaves_pinned_messages_alone() -> None:
    log = turns_log()
    log.add(MessagePinned(message_id="t1"))
    assert plan_prune(messages_of(log), CONFIG, now=NOW, count=five_tokens) is None


def test_prune_leaves_outputs_no_longer_than_their_placeholder() -> None:
    log = Log()
    log.text("user", "zero", 1, "u0")
    log.call("c0", 5, "a0")
    log.result("c0", "Edited a.py", 5, "t0")  # 5 tokens: a 5-token placeholder frees nothing
    log.call("c8", 5, "a8")
    log.result("c8", "x", 6, "t8")
    for event in turns_log().events[1:]:
        log.add(event.payload)
    plan = plan_prune(messages_of(log), CONFIG, now=NOW, count=five_tokens)
    assert plan is not None
    assert plan.part_ids == ("t8.r", "t1.r")
    assert (plan.tokens, plan.tokens_freed) == (66, 66 - 2 * 5)


def conversation() -> Log:
    """sys · u1 · a1(c1) · t1 · u2 · a2(c2) · t2 · u3 · a3"""
    log = Log()
    log.text("system", "be brief", 3, "sys")
    log.text("user", "task", 10, "u1")
    log.call("c1", 5, "a1")
    log.result("c1", "x", 100, "t1")
    log.text("user", "more", 10, "u2")
    log.call("c2", 5, "a2")
    log.result("c2", "x", 100, "t2")
    log.text("user", "last", 10, "u3")
    log.text("assistant", "done", 10, "a3")
    return log


def test_compaction_keeps_the_last_two_turns() -> None:
    plan = plan_compaction(messages_of(conversation()), keep_turns=2, keep_tokens=0)
    assert plan is not None
    assert plan.first_kept_message_id == "u2"
    assert [m.id for m in plan.replaced] == ["u1", "a1", "t1"]
    assert plan.replaced_tokens == 115


def test_compaction_keeps_more_turns_to_reach_keep_tokens() -> None:
    plan = plan_compaction(messages_of(conversation()), keep_turns=1, keep_tokens=100)
    assert plan is not None
    # the last turn (u3, a3) holds 20 tokens; a2 is the latest cut that keeps 100 or more
    assert plan.first_kept_message_id == "a2"
    assert [m.id for m in plan.replaced] == ["u1", "a1", "t1", "u2"]


def test_compaction_never_cuts_between_a_call_and_its_result() -> None:
    log = conversation()
    log.message(Message(id="a4", role="assistant", parts=(ToolCallPart(call_id="c4", name="ls"),)))
    log.text("user", "meanwhile", 10, "u4")  # the user speaks before the result arrives
    log.result("c4", "x", 10, "t4")
    plan = plan_compaction(messages_of(log), keep_turns=1, keep_tokens=0)
    assert plan is not None
    assert plan.first_kept_message_id == "a4"  # not u4: c4's result lies after it


def test_compaction_keeps_a_pinned_call_with_its_result() -> None:
    log = conversation()
    log.add(MessagePinned(message_id="a1"))
    plan = plan_compaction(messages_of(log), keep_turns=2, keep_tokens=0)
    assert plan is not None
    assert [m.id for m in plan.replaced] == ["u1"]


def test_nothing_to_compact_when_everything_before_the_cut_stays() -> None:
    log = conversation()
    for message_id in ("u1", "a1"):
        log.add(MessagePinned(message_id=message_id))
    assert plan_compaction(messages_of(log), keep_turns=2, keep_tokens=0) is None


def test_measure_uses_stored_counts_plus_the_safety_margin() -> None:
    fold = fold_events(conversation().events)
    header = fold.header
    assert header is not None
    fold.header = header.model_copy(update={"context_window": 1000, "output_reserve": 100})
    result = measure(fold, CompressionConfig(safety_margin=50, safety_margin_ratio=1))
    assert (result.tokens, result.source, result.usable, result.limit) == (
        fold.tokens + 50,
        "stored",
        900,
        720,
    )
    assert fold.tokens == 253 and not result.overflowing


def test_measure_starts_from_the_providers_usage_while_only_appends_follow() -> None:
    log = conversation()
    log.message(
        Message(
            id="a5",
            role="assistant",
            parts=(ToolCallPart(call_id="c5", name="ls", tokens=5),),
            usage=Usage(input=600, cache_read=100, cache_write=50, output=20),
        )
    )
    log.result("c5", "x", 30, "t5")
    fold = fold_events(log.events)
    result = measure(fold, CompressionConfig())
    assert (result.tokens, result.source) == (600 + 100 + 50 + 20 + 30, "usage")
    log.add(
        OutputsPruned(part_ids=("t5.r",), placeholder="-", placeholder_tokens=1, tokens_freed=0)
    )
    fold.apply(log.events[-1])
    assert measure(fold, CompressionConfig(safety_margin=0)).source == "stored"


def test_cooldown_after_a_compaction_that_left_the_context_too_big() -> None:
    log = conversation()
    log.add(compaction("summary", "u2", ["u1", "a1", "t1"]))
    fold = fold_events(log.events)
    config = CompressionConfig(cooldown_events=3, safety_margin=0)
    after = fold.tokens
    assert fold.last_compaction == (fold.seq, after)

    def at(tokens: int, limit: int) -> Measure:
        return Measure(tokens, "stored", limit, 10_000)

    assert cooling_down(fold, config, at(after, limit=after - 1))
    assert not cooling_down(fold, config, at(after, limit=after))  # it did get under the limit
    assert not cooling_down(fold, config, at(after + 1, limit=after - 1))  # it grew since
    for n in range(3):
        log.text("user", f"new {n}", 1, f"n{n}")
        fold.apply(log.events[-1])
    assert not cooling_down(fold, config, at(after, limit=0))  # cooldown_events have passed


def test_a_fork_does_not_inherit_its_parents_cooldown() -> None:
    parent = conversation()
    parent.add(compaction("summary", "u2", ["u1", "a1", "t1"]))
    fold = fold_events(parent.events)
    fork = Log("s2", parent_session_id="s1", parent_seq=fold.seq)
    fold_events(fork.events, fold)
    assert fold.last_compaction is None
