"""The fit step (`plan_fit`): tool fields cut to head and tail previews, the newest step's
results first, until the context fits; and how the fold shows such a preview (its head, the
notice, its tail), restores it, and keeps it through a snapshot."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.context import floor_tokens, plan_fit
from sessionstore.events import MessagePinned, OutputsRestored, PartsPreviewed, Preview
from sessionstore.projections import (
    NOTICE,
    ContextFold,
    LiveToolResult,
    context_of,
    fold_events,
    preview,
)
from sessionstore.projections._snapshot import parse_snapshot
from tests.projections.log import Log


def words(text: str) -> int:
    return len(text.split())


def output(n: int, tokens: int) -> str:
    """`tokens` words, numbered so a head and a tail can be told apart."""
    return " ".join(f"r{n}w{k}" for k in range(tokens))


def steps(*sizes: tuple[int, ...]) -> Log:
    """u1 (10 words), then one step per tuple: a call (5), and a result of each size."""
    log = Log(output_reserve=0)
    log.text("user", "fix the parser", 10, "u1")
    n = 0
    for step, results in enumerate(sizes, start=1):
        log.call(f"s{step}", 5, f"a{step}")
        for tokens in results:
            n += 1
            log.result(f"s{step}", output(n, tokens), tokens, f"t{n}")
    return log


def live(log: Log) -> list[LiveToolResult]:
    return [
        p
        for m in context_of(fold_events(log.events)).messages
        for p in m.parts
        if isinstance(p, LiveToolResult)
    ]


def test_the_newest_steps_largest_result_is_cut_first_and_the_small_one_stays_whole() -> None:
    log = steps((300,), (900, 40))
    messages = context_of(fold_events(log.events)).messages

    plan = plan_fit(messages, over=500, count=words)

    assert plan is not None and list(plan.previews) == ["t2.r"]  # not t1 (older), not t3 (small)
    cut = plan.previews["t2.r"]
    assert plan.tokens_freed == 900 - cut.tokens >= 500
    assert cut.tail > 0 and cut.chars > cut.tail  # the head gets the larger share
    assert plan.strategy == "fit" and plan.notice == NOTICE


def test_older_results_are_cut_when_the_newest_step_alone_cannot_free_enough() -> None:
    log = steps((800,), (50,))
    messages = context_of(fold_events(log.events)).messages

    plan = plan_fit(messages, over=700, count=words)

    assert plan is not None and set(plan.previews) == {"t1.r", "t2.r"}
    assert plan.tokens_freed >= 700


def test_nothing_to_cut_or_nothing_needed_plans_nothing() -> None:
    messages = context_of(fold_events(steps((300,)).events)).messages
    assert plan_fit(messages, over=0, count=words) is None
    log = Log(output_reserve=0)
    log.text("user", "hello", 500, "u1")
    assert plan_fit(context_of(fold_events(log.events)).messages, over=10, count=words) is None


def test_the_floor_is_the_system_prompt_the_pins_and_the_newest_request() -> None:
    log = Log(output_reserve=0)
    log.text("system", "be careful", 7, "sys")
    log.text("user", "the task", 30, "u1")
    log.add(MessagePinned(message_id="u1"))
    log.text("assistant", "done", 3, "a1")
    log.text("user", "and now this", 11, "u2")
    log.text("assistant", "ok", 2, "a2")
    assert floor_tokens(context_of(fold_events(log.events)).messages) == 7 + 30 + 11


def test_a_preview_shows_head_notice_and_tail_restores_whole_and_survives_a_snapshot() -> None:
    log = steps((100,))
    text = output(1, 100)
    log.add(
        PartsPreviewed(
            previews={"t1.r": Preview(chars=20, tokens=30, tail=12)},
            notice=NOTICE,
            tokens_freed=70,
            strategy="fit",
        )
    )
    fold = fold_events(log.events)
    [shown] = [p for m in context_of(fold).messages for p in m.parts if p.id == "t1.r"]
    assert isinstance(shown, LiveToolResult) and shown.status == "previewed"
    notice = NOTICE.replace("{part_id}", "t1.r").replace("{omitted}", f"{len(text) - 32:,}")
    assert shown.output == text[:20] + "\n" + notice + "\n" + text[-12:]
    assert shown.output == preview(text, 20, NOTICE, "t1.r", arguments=False, tail=12)
    assert shown.tokens == 30 and fold.tokens == 10 + 5 + 30

    messages = {
        (e.session_id, e.seq): e.payload.message  # type: ignore[attr-defined]
        for e in log.events
        if e.type == "MessageAppended"
    }
    stored = json.dumps(fold.to_snapshot())
    assert json.loads(stored)["previewed"] == {"t1.r": [20, 30, NOTICE, 12]}
    rebuilt = ContextFold.from_snapshot(parse_snapshot(stored), messages)
    assert context_of(rebuilt) == context_of(fold)

    log.add(OutputsRestored(part_ids=("t1.r",)))
    [back] = live(log)
    assert back.output == text and back.status == "restored"


def test_a_preview_without_a_tail_is_stored_as_before() -> None:
    event = PartsPreviewed(
        previews={"t1.r": Preview(chars=20, tokens=30)}, notice=NOTICE, tokens_freed=70
    )
    assert event.model_dump(mode="json")["previews"] == {"t1.r": {"chars": 20, "tokens": 30}}


@settings(max_examples=60, deadline=None)
@given(
    older=st.lists(st.integers(0, 3_000), max_size=4),
    newest=st.lists(st.integers(0, 3_000), min_size=1, max_size=8),
    over=st.integers(1, 20_000),
)
def test_a_fit_frees_what_it_must_when_it_can_newest_first_each_preview_shorter(
    older: list[int], newest: list[int], over: int
) -> None:
    log = steps(*[(t,) for t in older], tuple(newest))
    messages = context_of(fold_events(log.events)).messages
    plan = plan_fit(messages, over=over, count=words)
    fields = live(log)
    if plan is None:
        assert all(f.tokens <= words(NOTICE) + 3 for f in fields)  # nothing a preview shortens
        return
    by_id = {f.id: f for f in fields}
    for part_id, cut in plan.previews.items():
        original = by_id[part_id]
        rendered = preview(
            original.output, cut.chars, NOTICE, part_id, arguments=False, tail=cut.tail
        )
        assert cut.tokens == words(rendered) < original.tokens
    assert plan.tokens_freed == sum(by_id[p].tokens - c.tokens for p, c in plan.previews.items())
    newest_ids = {f"t{len(older) + k + 1}.r" for k in range(len(newest))}
    if any(p not in newest_ids for p in plan.previews):  # older ones only when needed
        assert all(p in plan.previews for p in newest_ids if by_id[p].tokens > 200)
    notices_only = sum(max(f.tokens - words(NOTICE) - 1, 0) for f in fields)
    if notices_only >= over + 8 * len(fields):  # room to spare: it frees enough
        assert plan.tokens_freed >= over
    # applied, the context is as much smaller as the plan says
    before = fold_events(log.events).tokens
    log.add(plan)
    assert fold_events(log.events).tokens == before - plan.tokens_freed
