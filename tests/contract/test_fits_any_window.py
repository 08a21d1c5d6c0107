"""Whatever the window, the strategy and the tool outputs, the context sent is never over it.

Every strategy (`CompressionConfig.strategy`), windows from 8k to 1M tokens, outputs from 0 to
1 MB, up to 8 parallel calls a step, as an agent loop runs them (`before_llm_call`, the model's
calls, their results, `after_tool_result`): after each check no context is over the usable
window, unless the system prompt, pins and the newest request alone are (`beyond_window`),
and every output is restorable byte for byte: live ones by `context(restore_pruned=True)`,
ones a compaction took out by replay before it.

Outputs are made cheaply (a pattern, sliced), and the store never tokenises what it cuts, so a
1 MB output costs its view's count (a few ms), not the 0.2 s of counting it whole.
"""

from __future__ import annotations

import itertools
from typing import get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import Session, SessionStore, ToolCall
from sessionstore.context import ContextCheck
from sessionstore.events import MessageAppended, Strategy, ToolResultPart
from sessionstore.projections import LiveToolResult

STRATEGIES = get_args(Strategy)

LINES = "".join(
    f"{n:06d} PASSED tests/test_parser.py::test_case_{n} in 0.01s\n" for n in range(20_000)
)
"""About 1.2 MB of a test log's lines: an output is a slice of it."""
WORD = "".join(chr(ord("a") + (n * 7919) % 26) for n in range(1_000_000))
"""1 MB of one long word (minified code, base64): the costliest text to count."""

sizes = st.one_of(st.integers(0, 60_000), st.integers(0, 1_000_000))
outputs = st.tuples(sizes, st.booleans(), st.integers(0, 100_000))
"""(bytes, whether it is one long word, where in the pattern it starts)."""
requests = st.one_of(st.just(0), st.integers(0, 300_000))
"""Bytes of a test log pasted into the pinned request (shown up to its share of the window)."""
steps = st.lists(st.lists(outputs, min_size=1, max_size=8), min_size=1, max_size=5)
windows = st.one_of(
    st.sampled_from([8_192, 32_768, 128_000, 1_000_000]), st.integers(8_192, 1_000_000)
)


def output_of(size: int, word: bool, start: int) -> str:
    pattern = WORD if word else LINES
    start %= len(pattern) - size if size < len(pattern) else 1
    return pattern[start : start + size]


def fits(check: ContextCheck, s: Session) -> None:
    """The check's context is within the usable window, or the check says nothing can fit."""
    usable = check.after.usable
    assert usable is not None
    if check.beyond_window:
        return
    assert not check.over_window, check.note
    assert check.after.tokens <= usable, check.note
    assert s.context().tokens <= usable


def all_restorable(store: SessionStore, s: Session, originals: dict[str, str]) -> None:
    """Every output comes back byte for byte: live ones by `restore_pruned`, the others from
    the log (replay before the compaction that took them shows them as they were)."""
    live = {
        p.call_id: p.output
        for m in s.context(restore_pruned=True).messages
        for p in m.parts
        if isinstance(p, LiveToolResult)
    }
    logged = {
        p.call_id: p.output
        for e in store.read(s.id)
        if isinstance(e.payload, MessageAppended)
        for p in e.payload.message.parts
        if isinstance(p, ToolResultPart)
    }
    for call_id, original in originals.items():
        assert live.get(call_id, logged[call_id]) == original, call_id


def run_loop(
    store: SessionStore,
    strategy: str,
    window: int,
    request: int,
    plan: list[list[tuple[int, bool, int]]],
) -> None:
    s = store.create_session(model="m", context_window=window)
    s.configure(strategy=strategy)
    s.append_system("You are a careful coding agent.")
    task = s.append_user("The parser's tests fail: find out why and fix them.\n" + LINES[:request])
    s.pin(task.id)
    originals: dict[str, str] = {}
    ids = itertools.count()
    for step in plan:
        fits(s.before_llm_call(), s)
        calls = [ToolCall(id=f"c{next(ids)}", name="bash", input={"cmd": "pytest"}) for _ in step]
        s.append_assistant("Running the tests.", tool_calls=calls)
        for call, (size, word, start) in zip(calls, step, strict=True):
            originals[call.id] = output_of(size, word, start)
            s.append_tool_result(call.id, output=originals[call.id])
        fits(s.after_tool_result(), s)
    fits(s.before_llm_call(), s)
    all_restorable(store, s, originals)


SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(SETTINGS, max_examples=3)
@given(window=windows, request=requests, plan=steps)
def test_no_call_is_over_the_window_and_every_output_is_restorable(
    store: SessionStore,
    strategy: str,
    window: int,
    request: int,
    plan: list[list[tuple[int, bool, int]]],
) -> None:
    run_loop(store, strategy, window, request, plan)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(SETTINGS, max_examples=12)
@given(window=windows, request=requests, plan=steps)
def test_no_call_is_over_the_window_many_examples(
    store: SessionStore,
    strategy: str,
    window: int,
    request: int,
    plan: list[list[tuple[int, bool, int]]],
) -> None:
    run_loop(store, strategy, window, request, plan)


def test_a_system_prompt_over_the_window_is_beyond_it_and_the_check_says_so(
    store: SessionStore,
) -> None:
    s = store.create_session(model="m", context_window=8_192)
    s.append_system("Follow these rules.\n" + LINES[:40_000])  # about 13,000 tokens, never cut
    s.append_user("Run the tests.")
    s.append_assistant("Running them.", tool_calls=[ToolCall(id="c1", name="bash", input={})])
    s.append_tool_result("c1", output=LINES[:20_000])

    check = s.after_tool_result()

    assert check.beyond_window and check.over_window
    assert check.previewed is not None  # what could be cut was, all the same
    assert check.note.endswith(
        "beyond the window: the system prompt, pinned messages and the newest request alone "
        "are over it"
    )
    assert s.before_llm_call().beyond_window  # and says so again before the call
