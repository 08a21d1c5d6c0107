"""The context strategies' plans on one fixed session, with the exact events they return, and
the thinking guard every strategy shares."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sessionstore.context._policies import plan_compaction
from sessionstore.context._strategies import (
    MARKER,
    blocks,
    guard_compaction,
    plan_importance,
    plan_selective,
    plan_sliding_window,
    plan_strategy,
    selective_kind,
    thinking_protected,
)
from sessionstore.events import (
    CompressionConfig,
    ContextCompacted,
    InvalidArgument,
    Message,
    MessagePinned,
    MessagesReverted,
    Native,
    OutputsPruned,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.events._compression import DEFAULT_SELECTIVE, SelectiveRule
from sessionstore.projections import LiveMessage, context_of, fold_events
from tests.projections.log import Log

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def five_tokens(_: str) -> int:
    return 5


def session(*, more: bool = False) -> Log:
    """sys (10) | u1 (10) · a1 read (5) + t1 (100) · a2 edit (5) + t2 (50) | u2 (10) · a3
    (5) + t3 error (200) | u3 (10) · a4 thinking (20) + call (5) + t4 (100) [· a5 (5) + t5
    (100)]."""
    log = Log()
    log.text("system", "be brief", 10, "sys")
    log.text("user", "one", 10, "u1")
    log.call("c1", 5, "a1")
    log.result("c1", "x", 100, "t1")
    log.call("c2", 5, "a2", name="edit")
    log.result("c2", "x", 50, "t2", name="edit")
    log.text("user", "two", 10, "u2")
    log.call("c3", 5, "a3")
    error = ToolResultPart(id="t3.r", call_id="c3", name="read", output="x", is_error=True)
    log.message(Message(id="t3", role="tool", parts=(error.model_copy(update={"tokens": 200}),)))
    log.text("user", "three", 10, "u3")
    thinking = ReasoningPart(id="a4.k", text="hm", tokens=20)
    call = ToolCallPart.from_input(id="a4.c", call_id="c4", name="read", input={}, tokens=5)
    log.message(Message(id="a4", role="assistant", parts=(thinking, call)))
    log.result("c4", "x", 100, "t4")
    if more:
        log.call("c5", 5, "a5")
        log.result("c5", "x", 100, "t5")
    return log


def messages_of(log: Log) -> tuple[LiveMessage, ...]:
    return context_of(fold_events(log.events)).messages


def ids(messages: tuple[LiveMessage, ...]) -> list[str]:
    return [m.id for m in messages]


def test_blocks_keep_each_call_with_its_result() -> None:
    split = [[m.id for m in block] for block in blocks(messages_of(session()))]
    assert split == [
        ["sys"],
        ["u1"],
        ["a1", "t1"],
        ["a2", "t2"],
        ["u2"],
        ["a3", "t3"],
        ["u3"],
        ["a4", "t4"],
    ]


def test_the_sliding_window_keeps_the_newest_messages_and_the_system_prompt() -> None:
    config = CompressionConfig(strategy="sliding_window", window_messages=4)
    drop = plan_sliding_window(messages_of(session()), config, needed=None)
    assert drop is not None
    # a4 + t4 and u3 fit in 4 messages; a3 + t3 would make 5
    assert ids(drop.removed) == ["u1", "a1", "t1", "a2", "t2", "u2", "a3", "t3"]
    assert drop.tokens == 385


def test_the_sliding_window_drops_more_when_the_window_does_not_free_enough() -> None:
    config = CompressionConfig(strategy="sliding_window", window_messages=10)
    drop = plan_sliding_window(messages_of(session()), config, needed=100)
    assert drop is not None
    # only u1 falls outside 10 messages (10 tokens); a1 + t1, the oldest kept, frees the rest
    assert ids(drop.removed) == ["u1", "a1", "t1"]


def test_the_sliding_window_event_is_a_marker_that_names_its_strategy() -> None:
    messages = messages_of(session())
    config = CompressionConfig(strategy="sliding_window", window_messages=4)
    (event,) = plan_strategy(
        messages, config, reason="before_llm_call", tokens_before=600, needed=None,
        count=five_tokens,
    )  # fmt: skip
    assert isinstance(event, ContextCompacted)
    text = MARKER.format(count=8, strategy="sliding window")
    part = TextPart(id=event.summary.parts[0].id, text=text, tokens=5)
    assert event == ContextCompacted(
        summary=Message(id=event.summary.id, role="user", parts=(part,)),
        first_kept_message_id="u3",
        replaced_message_ids=("u1", "a1", "t1", "a2", "t2", "u2", "a3", "t3"),
        tokens_before=600,
        tokens_after=600 - 385 + 5,
        reason="before_llm_call",
        summarizer="marker",
        strategy="sliding_window",
        why="kept the newest 4 messages; 8 older message(s) left",
    )


def test_without_a_marker_the_messages_leave_by_a_revert_naming_them() -> None:
    config = CompressionConfig(strategy="sliding_window", window_messages=4, window_marker=False)
    (event,) = plan_strategy(
        messages_of(session()), config, reason="after_tool", tokens_before=600, needed=None,
        count=five_tokens,
    )  # fmt: skip
    assert event == MessagesReverted(
        after_message_id="sys",
        reverted_message_ids=("u1", "a1", "t1", "a2", "t2", "u2", "a3", "t3"),
        strategy="sliding_window",
        why="kept the newest 4 messages; 8 older message(s) left",
    )


def test_importance_drops_the_lowest_scored_blocks_first() -> None:
    config = CompressionConfig(strategy="importance")
    drop = plan_importance(messages_of(session()), config, needed=150)
    assert drop is not None
    # scores: a1+t1 3.1, u1 4.6, a2+t2 (an edit) 5.7, u2 6.3, u3 7.4, a3+t3 (an error) 7.9
    assert ids(drop.removed) == ["u1", "a1", "t1", "a2", "t2"]
    assert drop.why == (
        "dropped 3 lowest-scored block(s) (5 message(s), scores up to 5.7) to free 150 tokens"
    )
    assert plan_importance(messages_of(session()), config, needed=0) is None


def test_importance_marker_sits_where_the_first_dropped_message_was() -> None:
    log = session()
    config = CompressionConfig(strategy="importance")
    (event,) = plan_strategy(
        messages_of(log), config, reason="after_tool", tokens_before=600, needed=150,
        count=five_tokens,
    )  # fmt: skip
    assert isinstance(event, ContextCompacted)
    log.add(event)
    assert ids(context_of(fold_events(log.events)).messages) == [
        "sys", event.summary.id, "u2", "a3", "t3", "u3", "a4", "t4",
    ]  # fmt: skip


def test_the_current_loops_thinking_is_protected_from_every_strategy() -> None:
    messages = messages_of(session(more=True))
    assert thinking_protected(messages) == {"u3", "a4"}
    tight = CompressionConfig(strategy="sliding_window", window_messages=1)
    for drop in (
        plan_sliding_window(messages, tight, needed=10_000),
        plan_importance(messages, tight, needed=10_000),
    ):
        assert drop is not None
        assert {"u3", "a4", "t4", "a5", "t5", "sys"}.isdisjoint(ids(drop.removed))
    # the summary path: keeping nothing would cut after a4; the guard cuts before the loop
    cut = plan_compaction(messages, keep_turns=0, keep_tokens=0)
    assert cut is not None and "a4" in ids(cut.replaced)
    guarded = guard_compaction(cut, messages)
    assert guarded is not None
    assert guarded.first_kept_message_id == "u3"
    assert ids(guarded.replaced) == ["u1", "a1", "t1", "a2", "t2", "u2", "a3", "t3"]


def test_incremental_plans_nothing_here() -> None:
    events = plan_strategy(
        messages_of(session()), CompressionConfig(), reason="manual", tokens_before=600,
        needed=100, count=five_tokens,
    )  # fmt: skip
    assert events == ()


def test_adaptive_drops_by_importance_only_under_high_pressure() -> None:
    messages = messages_of(session())
    config = CompressionConfig(strategy="adaptive")
    light = plan_strategy(
        messages, config, reason="after_tool", tokens_before=600, needed=150,
        count=five_tokens, pressure=0.85,
    )  # fmt: skip
    assert light == ()  # the incremental prune and summary run instead
    (heavy,) = plan_strategy(
        messages, config, reason="after_tool", tokens_before=600, needed=150,
        count=five_tokens, pressure=0.95,
    )  # fmt: skip
    assert isinstance(heavy, ContextCompacted)
    assert heavy.replaced_message_ids == ("u1", "a1", "t1", "a2", "t2")
    assert heavy.strategy == "adaptive"
    assert heavy.why == (
        "pressure 95% >= 90%: dropped 3 lowest-scored block(s) (5 message(s), scores up to 5.7) "
        "to free 150 tokens"
    )


def test_selective_prunes_tool_results_first_and_stops_when_that_is_enough() -> None:
    config = CompressionConfig(strategy="selective", selective_keep=1)
    (prune,) = plan_strategy(
        messages_of(session()), config, reason="after_tool", tokens_before=600, needed=100,
        count=five_tokens, now=NOW,
    )  # fmt: skip
    # t4 answers the newest step and t3 is the newest other result: t1 and t2 go
    assert prune == OutputsPruned(
        part_ids=("t1.r", "t2.r"),
        placeholder="[Output pruned at 2026-11-23T09:00:00Z; restore with part id {part_id}]",
        placeholder_tokens=5,
        tokens_freed=140,
        reason="selective: tool results beyond the newest 1 pruned (10)",
    )


def test_selective_then_drops_assistant_steps_then_user_messages_by_priority() -> None:
    config = CompressionConfig(strategy="selective", selective_keep=1)
    prune, drop = plan_strategy(
        messages_of(session()), config, reason="after_tool", tokens_before=600, needed=200,
        count=five_tokens, now=NOW,
    )  # fmt: skip
    assert isinstance(prune, OutputsPruned) and prune.tokens_freed == 140
    assert isinstance(drop, ContextCompacted)
    # after the prune a1 + t1 and a2 + t2 hold 10 tokens each; u3 starts the thinking loop
    assert drop.replaced_message_ids == ("u1", "a1", "t1", "a2", "t2")
    assert (drop.tokens_before, drop.tokens_after) == (460, 460 - 30 + 5)
    assert drop.strategy == "selective"
    assert drop.why == (
        "selective: tool results beyond the newest 1 pruned (10); assistant steps beyond the "
        "newest 1 dropped (30); user messages beyond the newest 1 dropped (50); 5 message(s) left"
    )


def rules(*specs: tuple[str, str, int] | tuple[str, str, int, int]) -> list[dict[str, Any]]:
    """(kind, action, priority[, keep]) as the plain rules `configure(selective=...)` takes."""
    return [
        {"kind": spec[0], "action": spec[1], "priority": spec[2]}
        | ({"keep": spec[3]} if len(spec) > 3 else {})
        for spec in specs
    ]


def test_selective_runs_custom_rules_in_their_own_priority_order() -> None:
    config = CompressionConfig(
        strategy="selective",
        selective=rules(
            ("assistant", "drop", 7), ("user", "truncate", 5, 1), ("tool_results", "never", 1)
        ),
    )
    (event,) = plan_strategy(
        messages_of(session()), config, reason="after_tool", tokens_before=530, needed=20,
        count=five_tokens, now=NOW,
    )  # fmt: skip
    # users first (5): u2 is the newest that may leave, so only u1 (10) goes; then assistant
    # steps (7), oldest first, until 20 tokens are freed: a1 + t1 (105). Nothing is pruned.
    text = MARKER.format(count=3, strategy="selective")
    assert isinstance(event, ContextCompacted)
    part = TextPart(id=event.summary.parts[0].id, text=text, tokens=5)
    assert event == ContextCompacted(
        summary=Message(id=event.summary.id, role="user", parts=(part,)),
        first_kept_message_id="a2",
        replaced_message_ids=("u1", "a1", "t1"),
        tokens_before=530,
        tokens_after=530 - 115 + 5,
        reason="after_tool",
        summarizer="marker",
        strategy="selective",
        why=(
            "selective: user messages beyond the newest 1 dropped (5); assistant steps "
            "dropped (7); 3 message(s) left"
        ),
    )


def test_selective_never_prunes_tool_results_when_their_rule_says_never() -> None:
    never = [
        rule.model_copy(update={"action": "never"}) if rule.kind == "tool_results" else rule
        for rule in DEFAULT_SELECTIVE
    ]
    config = CompressionConfig(strategy="selective", selective_keep=1, selective=never)
    (event,) = plan_strategy(
        messages_of(session()), config, reason="after_tool", tokens_before=530, needed=200,
        count=five_tokens, now=NOW,
    )  # fmt: skip
    # no prune: a1 + t1 (105) and a2 + t2 (55) go whole (a3 + t3 is the newest step kept),
    # then u1 (10): 170 tokens, short of 200, so the summary fallback will run after this
    assert isinstance(event, ContextCompacted)
    assert event.replaced_message_ids == ("u1", "a1", "t1", "a2", "t2")
    assert (event.tokens_before, event.tokens_after) == (530, 530 - 170 + 5)
    assert event.why == (
        "selective: assistant steps beyond the newest 1 dropped (30); user messages beyond the "
        "newest 1 dropped (50); 5 message(s) left"
    )


def test_selective_with_no_rule_that_acts_plans_nothing() -> None:
    config = CompressionConfig(
        strategy="selective", selective=rules(("tool_results", "never", 10), ("user", "never", 50))
    )
    assert plan_selective(
        messages_of(session()), config, needed=200, now=NOW, count=five_tokens
    ) == (None, None)


def skills_session() -> Log:
    """sys (10) | listing: an injected skills list (30) | u2 (10) | a1 skill call (5) + t1 (5)
    | body: the skill's prompt, a meta message (60) | a2 read (5) + t2 (100) | u4 (10) | a3
    read (5) + t3 (100)."""
    log = Log()
    log.text("system", "be brief", 10, "sys")
    listing = (
        "<system-reminder>\nThe following skills are available for use with the Skill tool:\n"
        "\n- pdf: Read and write PDF files\n</system-reminder>"
    )
    log.text("user", listing, 30, "listing")
    log.text("user", "summarize report.pdf", 10, "u2")
    log.call("c1", 5, "a1", name="skill")
    log.result("c1", "Launching skill: pdf", 5, "t1", name="skill")
    body = TextPart(id="body.t", text="Base directory for this skill: /s/pdf\n\n# PDF", tokens=60)
    meta = Native(api="claude-code", value={"type": "user", "isMeta": True})
    log.message(Message(id="body", role="user", parts=(body,), native=meta))
    log.call("c2", 5, "a2")
    log.result("c2", "x", 100, "t2")
    log.text("user", "now the totals", 10, "u4")
    log.call("c3", 5, "a3")
    log.result("c3", "x", 100, "t3")
    return log


def test_selective_kinds_tell_skill_prompts_and_skill_metadata_from_user_messages() -> None:
    kinds = [selective_kind(block) for block in blocks(messages_of(skills_session()))]
    assert kinds == [
        "system", "skill_metadata", "user", "skill_prompts", "skill_prompts", "assistant",
        "user", "assistant",
    ]  # fmt: skip
    # only what the agent injected is metadata or a skill's prompt: the user's own words are not
    log = Log()
    log.text("user", "Which available skills do you have?", 10, "asked")
    log.text("user", "<skill>\n<name>pdf</name>\n# PDF\n</skill>", 10, "codex")
    log.text("user", "<skills_instructions>\n- pdf\n</skills_instructions>", 10, "listed")
    assert [selective_kind(b) for b in blocks(messages_of(log))] == [
        "user", "skill_prompts", "skill_metadata",
    ]  # fmt: skip


def test_selective_drops_skill_metadata_at_40_after_the_skill_prompts() -> None:
    config = CompressionConfig(strategy="selective")
    (event,) = plan_strategy(
        messages_of(skills_session()), config, reason="before_llm_call", tokens_before=340,
        needed=90, count=five_tokens, now=NOW,
    )  # fmt: skip
    # 10: three results, fewer than 5, nothing pruned; 20: a1 + t1 (10) and body (60);
    # 30: a2 + t2 is within the newest 5 steps; 40: the listing (30) makes 100 >= 90
    text = MARKER.format(count=4, strategy="selective")
    assert isinstance(event, ContextCompacted)
    part = TextPart(id=event.summary.parts[0].id, text=text, tokens=5)
    assert event == ContextCompacted(
        summary=Message(id=event.summary.id, role="user", parts=(part,)),
        first_kept_message_id="u2",
        replaced_message_ids=("listing", "a1", "t1", "body"),
        tokens_before=340,
        tokens_after=340 - 100 + 5,
        reason="before_llm_call",
        summarizer="marker",
        strategy="selective",
        why="selective: skill prompts dropped (20); skill metadata dropped (40); 4 message(s) left",
    )


def test_the_system_prompt_and_pins_stay_whatever_the_rules_say() -> None:
    log = session()
    log.add(MessagePinned(message_id="u1"))
    config = CompressionConfig(
        strategy="selective",
        selective=rules(("system", "drop", 1), ("user", "drop", 2), ("assistant", "drop", 3)),
    )
    _, drop = plan_selective(messages_of(log), config, needed=10_000, now=NOW, count=five_tokens)
    assert drop is not None
    # sys and the pinned u1 stay; u3 starts the thinking loop and a4 + t4 is the newest block
    assert ids(drop.removed) == ["a1", "t1", "a2", "t2", "u2", "a3", "t3"]
    assert drop.why == (
        "selective: user messages dropped (2); assistant steps dropped (3); 7 message(s) left"
    )


def test_the_default_rules_are_the_issues_list() -> None:
    assert [
        (r.kind, r.action, r.keep, r.priority) for r in CompressionConfig().selective_rules()
    ] == [
        ("tool_results", "truncate", 5, 10),
        ("skill_prompts", "drop", 5, 20),
        ("assistant", "truncate", 5, 30),
        ("skill_metadata", "drop", 5, 40),
        ("user", "truncate", 5, 50),
        ("summaries", "never", 5, 80),
        ("system", "never", 5, 100),
    ]


def test_a_rule_keep_overrides_selective_keep_and_ties_keep_their_order() -> None:
    config = CompressionConfig(
        selective_keep=2, selective=rules(("user", "truncate", 5), ("assistant", "drop", 5, 1))
    )
    assert [(r.kind, r.keep) for r in config.selective_rules()] == [("user", 2), ("assistant", 1)]


@pytest.mark.parametrize(
    "selective",
    [
        rules(("user", "drop", 10), ("user", "never", 20)),
        rules(("users", "drop", 10)),
        rules(("user", "shrink", 10)),
        rules(("user", "truncate", 10, -1)),
        [{"kind": "user", "action": "drop"}],
    ],
    ids=["duplicate-kind", "unknown-kind", "unknown-action", "negative-keep", "no-priority"],
)
def test_selective_rules_the_config_refuses(selective: list[dict[str, Any]]) -> None:
    with pytest.raises(InvalidArgument):
        CompressionConfig(strategy="selective", selective=selective)


def test_a_config_stored_before_the_rules_existed_still_parses_with_the_defaults() -> None:
    stored = CompressionConfig(strategy="selective", selective_keep=1).model_dump(mode="json")
    del stored["selective"]  # what an older version wrote
    config = CompressionConfig.model_validate(stored)
    assert config.selective == DEFAULT_SELECTIVE
    assert config.selective_rules()[0] == SelectiveRule(
        kind="tool_results", action="truncate", keep=1, priority=10
    )
