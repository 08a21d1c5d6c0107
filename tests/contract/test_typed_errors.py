"""Every mistake a caller can make through the public API is a typed error with one short line,
and the store is left exactly as it was: the cases an outside tester found by fuzzing and by
trying the API as a new user would."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from sessionstore import (
    CompactionError,
    ImportRefused,
    InvalidArgument,
    InvalidEvent,
    InvalidReplayPoint,
    InvalidSessionId,
    Session,
    SessionExists,
    SessionStore,
    SessionStoreError,
    ToolCall,
    Usage,
)
from tests.conftest import Backend


def nested(depth: int) -> dict[str, Any]:
    """`{"a": {"a": ...}}`, `depth` levels deep: its plain repr raises RecursionError."""
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def a_session(store: SessionStore) -> Session:
    """A session with one user turn and a tool call waiting for its result."""
    s = store.create_session(model="m", context_window=10_000, title="t", session_id="s1")
    s.append_user("read a.py")
    s.append_assistant("", tool_calls=[ToolCall(id="c1", name="read", input={"path": "a.py"})])
    return s


def none_summarizer(messages: object, target_tokens: int) -> Any:
    return None


SESSION_CALLS: dict[str, tuple[Callable[[Session], object], type[SessionStoreError], str]] = {
    "append_user with an int": (
        lambda s: s.append_user(5),  # type: ignore[arg-type]
        InvalidArgument,
        "text must be a str, got int 5",
    ),
    "append_user with bytes": (
        lambda s: s.append_user(b"abc"),  # type: ignore[arg-type]
        InvalidArgument,
        "text must be a str, got bytes b'abc'",
    ),
    "append_system with None": (
        lambda s: s.append_system(None),  # type: ignore[arg-type]
        InvalidArgument,
        "text must be a str, got None",
    ),
    "append_assistant with a float": (
        lambda s: s.append_assistant(1.5),  # type: ignore[arg-type]
        InvalidArgument,
        "text must be a str, got float 1.5",
    ),
    "append_assistant with one ToolCall, not a list": (
        lambda s: s.append_assistant(tool_calls=ToolCall(id="c2", name="x")),  # type: ignore[arg-type]
        InvalidArgument,
        r"tool_calls must be a list of tool calls \(ToolCall, the SDK's calls or their dicts\), "
        "got ToolCall",
    ),
    "append_assistant with usage as a dict": (
        lambda s: s.append_assistant("hi", usage={"input": 1}),  # type: ignore[arg-type]
        InvalidArgument,
        "usage must be a Usage or None, got dict {'input': 1}",
    ),
    "append_tool_result with output None": (
        lambda s: s.append_tool_result("c1", None),  # type: ignore[arg-type]
        InvalidArgument,
        r"output must be a str or a list of content blocks \(text and images\), got None",
    ),
    "append_tool_result with output a dict": (
        lambda s: s.append_tool_result("c1", {"a": 1}),  # type: ignore[arg-type]
        InvalidArgument,
        r"output must be a str or a list of content blocks \(text and images\), got dict {'a': 1}",
    ),
    "append_tool_result with output bytes": (
        lambda s: s.append_tool_result("c1", b"x"),  # type: ignore[arg-type]
        InvalidArgument,
        r"output must be a str or a list of content blocks \(text and images\), got bytes b'x'",
    ),
    "append_tool_result with a lone surrogate": (
        lambda s: s.append_tool_result("c1", "caf\udce9"),
        InvalidEvent,
        r"output: text is not valid UTF-8 \(lone surrogate at offset 3\)",
    ),
    "append_tool_result with is_error not a bool": (
        lambda s: s.append_tool_result("c1", "ok", is_error="yes"),  # type: ignore[arg-type]
        InvalidArgument,
        "is_error must be a bool, got str 'yes'",
    ),
    "append_message with a dict": (
        lambda s: s.append_message({"role": "user"}),  # type: ignore[arg-type]
        InvalidArgument,
        "message must be a Message, got dict {'role': 'user'}",
    ),
    "a tool call whose input is NaN": (
        lambda s: s.append_assistant(
            tool_calls=[ToolCall(id="c2", name="x", input={"a": float("nan")})]
        ),
        InvalidEvent,
        "tool call 'c2': its input has no JSON form "
        r"\(Out of range float values are not JSON compliant\)",
    ),
    "a tool call whose input is infinite": (
        lambda s: s.append_assistant(tool_calls=[ToolCall(id="c2", name="x", input=float("inf"))]),
        InvalidEvent,
        "tool call 'c2': its input has no JSON form",
    ),
    "configure with an unknown setting": (
        lambda s: s.configure(bogus=1),
        InvalidArgument,
        "configure: bogus: Extra inputs are not permitted",
    ),
    "configure with max_lines 0": (
        lambda s: s.configure(max_lines=0),
        InvalidArgument,
        "configure: max_lines: Input should be greater than 0",
    ),
    "restore with one str": (
        lambda s: s.restore("abc"),
        InvalidArgument,
        r"part_ids must be a list of part ids, not one str: restore\(\['abc'\]\)",
    ),
    "restore with ints": (
        lambda s: s.restore([1, 2]),  # type: ignore[list-item]
        InvalidArgument,
        "part_ids must hold str part ids, got int 1",
    ),
    "revert to a dict": (
        lambda s: s.revert({"a": 1}),  # type: ignore[arg-type]
        InvalidArgument,
        "to_message_id must be a str, got dict {'a': 1}",
    ),
    "pin a list": (
        lambda s: s.pin([]),  # type: ignore[arg-type]
        InvalidArgument,
        r"message_id must be a str, got list \[\]",
    ),
    "unpin None": (
        lambda s: s.unpin(None),  # type: ignore[arg-type]
        InvalidArgument,
        "message_id must be a str, got None",
    ),
    "compact with a negative keep_turns": (
        lambda s: s.compact(keep_turns=-1),
        InvalidArgument,
        "keep_turns must be an int from 0, or None, got int -1",
    ),
    "compact for an unknown reason": (
        lambda s: s.compact(reason="bored"),  # type: ignore[arg-type]
        InvalidArgument,
        "reason must be one of 'before_llm_call', 'after_tool', 'manual', got str 'bored'",
    ),
    "a summarizer that is not callable": (
        lambda s: s.before_llm_call(summarizer="extractive"),  # type: ignore[arg-type]
        InvalidArgument,
        "summarizer must be callable or None, got str 'extractive'",
    ),
    "a summarizer that returns None": (
        lambda s: s.compact(summarizer=none_summarizer, keep_turns=0, keep_tokens=0),
        CompactionError,
        "the summarizer none_summarizer returned None, not text",
    ),
    "prune with reason not a str": (
        lambda s: s.prune(reason=3),  # type: ignore[arg-type]
        InvalidArgument,
        "reason must be a str, got int 3",
    ),
    "context at an aware datetime.min east of UTC": (
        lambda s: s.context(at=datetime.min.replace(tzinfo=timezone(timedelta(hours=14)))),
        InvalidReplayPoint,
        "session 's1' had not started at 0001-01-01T00:00:00",
    ),
    "context at a deeply nested dict": (
        lambda s: s.context(at=nested(10_000)),  # type: ignore[arg-type]
        InvalidReplayPoint,
        r"at= must be a seq from 1 to 3 or a datetime, got \{'a': \{'a': \{\.\.\.\}\}\}",
    ),
    "context with restore_pruned not a bool": (
        lambda s: s.context(restore_pruned=None),  # type: ignore[arg-type]
        InvalidArgument,
        "restore_pruned must be a bool, got None",
    ),
    "redact with a lone surrogate in its reason": (
        lambda s: s.redact([s.context().messages[0].parts[0].id], reason="leak \ud800"),
        InvalidEvent,
        r"^reason: text is not valid UTF-8 \(lone surrogate at offset 5\)$",
    ),
}


@pytest.mark.parametrize("case", list(SESSION_CALLS))
def test_a_bad_session_call_is_a_typed_error_and_writes_nothing(
    store: SessionStore, backend: Backend, case: str
) -> None:
    s = a_session(store)
    before = backend.table_rows()
    call, error, message = SESSION_CALLS[case]

    with pytest.raises(error, match=message) as caught:
        call(s)

    assert type(caught.value) is error
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300
    assert backend.table_rows() == before
    s.append_tool_result("c1", "the handle still works")
    assert store.verify("s1").ok


STORE_CALLS: dict[str, tuple[Callable[[SessionStore], object], type[SessionStoreError], str]] = {
    "sessions with a limit past any backend's integers": (
        lambda st: st.sessions(limit=10**30),
        InvalidArgument,
        f"^limit must be an int from 0 to 9223372036854775807, or None, got int {10**30}$",
    ),
    "sessions with an offset past any backend's integers": (
        lambda st: st.sessions(offset=2**63),
        InvalidArgument,
        "^offset must be an int from 0 to 9223372036854775807, got int 9223372036854775808$",
    ),
    "summaries with a limit past any backend's integers": (
        lambda st: st.summaries(limit=2**63),
        InvalidArgument,
        f"^limit must be an int from 0 to {2**63 - 1}, or None, got int {2**63}$",
    ),
    "purge with a lone surrogate in its reason": (
        lambda st: st.purge("s1", reason="\udfff"),
        InvalidEvent,
        r"^reason: text is not valid UTF-8 \(lone surrogate at offset 0\)$",
    ),
    "create_session with context_window 0": (
        lambda st: st.create_session(context_window=0),
        InvalidArgument,
        "context_window must be an int above 0, or None, got int 0",
    ),
    "create_session with a title that is not text": (
        lambda st: st.create_session(title=["t"]),  # type: ignore[arg-type]
        InvalidArgument,
        r"title must be a str, got list \['t'\]",
    ),
    "create_session with compression not a mapping": (
        lambda st: st.create_session(compression=[1]),  # type: ignore[arg-type]
        InvalidArgument,
        r"compression must be a dict of settings or None, got list \[1\]",
    ),
    "create_session with an unhashable encoding": (
        lambda st: st.create_session(encoding={}),  # type: ignore[arg-type]
        InvalidArgument,
        r"encoding must be a str, got dict \{\}",
    ),
    "create_session under an id that is taken": (
        lambda st: st.create_session(session_id="s1"),
        SessionExists,
        "session 's1' is in this store already",
    ),
    "read from None": (
        lambda st: st.read("s1", from_seq=None),  # type: ignore[arg-type]
        InvalidArgument,
        "from_seq must be an int, got None",
    ),
    "read from True": (
        lambda st: st.read("s1", from_seq=True),
        InvalidArgument,
        "from_seq must be an int, got bool True",
    ),
    "read to a str": (
        lambda st: st.read("s1", to_seq="3"),  # type: ignore[arg-type]
        InvalidArgument,
        "to_seq must be an int or None, got str '3'",
    ),
    "append with expected_version a str": (
        lambda st: st.append("s1", [], expected_version="1"),  # type: ignore[arg-type]
        InvalidArgument,
        "expected_version must be an int from 0, or None, got str '1'",
    ),
    "a session id that is a 10,000-deep dict": (
        lambda st: st.session(nested(10_000)),  # type: ignore[arg-type]
        InvalidSessionId,
        r"a session id is a string of 1 to 128 characters, got \{'a': \{'a': \{\.\.\.\}\}\}",
    ),
    "a session id that is a huge string": (
        lambda st: st.version("x" * 10_000_000),
        InvalidSessionId,
        "a session id is a string of 1 to 128 characters, got 'xxxx",
    ),
    "import None": (
        lambda st: st.import_session(None),  # type: ignore[call-overload]
        InvalidArgument,
        "source must be a str or an iterable of str lines, got None",
    ),
    "import bytes": (
        lambda st: st.import_session(b'{"a": 1}'),  # type: ignore[arg-type]
        InvalidArgument,
        "source must be a str or an iterable of str lines, got bytes b'{\"a\": 1}'",
    ),
    "import lines that are not text": (
        lambda st: st.import_session(["{}", 7], format="claude-code"),  # type: ignore[call-overload]
        InvalidArgument,
        "source line 2 must be a str, got int 7",
    ),
    "import in an unknown format": (
        lambda st: st.import_session("", format=nested(5_000)),  # type: ignore[call-overload]
        InvalidArgument,
        "format must be one of 'sessionstore', 'openai', 'claude-code', 'codex', 'pi', 'opencode', "
        "'gemini-cli', got dict",
    ),
    "import with context_window -1": (
        lambda st: st.import_session("[]", format="openai", context_window=-1),
        InvalidArgument,
        "context_window must be an int above 0, or None, got int -1",
    ),
    "a Claude Code line in year 1 east of UTC": (
        lambda st: st.import_session(
            json.dumps(
                {
                    "type": "user",
                    "uuid": "u1",
                    "timestamp": "0001-01-01T00:00:00+01:00",
                    "message": {"role": "user", "content": "hi"},
                }
            ),
            format="claude-code",
        ),
        ImportRefused,
        "line 1: timestamp '0001-01-01T00:00:00\\+01:00' is out of range",
    ),
    "a Claude Code uuid that is an object": (
        lambda st: st.import_session(
            "\n".join(
                [
                    json.dumps({"type": "summary", "summary": "t"}),
                    json.dumps(
                        {
                            "type": "user",
                            "uuid": {"a": 1},
                            "parentUuid": None,
                            "message": {"role": "user", "content": "hi"},
                        }
                    ),
                ]
            ),
            format="claude-code",
        ),
        ImportRefused,
        "line 2: 'uuid' is not a string",
    ),
    "a Claude Code parentUuid that is a list": (
        lambda st: st.import_session(
            json.dumps(
                {
                    "type": "user",
                    "uuid": "u1",
                    "parentUuid": ["u0"],
                    "message": {"role": "user", "content": "hi"},
                }
            ),
            format="claude-code",
        ),
        ImportRefused,
        "line 1: 'parentUuid' is not a string",
    ),
}


@pytest.mark.parametrize("case", list(STORE_CALLS))
def test_a_bad_store_call_is_a_typed_error_and_writes_nothing(
    store: SessionStore, backend: Backend, case: str
) -> None:
    a_session(store)
    before = backend.table_rows()
    call, error, message = STORE_CALLS[case]

    with pytest.raises(error, match=message) as caught:
        call(store)

    assert type(caught.value) is error
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300
    assert backend.table_rows() == before


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda: ToolCall(id="", name="read"),
            "ToolCall: id: String should have at least 1 character",
            id="empty-call-id",
        ),
        pytest.param(
            lambda: ToolCall(id="c", name="read", input=nested_list(300)),
            r"ToolCall: input\.list\.0[.a-z0-9]*\.\.\.: Recursion error - maximum validation depth",
            id="input-nested-300-deep",
        ),
        pytest.param(
            lambda: ToolCall(id="c", name="read", input={1, 2}),
            "ToolCall: input",
            id="input-not-json",
        ),
        pytest.param(
            lambda: Usage(input=-1),
            "Usage: input: Input should be greater than or equal to 0",
            id="negative-usage",
        ),
    ],
)
def test_models_built_by_hand_refuse_bad_values_with_a_typed_error(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message) as caught:
        build()
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


def test_invalid_argument_is_both_a_value_and_a_type_error() -> None:
    """What callers caught before stays caught: pydantic's errors were ValueErrors, and Python
    raises TypeError for an argument of the wrong type."""
    assert issubclass(InvalidArgument, SessionStoreError)
    assert issubclass(InvalidArgument, ValueError)
    assert issubclass(InvalidArgument, TypeError)


def test_reads_past_the_seq_range_are_empty_or_whole(store: SessionStore) -> None:
    """A seq never exceeds the column's range, so bounds past it read as nothing or everything,
    on every backend (they used to overflow the driver)."""
    a_session(store)
    assert store.read("s1", from_seq=2**63) == []
    assert store.read("s1", from_seq=2**31) == []
    assert [e.seq for e in store.read("s1", to_seq=2**63)] == [1, 2, 3]
    assert [e.seq for e in store.read("s1", from_seq=-(2**70), to_seq=2**31)] == [1, 2, 3]
    assert store.read("s1", from_seq=2, to_seq=-(2**64)) == []


def test_context_at_the_far_ends_of_time(store: SessionStore) -> None:
    s = a_session(store)
    latest = datetime.max.replace(tzinfo=timezone(timedelta(hours=-14)))
    assert s.context(at=latest).seq == 3
    assert s.context(at=datetime.max.replace(tzinfo=UTC)).seq == 3
    with pytest.raises(InvalidReplayPoint, match="had not started"):
        s.context(at=datetime.min.replace(tzinfo=UTC))


def test_a_claude_code_line_before_year_1000_is_refused(
    store: SessionStore, backend: Backend
) -> None:
    """Such a time would be stored, but its exported form ("1-01-01T...") is not read back."""
    line = {
        "type": "user",
        "uuid": "u1",
        "timestamp": "0999-12-31T23:59:59Z",
        "message": {"role": "user", "content": "hi"},
    }
    with pytest.raises(ImportRefused, match="line 1: timestamp '0999-12-31T23:59:59Z' is out of"):
        store.import_session(json.dumps(line), format="claude-code")
    assert backend.table_rows() == {"events": [], "sessions": []}
    line["timestamp"] = "1000-01-01T00:00:00Z"
    store.import_session(json.dumps(line), format="claude-code", session_id="cc")
    assert [e.recorded_at for e in store.read("cc")] == [datetime(1000, 1, 1, tzinfo=UTC)] * 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"snapshot_every": 0}, "snapshot_every must be an int above 0, got int 0"),
        ({"max_payload_bytes": "16MB"}, "max_payload_bytes must be an int above 0, got str '16MB'"),
        ({"busy_timeout_ms": -1}, "busy_timeout_ms must be an int from 0, got int -1"),
        ({"sqlite_synchronous": "OFF"}, "sqlite_synchronous must be one of 'NORMAL', 'FULL'"),
        ({"migrate": "yes"}, "migrate must be a bool, got str 'yes'"),
        ({"clock": 0}, "clock must be callable, got int 0"),
    ],
)
def test_store_options_are_checked_before_the_database_is_opened(
    backend: Backend, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        SessionStore(backend.url, **options)
