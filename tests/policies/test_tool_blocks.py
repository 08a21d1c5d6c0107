"""Tool blocks (`tool_blocks`), their previews (`PartsPreviewed`) and key-event extraction
(`key_events`) on fixed sessions: the exact events the plans return, and what the fold shows
for them (a preview every API accepts, restorable, gone with a redaction, kept by snapshots)."""

from __future__ import annotations

import json

import pytest

from sessionstore.context._strategies import (
    key_of,
    plan_key_events,
    plan_strategy,
    plan_tool_blocks,
    previews_in,
)
from sessionstore.events import (
    CompressionConfig,
    ContentRedacted,
    ContextCompacted,
    InvalidArgument,
    Message,
    OutputsPruned,
    OutputsRestored,
    PartsPreviewed,
    Preview,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.projections import (
    ContextFold,
    LiveMessage,
    LiveToolResult,
    context_of,
    fold_events,
)
from sessionstore.projections._preview import NOTICE, preview
from sessionstore.projections._snapshot import parse_snapshot
from tests.contract.test_session_stateful import check_every_render
from tests.projections.log import Log

ARGUMENTS = json.dumps({"path": "a.py", "content": "x = 1\n" * 200})
"""A write's arguments: 1,431 characters."""
OUTPUT = "".join(f"line {n}\n" for n in range(300))
"""A result of 2,590 characters, 648 tokens by `quarter`."""


def quarter(text: str) -> int:
    """A stand-in token count: a token per four characters, rounded up."""
    return -(-len(text) // 4)


def tool_session(turns: int = 4) -> Log:
    """sys | u0 · a0 write(ARGUMENTS) + r0 (OUTPUT) | u1 · a1 ... : `turns` user requests,
    each answered by one write whose result is 300 lines; counts are `quarter`'s."""
    log = Log()
    log.text("system", "be brief", 3, "sys")
    for n in range(turns):
        log.text("user", f"task {n}", 2, f"u{n}")
        call = ToolCallPart(
            id=f"a{n}.c", call_id=f"c{n}", name="write", arguments=ARGUMENTS, tokens=310
        )
        log.message(Message(id=f"a{n}", role="assistant", parts=(call,)))
        result = ToolResultPart(
            id=f"r{n}.r", call_id=f"c{n}", name="write", output=OUTPUT, tokens=quarter(OUTPUT)
        )
        log.message(Message(id=f"r{n}", role="tool", parts=(result,)))
    return log


def messages_of(log: Log) -> tuple[LiveMessage, ...]:
    return context_of(fold_events(log.events)).messages


SMALL = CompressionConfig(
    strategy="tool_blocks",
    tool_blocks_keep=3,
    preview_whole=1,
    preview_arguments_over=300,
    preview_arguments_to=50,
    preview_results_over=500,
    preview_results_to=40,
)


def test_previews_cut_the_long_fields_of_older_kept_blocks() -> None:
    messages = messages_of(tool_session())
    previewed, drop = plan_tool_blocks(messages, SMALL, needed=None, count=quarter)
    assert previewed is not None and drop is not None
    # four tool blocks: the oldest leaves whole, the newest stays whole, two are cut
    assert [m.id for m in drop.removed] == ["a0", "r0"]
    assert drop.why == "1 tool block(s) beyond the newest 3 dropped whole"
    assert list(previewed.previews) == ["a1.c", "r1.r", "a2.c", "r2.r"]
    # the head's length is the target's share of the text: 1,431 * 50 // 310, and for the
    # output 2,590 * 40 // 648 = 159 back to the end of its line, 158; the notice on top
    assert previewed.previews["a1.c"] == Preview(chars=230, tokens=95)
    assert previewed.previews["r1.r"] == Preview(chars=158, tokens=61)
    assert quarter(preview(ARGUMENTS, 230, NOTICE, "a1.c", arguments=True)) == 95
    assert previewed.tokens_freed == 2 * (310 - 95) + 2 * (648 - 61) == 1_604
    assert previewed.strategy == "tool_blocks"
    assert previewed.why == (
        "arguments over 300 tokens cut to 50, results over 500 to 40, in 2 block(s); the newest "
        "1 block(s) left whole"
    )


def test_previews_alone_when_they_free_enough() -> None:
    messages = messages_of(tool_session(turns=3))
    previewed, drop = plan_tool_blocks(messages, SMALL, needed=100, count=quarter)
    assert drop is None  # three tool blocks, all kept
    assert previewed is not None and list(previewed.previews) == ["a0.c", "r0.r", "a1.c", "r1.r"]


def test_more_blocks_leave_when_previews_do_not_free_enough() -> None:
    messages = messages_of(tool_session())
    # block 0 (958 tokens) and the previews (1,604) free 2,562: block 1 leaves too, and
    # its previews with it (958 - 802 more)
    previewed, drop = plan_tool_blocks(messages, SMALL, needed=2_700, count=quarter)
    assert drop is not None and [m.id for m in drop.removed] == ["a0", "r0", "a1", "r1"]
    assert previewed is not None and list(previewed.previews) == ["a2.c", "r2.r"]
    assert previewed.tokens_freed == 802
    assert drop.why == (
        "1 tool block(s) beyond the newest 3 dropped whole; 1 more dropped whole to free 2,700 "
        "tokens (previews freed 802)"
    )


def test_the_event_order_counts_the_previews_before_the_drop() -> None:
    log = tool_session()
    messages = messages_of(log)
    before = fold_events(log.events).tokens
    events = plan_strategy(
        messages, SMALL, reason="before_llm_call", tokens_before=before, needed=None, count=quarter
    )
    assert [type(e).__name__ for e in events] == ["PartsPreviewed", "ContextCompacted"]
    previewed, compacted = events
    assert isinstance(previewed, PartsPreviewed) and isinstance(compacted, ContextCompacted)
    assert compacted.tokens_before == before - previewed.tokens_freed
    for event in events:
        log.add(event)
    fold = fold_events(log.events)
    assert fold.tokens == compacted.tokens_after  # the events' figures are the fold's


def test_the_fold_shows_previews_every_api_accepts_and_restores_the_originals() -> None:
    log = tool_session()
    previewed, _ = plan_tool_blocks(messages_of(log), SMALL, needed=None, count=quarter)
    assert previewed is not None
    log.add(previewed)
    context = context_of(fold_events(log.events))
    check_every_render(context)
    by_id = {p.id: p for m in context.messages for p in m.parts}
    result = by_id["r1.r"]
    assert isinstance(result, LiveToolResult) and result.status == "previewed"
    assert result.output == "".join(f"line {n}\n" for n in range(21)) + (
        "[2,432 characters cut to a preview; the original is kept: restore with part id r1.r]"
    )
    assert result.output.endswith("restore with part id r1.r]")
    call = by_id["a1.c"]
    assert isinstance(call, ToolCallPart) and call.native is None
    shown = json.loads(call.arguments)
    assert shown["_preview"] == ARGUMENTS[:230]
    assert shown["_note"] == (
        "[1,201 characters cut to a preview; the original is kept: restore with part id a1.c]"
    )
    assert context.tokens == sum(m.tokens for m in context.messages)
    # the full originals are one restore away, and a restore counts them again
    log.add(OutputsRestored(part_ids=("a1.c", "r1.r")))
    after = context_of(fold_events(log.events))
    by_id = {p.id: p for m in after.messages for p in m.parts}
    assert by_id["a1.c"] == ToolCallPart(
        id="a1.c", call_id="c1", name="write", arguments=ARGUMENTS, tokens=310
    )
    restored = by_id["r1.r"]
    assert isinstance(restored, LiveToolResult)
    assert (restored.output, restored.status) == (OUTPUT, "restored")
    assert after.tokens == context.tokens + (310 - 95) + (648 - 61)


def test_a_pruned_or_previewed_part_is_not_previewed_again() -> None:
    log = tool_session()
    log.add(OutputsPruned(part_ids=("r1.r",), placeholder="[pruned]", tokens_freed=1))
    log.add(
        PartsPreviewed(
            previews={"r2.r": Preview(chars=10, tokens=9)}, notice=NOTICE, tokens_freed=1
        )
    )
    messages = messages_of(log)
    block = [m for m in messages if m.id in ("a1", "r1", "a2", "r2")]
    found = previews_in(block, SMALL, quarter)
    assert [c.part_id for c in found] == ["a1.c", "a2.c"]
    # and the fold ignores an event naming them anyway
    change = fold_events(log.events).apply(
        log.add(
            PartsPreviewed(
                previews={"r1.r": Preview(chars=1, tokens=1)}, notice=NOTICE, tokens_freed=0
            )
        )
    )
    assert change.previewed == ()


def test_a_redaction_shows_the_placeholder_alone_and_keeps_the_previews_count() -> None:
    log = tool_session()
    log.add(
        PartsPreviewed(
            previews={"r1.r": Preview(chars=30, tokens=20), "a1.c": Preview(chars=9, tokens=15)},
            notice=NOTICE,
            tokens_freed=1,
        )
    )
    before = fold_events(log.events).tokens
    log.add(ContentRedacted(part_ids=("r1.r", "a1.c"), digests=("0" * 64,), reason="secret"))
    fold = fold_events(log.events)
    shown = {p.id: p for m in context_of(fold).messages for p in m.parts}
    result, call = shown["r1.r"], shown["a1.c"]
    assert isinstance(result, LiveToolResult) and isinstance(call, ToolCallPart)
    # no notice offers an original that is gone, and nothing of the original is left
    assert (result.output, result.status, result.tokens) == ("[redacted: secret]", "previewed", 20)
    assert json.loads(call.arguments) == {"_preview": "[redacted: secret]"}
    assert fold.tokens == before  # a redaction changes what is shown, not the count
    # a restore-all leaves what is redacted alone (the session refuses to name it)
    assert sorted(fold.previewed_part_ids()) == ["a1.c", "r1.r"]


def test_snapshots_keep_the_previews() -> None:
    log = tool_session()
    previewed, _ = plan_tool_blocks(messages_of(log), SMALL, needed=None, count=quarter)
    assert previewed is not None
    log.add(previewed)
    fold = fold_events(log.events)
    state = parse_snapshot(json.dumps(fold.to_snapshot()))
    messages = {
        (log.session_id, e.seq): e.payload.message  # type: ignore[attr-defined]
        for e in log.events
        if e.type == "MessageAppended"
    }
    again = ContextFold.from_snapshot(state, messages)
    assert again.live_messages() == fold.live_messages()
    assert again.previewed_part_ids() == fold.previewed_part_ids()


def test_the_preview_thresholds_must_cut_to_less_than_they_start_at() -> None:
    with pytest.raises(InvalidArgument, match="preview_results_to"):
        CompressionConfig(preview_results_over=100, preview_results_to=100)
    with pytest.raises(InvalidArgument, match="preview_arguments_to"):
        CompressionConfig(preview_arguments_over=100, preview_arguments_to=200)


# key events


def key_session() -> Log:
    """sys | u0 | a0 "Looking." | a1 read + r1 | a2 edit + r2 | a3 read + r3 error | a4
    "We should keep the old API." | a5 read + r5 | a6 "Done." """
    log = Log()
    log.text("system", "be brief", 3, "sys")
    log.text("user", "fix the parser", 4, "u0")
    log.text("assistant", "Looking.", 10, "a0")
    for n, name, error in ((1, "read", False), (2, "edit", False), (3, "read", True)):
        call = ToolCallPart.from_input(
            id=f"a{n}.c", call_id=f"c{n}", name=name, input={"path": "p.py"}, tokens=10
        )
        log.message(Message(id=f"a{n}", role="assistant", parts=(call,)))
        result = ToolResultPart(
            id=f"r{n}.r", call_id=f"c{n}", name=name, output="out", is_error=error, tokens=50
        )
        log.message(Message(id=f"r{n}", role="tool", parts=(result,)))
    log.text("assistant", "We should keep the old API.", 10, "a4")
    call = ToolCallPart.from_input(
        id="a5.c", call_id="c5", name="read", input={"path": "q.py"}, tokens=10
    )
    log.message(Message(id="a5", role="assistant", parts=(call,)))
    log.message(
        Message(
            id="r5",
            role="tool",
            parts=(ToolResultPart(id="r5.r", call_id="c5", name="read", output="out", tokens=50),),
        )
    )
    log.text("assistant", "Done.", 5, "a6")
    return log


def test_key_events_are_requests_errors_file_changes_and_decisions() -> None:
    from sessionstore.context._strategies import blocks

    kinds = {block[0].id: key_of(block) for block in blocks(messages_of(key_session()))}
    assert kinds == {
        "sys": None,
        "u0": "request",
        "a0": None,
        "a1": None,
        "a2": "file change",
        "a3": "error",
        "a4": "decision",
        "a5": None,
        "a6": None,
    }


def test_key_events_take_out_the_rest_oldest_first_until_enough_is_freed() -> None:
    messages = messages_of(key_session())
    drop = plan_key_events(messages, CompressionConfig(), needed=15)
    assert drop is not None and [m.id for m in drop.removed] == ["a0", "a1", "r1"]
    assert drop.why == (
        "summarized 2 block(s) without a key event (3 message(s)) to free 15 tokens; kept the "
        "key blocks (decision 1, error 1, file change 1, request 1)"
    )
    everything = plan_key_events(messages, CompressionConfig(), needed=10_000)
    assert everything is not None
    assert [m.id for m in everything.removed] == ["a0", "a1", "r1", "a5", "r5"]  # a6: newest
    assert plan_key_events(messages, CompressionConfig(), needed=None) is None


def test_key_events_put_the_summary_where_the_first_block_left() -> None:
    log = key_session()
    messages = messages_of(log)
    config = CompressionConfig(strategy="key_events")
    events = plan_strategy(
        messages,
        config,
        reason="before_llm_call",
        tokens_before=fold_events(log.events).tokens,
        needed=15,
        count=quarter,
        summarize=lambda removed: (f"summary of {len(removed)}", "test"),
    )
    (compacted,) = events
    assert isinstance(compacted, ContextCompacted)
    assert compacted.summary.parts == (
        TextPart(id=compacted.summary.parts[0].id, text="summary of 3", tokens=3),
    )
    assert (compacted.summarizer, compacted.strategy) == ("test", "key_events")
    assert compacted.first_kept_message_id == "a2"
    log.add(compacted)
    after = [m.id for m in messages_of(log)]
    assert after == [
        "sys",
        "u0",
        compacted.summary.id,
        "a2",
        "r2",
        "a3",
        "r3",
        "a4",
        "a5",
        "r5",
        "a6",
    ]


def test_a_call_previewed_or_restored_after_a_preview_is_never_cut_again() -> None:
    log = tool_session()
    log.add(
        PartsPreviewed(
            previews={"a1.c": Preview(chars=9, tokens=15)}, notice=NOTICE, tokens_freed=295
        )
    )
    cut = [m for m in messages_of(log) if m.id in ("a1", "r1")]
    assert cut[0].call_status == {
        "a1.c": "previewed"
    }  # a preview over 300 tokens: still not cut again
    assert [c.part_id for c in previews_in(cut, SMALL, quarter)] == ["r1.r"]
    log.add(OutputsRestored(part_ids=("a1.c",)))
    messages = messages_of(log)
    a1 = next(m for m in messages if m.id == "a1")
    assert a1.call_status == {"a1.c": "restored"}
    block = [m for m in messages if m.id in ("a1", "r1")]
    assert [c.part_id for c in previews_in(block, SMALL, quarter)] == ["r1.r"]
    assert "call_status" not in messages[1].model_dump()  # absent when shown as recorded
