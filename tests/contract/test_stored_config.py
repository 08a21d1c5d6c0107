"""One bad config event must never brick a session: a config is checked before it is written,
and a session whose stored config is invalid anyway (written by an older version, or around
the checks) still opens and works with the default settings."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import sessionstore.log._log
from sessionstore import InvalidArgument, InvalidEvent, Session, SessionStore, ToolCall
from sessionstore.events import (
    CompressionChanged,
    CompressionConfig,
    MessageAppended,
    SessionStarted,
    ToolResultPart,
)
from tests.conftest import Backend


@pytest.mark.parametrize(
    ("compression", "message"),
    [
        ({"trigger_ratio": 5}, "compression: trigger_ratio: Input should be less than or equal"),
        ({"max_lines": 0}, "compression: max_lines: Input should be greater than 0"),
        ({"colour": "red"}, "compression: colour: Extra inputs are not permitted"),
        ({"tools": {"bash": {"max_bytes": -1}}}, "compression: tools.bash.max_bytes: Input should"),
        ({"max_attempts": 10**12}, "compression: max_attempts: Input should be less than or equal"),
    ],
)
def test_create_session_refuses_an_invalid_config_and_writes_nothing(
    store: SessionStore, backend: Backend, compression: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        store.create_session(compression=compression)
    assert backend.table_rows() == {"events": [], "sessions": []}


def test_a_valid_partial_config_is_kept_as_given(store: SessionStore) -> None:
    s = store.create_session(compression={"max_lines": 10, "protected_tools": ["skill"]})
    assert s.header.compression == {"max_lines": 10, "protected_tools": ["skill"]}
    assert s.config == CompressionConfig(max_lines=10, protected_tools=("skill",))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            {"type": "CompressionChanged", "compression": {"max_lines": 0}},
            "CompressionChanged: compression.max_lines: Input should be greater than 0",
        ),
        (
            CompressionChanged(compression={"trigger_ratio": 5}),
            "CompressionChanged: compression.trigger_ratio: Input should be less than or equal",
        ),
    ],
)
def test_a_raw_append_refuses_an_invalid_config_and_writes_nothing(
    store: SessionStore, backend: Backend, payload: Any, message: str
) -> None:
    s = store.create_session(session_id="s1")
    before = backend.table_rows()

    with pytest.raises(InvalidEvent, match=message):
        store.append("s1", [payload], expected_version=1)
    with pytest.raises(InvalidEvent, match=message):
        s.append_events([payload])

    assert backend.table_rows() == before


def test_a_raw_session_start_with_an_invalid_config_is_refused(
    store: SessionStore, backend: Backend
) -> None:
    with pytest.raises(InvalidEvent, match=r"SessionStarted: compression\.trigger_ratio: Input"):
        store.append("s1", [SessionStarted(compression={"trigger_ratio": 5})], expected_version=0)
    assert backend.table_rows() == {"events": [], "sessions": []}


def without_config_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes configs the way an older version did: unchecked."""
    monkeypatch.setattr(sessionstore.log._log, "check_stored_configs", lambda batch: None)


def bricked(store: SessionStore, monkeypatch: pytest.MonkeyPatch, how: str) -> str:
    """A session whose config in force is invalid, written around today's checks."""
    with monkeypatch.context() as unchecked:
        without_config_checks(unchecked)
        if how == "at start":
            store.append(
                "old",
                [SessionStarted(context_window=20_000, compression={"trigger_ratio": 5})],
                expected_version=0,
            )
        else:
            store.append("old", [SessionStarted(context_window=20_000)], expected_version=0)
            store.append(
                "old",
                [CompressionChanged(compression={"max_lines": 0, "trigger_ratio": 0.5})],
                expected_version=1,
            )
    return "old"


@pytest.mark.parametrize("how", ["at start", "by a later change"])
def test_a_session_with_an_invalid_stored_config_works_with_the_defaults(
    store: SessionStore,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    how: str,
) -> None:
    session_id = bricked(store, monkeypatch, how)

    with caplog.at_level(logging.WARNING, logger="sessionstore"):
        s = store.session(session_id)
        assert s.config == CompressionConfig()  # the whole config: defaults, valid fields too
        s.append_system("You are terse.")
        s.append_user("read a.py " * 50)
        s.append_assistant("", tool_calls=[ToolCall(id="c1", name="read", input={})])
        s.append_tool_result("c1", "x\n" * 3_000)  # cut at the default 2,000 lines
        s.append_user("and now?")
        s.append_assistant("done")
        s.append_user("thanks")
        check = s.before_llm_call()
        compaction = s.compact(keep_turns=1, keep_tokens=0)
        context = s.context()

    results = [
        part
        for event in store.read(session_id)
        if isinstance(event.payload, MessageAppended)
        for part in event.payload.message.parts
        if isinstance(part, ToolResultPart)
    ]
    assert [r.truncation.max_lines for r in results if r.truncation] == [2_000]
    assert check.before.limit == int((20_000 - 4_096) * 0.8)  # the default trigger_ratio
    assert compaction.type == "ContextCompacted"
    assert context.messages[-1].parts[0].text == "thanks"  # type: ignore[union-attr]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert (
        warnings[0]
        .getMessage()
        .startswith("session old: its stored compression settings are invalid (")
    )
    assert warnings[0].getMessage().endswith("); using the defaults")
    assert store.verify(session_id).ok


def test_configure_repairs_an_invalid_stored_config(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = store.session(bricked(store, monkeypatch, "at start"))
    s.configure(max_lines=10)
    assert s.config == CompressionConfig(max_lines=10)
    assert store.session("old").config == CompressionConfig(max_lines=10)


def test_each_handle_warns_once(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    session_id = bricked(store, monkeypatch, "at start")
    with caplog.at_level(logging.WARNING, logger="sessionstore"):
        handles: list[Session] = [store.session(session_id), store.session(session_id)]
        for s in handles:
            for _ in range(3):
                s.measure()
                s.append_user("again")
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_a_fork_of_a_session_with_an_invalid_config_works_too(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = bricked(store, monkeypatch, "by a later change")
    fork = store.fork(session_id)
    fork.append_user("hello")
    assert fork.config == CompressionConfig()
