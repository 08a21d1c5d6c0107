"""Each context strategy on a real session: chosen by one `configure` call, it keeps every model
call inside the window with a context every API accepts, the timeline names it, and what it
took out is still in the log (a replay before its event shows it)."""

from __future__ import annotations

from typing import Any

import pytest

from sessionstore import InvalidArgument, SessionStore, ToolCall
from sessionstore.events import (
    ContextCompacted,
    Message,
    MessageAppended,
    MessagesReverted,
    PartsPreviewed,
    ReasoningPart,
    ToolCallPart,
)
from sessionstore.projections import LiveToolResult
from tests.contract.test_session_stateful import check_every_render

STRATEGIES = [
    {"strategy": "sliding_window", "window_messages": 12},
    {"strategy": "sliding_window", "window_messages": 12, "window_marker": False},
    {"strategy": "importance"},
    {"strategy": "incremental"},
    {"strategy": "adaptive", "adaptive_drop_ratio": 0.75},
    {"strategy": "selective"},
    {"strategy": "tool_blocks", "tool_blocks_keep": 8, "preview_whole": 2},
    {"strategy": "key_events"},
]


@pytest.mark.parametrize(
    "settings",
    STRATEGIES,
    ids=[
        "sliding_window",
        "no-marker",
        "importance",
        "incremental",
        "adaptive",
        "selective",
        "tool_blocks",
        "key_events",
    ],
)
def test_a_strategy_keeps_a_long_session_in_the_window(settings: dict[str, Any]) -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="claude", context_window=8_192)
    s.append_system("You are a coding agent.")
    s.configure(**settings)
    s.configure(output_ratio=1.0)  # outputs whole up to the window: the strategies cut them
    name = settings["strategy"]
    checks = []
    for n in range(30):
        s.append_user(f"Step {n}: fix test_{n} in the parser.")
        checks.append(s.before_llm_call())
        s.append_assistant(
            tool_calls=[ToolCall(id=f"c{n}", name="edit" if n % 3 else "read", input={"n": n})]
        )
        output = "".join(f"{n:03d}.{k:04d} line of output\n" for k in range(60 + 10 * (n % 4)))
        s.append_tool_result(f"c{n}", output, is_error=n % 5 == 0)
        checks.append(s.after_tool_result())
        checks.append(s.before_llm_call())
        s.append_assistant(f"Fixed test_{n}.")
        check_every_render(s.context())
    acted = [c for c in checks if c.acted]
    assert acted, "the session never overflowed: the test proves nothing"
    for c in checks:
        assert not c.over_window
        assert c.after.limit is not None and c.after.tokens <= c.after.limit
    events = store.read(s.id)
    appended = {e.payload.message.id for e in events if isinstance(e.payload, MessageAppended)}
    removals = [e for e in events if isinstance(e.payload, ContextCompacted | MessagesReverted)]
    assert removals
    live = {m.id for m in s.context().messages}
    taken: set[str] = set()
    for event in removals:
        payload = event.payload
        assert isinstance(payload, ContextCompacted | MessagesReverted)
        # the strategy's own decision, or the summary it falls back on, which says so
        assert payload.strategy == name or (
            payload.strategy == "incremental" and f"fallback of {name}" in payload.why
        )
        gone = (
            payload.replaced_message_ids
            if isinstance(payload, ContextCompacted)
            else payload.reverted_message_ids
        )
        before = {m.id for m in s.context(at=event.seq - 1).messages}
        assert set(gone) <= before  # replay before the event shows every message it took
        taken.update(gone)
    # every message appended is live or was taken out by a recorded decision
    assert appended <= live | taken
    rows = [row for row in s.timeline() if name in row.summary]
    assert rows, "the timeline does not say which strategy acted"
    # a fresh handle (snapshot + tail) sees the same context
    assert store.session(s.id).context() == s.context()
    # previews (tool_blocks, adaptive) come back whole with one restore
    previews = [e for e in events if isinstance(e.payload, PartsPreviewed)]
    if name == "tool_blocks":
        assert previews, "tool_blocks never cut a preview: the test proves nothing for them"

    def previewed() -> list[str]:
        return [
            p.id
            for m in s.context().messages
            for p in m.parts
            if isinstance(p, LiveToolResult) and p.status == "previewed"
        ]

    if previewed():
        assert s.restore() is not None
        assert previewed() == []
        check_every_render(s.context())
    # restore: undoing every decision, newest first, brings back every message in its place
    for event in reversed(removals):
        assert s.restore_messages(event.seq) is not None
        check_every_render(s.context())
        assert s.restore_messages(event.seq) is None  # everything it took is live again
    order = [e.payload.message.id for e in events if isinstance(e.payload, MessageAppended)]
    assert [m.id for m in s.context().messages] == order
    assert any(row.summary.startswith("restored ") for row in s.timeline())
    assert store.session(s.id).context() == s.context()
    store.close()


def test_the_current_loops_thinking_survives_the_tightest_window() -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="claude", context_window=4_096, output_reserve=0)
    s.configure(strategy="sliding_window", window_messages=1)
    s.append_user("Do the whole refactor.")
    checks = []
    for n in range(12):
        thinking = ReasoningPart(text=f"thinking about step {n} " * 20)
        call = ToolCallPart.from_input(call_id=f"c{n}", name="bash", input={"n": n})
        s.append_message(Message(role="assistant", parts=(thinking, call)))
        s.append_tool_result(f"c{n}", "".join(f"{n}.{k} ok\n" for k in range(40)))
        checks.append(s.before_llm_call())
    assert any(c.acted for c in checks), "never overflowed: the test proves nothing"
    loop = [
        e.payload.message.id
        for e in store.read(s.id)
        if isinstance(e.payload, MessageAppended) and e.payload.message.role == "assistant"
    ]
    live = {m.id for m in s.context().messages}
    assert set(loop) <= live  # one tool loop: all its thinking stays
    assert all(
        any(isinstance(p, ReasoningPart) for p in m.parts)
        for m in s.context().messages
        if m.role == "assistant"
    )
    store.close()


def test_restore_messages_refuses_an_event_that_took_nothing_out() -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="m")
    s.append_user("hello")
    with pytest.raises(InvalidArgument, match="MessageAppended: it took no messages out"):
        s.restore_messages(s.version)
    with pytest.raises(InvalidArgument, match="no event 99"):
        s.restore_messages(99)
    store.close()


def test_selective_rules_chosen_by_configure_run_in_their_order_and_the_event_says_so() -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="claude", context_window=2_048, output_reserve=0)
    s.append_system("You are a coding agent.")
    s.configure(
        strategy="selective",
        selective=[
            {"kind": "tool_results", "action": "never", "priority": 10},
            {"kind": "user", "action": "truncate", "keep": 1, "priority": 20},
            {"kind": "assistant", "action": "drop", "priority": 30},
        ],
    )
    users: list[str] = []
    answers: list[str] = []
    for n in range(8):
        users.append(s.append_user(f"Step {n}: go on.").id)
        answers.append(
            s.append_assistant(f"Done {n}: " + " ".join(f"item{k}" for k in range(100))).id
        )
    check = s.before_llm_call()
    assert check.acted and not check.over_window
    assert check.pruned is None  # tool results: never
    (event,) = check.compactions
    assert isinstance(event.payload, ContextCompacted)
    # the 7 older user messages (20) were not enough: then the oldest answers (30), whole
    assert set(event.payload.replaced_message_ids) == {*users[:7], *answers[:3]}
    assert event.payload.strategy == "selective"
    assert event.payload.why == (
        "selective: user messages beyond the newest 1 dropped (20); assistant steps dropped (30); "
        "10 message(s) left"
    )
    assert s.config.selective_rules()[1].keep == 1
    with pytest.raises(InvalidArgument):  # one rule per kind; nothing is written
        s.configure(selective=[{"kind": "user", "action": "drop", "priority": n} for n in (1, 2)])
    assert store.session(s.id).config == s.config
    store.close()


def test_undo_takes_back_previews_prunes_and_drops_alike() -> None:
    store = SessionStore("sqlite://")
    s = store.create_session(model="claude", context_window=8_192)
    s.configure(strategy="tool_blocks", tool_blocks_keep=4, preview_whole=1)
    s.configure(output_ratio=1.0)  # outputs whole up to the window: the strategy cuts them
    for n in range(6):
        s.append_user(f"Step {n}: fix test_{n}.")
        s.before_llm_call()
        content = "x = 1\n" * 300
        s.append_assistant(
            tool_calls=[
                ToolCall(id=f"c{n}", name="write", input={"path": "t.py", "content": content})
            ]
        )
        s.append_tool_result(f"c{n}", "".join(f"{n}.{k} ok\n" for k in range(300)))
        s.after_tool_result()
    s.append_user("Now the docs.")
    check = s.before_llm_call()  # the last tool block is old now: cut to previews
    events = store.read(s.id)
    newest = next(e for e in check.compactions if isinstance(e.payload, PartsPreviewed))
    assert isinstance(newest.payload, PartsPreviewed)
    cut = set(newest.payload.previews)
    undo = s.undo(newest.seq)
    assert undo is not None and undo.type == "OutputsRestored"
    assert set(undo.payload.part_ids) == cut  # type: ignore[attr-defined]
    shown = {p.id: p for m in s.context().messages for p in m.parts}
    results = [shown[p] for p in cut if isinstance(shown[p], LiveToolResult)]
    assert results and all(r.status == "restored" for r in results)  # type: ignore[union-attr]
    assert s.undo(newest.seq) is None  # nothing left to undo
    drop = next(e for e in reversed(events) if isinstance(e.payload, ContextCompacted))
    assert s.undo(drop.seq) is not None  # the same as restore_messages
    assert s.undo(drop.seq) is None
    with pytest.raises(InvalidArgument, match="no event 999"):
        s.undo(999)
    store.close()


@pytest.mark.parametrize(
    "strategy",
    ["sliding_window", "importance", "selective", "tool_blocks", "key_events", "adaptive"],
)
def test_a_long_run_stays_in_the_window_and_folds_its_markers(strategy: str) -> None:
    """150 reads of 900 words each in an 8k window: every check gets back under the limit,
    and each strategy's markers or summaries fold into the next one instead of piling up
    (where no strategy would ever take them out again)."""
    store = SessionStore("sqlite://")
    s = store.create_session(model="claude", context_window=8_192)
    s.configure(strategy=strategy)
    s.append_user("Read every module and tell me what it does.")
    words = " ".join(f"word{k}" for k in range(900))
    for n in range(150):
        check = s.before_llm_call()
        assert not check.over_window, (n, check.note)
        s.append_assistant(tool_calls=[ToolCall(id=f"c{n}", name="read_file", input={"n": n})])
        s.append_tool_result(f"c{n}", f"module {n}: {words}")
        check = s.after_tool_result()
        assert not check.over_window, (n, check.note)
        assert check.after.limit is not None and check.after.tokens <= check.after.limit, n
    summaries = [m for m in s.context().messages if m.summary]
    assert len(summaries) <= 2, [m.parts[0] for m in summaries]
    assert store.session(s.id).context() == s.context()
    store.close()
