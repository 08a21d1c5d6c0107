"""What agent frameworks' sessions do besides appending, as events, on every backend: pop the
newest item, clear the live context, and a key-value state that replays like the context."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionstore import InvalidArgument, NotInContext, Session, SessionStore, ToolCall
from sessionstore.events import (
    Message,
    MessagePopped,
    Native,
    SessionCleared,
    StateChanged,
    TextPart,
)


def started(store: SessionStore) -> Session:
    s = store.create_session(model="gpt-4o", context_window=128_000, session_id="life")
    s.append_system("You are terse.")
    s.append_user("Read a.py")
    s.append_assistant("", tool_calls=[ToolCall(id="c1", name="read", input={"path": "a.py"})])
    s.append_tool_result("c1", output="print('hi')\n")
    return s


def roles(s: Session, at: int | None = None) -> list[str]:
    return [m.role for m in s.context(at).messages]


def test_pop_takes_the_newest_item_even_a_tool_result_and_replay_keeps_it(
    store: SessionStore,
) -> None:
    s = started(store)
    before = s.context()
    popped = s.pop()
    assert popped is not None and popped.role == "tool"
    assert popped.parts[0].output == "print('hi')\n"  # type: ignore[union-attr]
    assert roles(s) == ["system", "user", "assistant"]
    live = sum(m.tokens for m in s.context().messages)
    assert live == sum(m.tokens for m in before.messages[:-1])
    assert s.pop() is not None and s.pop() is not None and s.pop() is not None
    assert s.pop() is None and s.context().messages == ()
    assert roles(s, at=before.seq) == ["system", "user", "assistant", "tool"]
    events = store.read(s.id)
    assert [type(e.payload) for e in events[-4:]] == [MessagePopped] * 4
    resumed = store.session(s.id)
    assert resumed.context().messages == () and resumed.version == s.version


def test_a_popped_call_can_be_answered_again_only_once_it_is_appended_anew(
    store: SessionStore,
) -> None:
    s = started(store)
    s.pop()  # the result: the call waits again
    assert s.context().messages[-1].parts[0].call_id == "c1"  # type: ignore[union-attr]
    s.append_tool_result("c1", output="second try\n")
    assert [m.role for m in s.context().messages][-1] == "tool"


def test_clear_empties_the_live_context_and_keeps_history_and_state(store: SessionStore) -> None:
    s = started(store)
    s.update_state({"user_name": "Ada"})
    full = s.context()
    event = s.clear(reason="user asked")
    assert event is not None and isinstance(event.payload, SessionCleared)
    assert event.payload.cleared_message_ids == tuple(m.id for m in full.messages)
    assert s.context().messages == () and s.context().tokens == 0
    assert s.clear() is None  # nothing live: nothing written
    assert s.state() == {"user_name": "Ada"}
    assert [m.id for m in s.context(at=full.seq).messages] == [m.id for m in full.messages]
    s.append_user("again")
    assert roles(store.session(s.id)) == ["user"]
    assert store.verify(s.id).ok


def test_state_changes_are_deltas_that_replay_to_any_point(store: SessionStore) -> None:
    s = store.create_session(model="m", session_id="state")
    assert s.state() == {}
    first = s.update_state({"a": 1, "b": [1, 2], "c": {"d": None}})
    assert first is not None and isinstance(first.payload, StateChanged)
    assert s.update_state({"a": 1}) is None  # the same value: no event
    second = s.update_state({"a": 2, "e": (3, 4)}, remove=["b", "missing"])
    assert second is not None
    assert second.payload == StateChanged(values={"a": 2, "e": [3, 4]}, removed=("b",))
    assert s.state() == {"a": 2, "c": {"d": None}, "e": [3, 4]}
    assert s.state(at=first.seq) == {"a": 1, "b": [1, 2], "c": {"d": None}}
    assert s.state(at=1) == {}
    copy = s.state()
    copy["a"] = 99
    assert s.state()["a"] == 2
    assert store.session("state").state() == {"a": 2, "c": {"d": None}, "e": [3, 4]}


def test_a_fork_starts_from_its_parents_state_at_the_fork_point(store: SessionStore) -> None:
    s = store.create_session(model="m", session_id="parent")
    point = s.update_state({"plan": "v1"})
    s.update_state({"plan": "v2"})
    assert point is not None
    fork = store.fork("parent", at=point.seq)
    assert fork.state() == {"plan": "v1"}
    fork.update_state(remove=["plan"])
    assert fork.state() == {} and s.state() == {"plan": "v2"}


def test_state_survives_snapshots(store: SessionStore) -> None:
    s = store.create_session(model="m", session_id="snap")
    for n in range(250):
        s.update_state({f"k{n % 7}": n})
    resumed = store.session("snap")
    assert resumed.state() == {f"k{k}": max(n for n in range(250) if n % 7 == k) for k in range(7)}


@pytest.mark.parametrize(
    ("values", "remove", "message"),
    [
        ([("a", 1)], (), "values must be a mapping"),
        ({1: "x"}, (), "a state key is non-empty text"),
        ({"": 1}, (), "a state key is non-empty text"),
        ({"a": float("nan")}, (), "no stable JSON form"),
        ({"a": b"x"}, (), "bytes is not a JSON value"),
        ({"a": 1}, ["a"], "both set and removed"),
        (None, "a", "remove must be a list of keys"),
        ({"a": "\x00"}, (), "NUL"),
    ],
)
def test_bad_state_is_refused_and_nothing_is_written(
    store: SessionStore, values: object, remove: object, message: str
) -> None:
    s = store.create_session(model="m", session_id="bad")
    with pytest.raises(InvalidArgument, match=message):
        s.update_state(values, remove=remove)  # type: ignore[arg-type]
    assert store.version("bad") == 1


def listed(store: SessionStore, **where: object) -> list[str]:
    return [info.id for info in store.sessions(**where)]  # type: ignore[arg-type]


def test_sessions_are_listed_by_app_user_and_tag_a_page_at_a_time(store: SessionStore) -> None:
    for n, (app, user, tags) in enumerate(
        [
            ("shop", "ada", ["urgent", "billing"]),
            ("shop", "bob", ["billing"]),
            ("blog", "ada", []),
            (None, None, ["urgent"]),
        ]
    ):
        s = store.create_session(model="m", session_id=f"s{n}", app=app, user=user, tags=tags)
        s.append_user(f"hello {n}")  # a later update puts it first in the listing
    assert listed(store) == ["s3", "s2", "s1", "s0"]
    assert listed(store, app="shop") == ["s1", "s0"]
    assert listed(store, app="shop", user="ada") == ["s0"]
    assert listed(store, user="ada") == ["s2", "s0"]
    assert listed(store, tag="urgent") == ["s3", "s0"]
    assert listed(store, tag="billing", user="bob") == ["s1"]
    assert listed(store, app="nobody") == []
    assert listed(store, limit=2) == ["s3", "s2"]
    assert listed(store, limit=2, offset=2) == ["s1", "s0"]
    assert listed(store, offset=4) == []
    info = store.session_info("s0")
    assert (info.app, info.user, info.tags) == ("shop", "ada", ("billing", "urgent"))


def metadata_of(s: Session) -> tuple[str | None, str | None, tuple[str, ...]]:
    return s.header.app, s.header.user, s.header.tags


def test_metadata_changes_by_event_and_a_fork_takes_its_parents(store: SessionStore) -> None:
    s = store.create_session(model="m", session_id="meta", app="shop", tags=["b", "a", "b"])
    assert s.header.tags == ("a", "b")
    assert s.update_metadata(app="shop") is None  # nothing changes: nothing written
    event = s.update_metadata(user="ada", tags=["c"])
    assert event is not None and event.type == "MetadataChanged"
    assert metadata_of(s) == ("shop", "ada", ("c",))
    assert listed(store, tag="a") == [] and listed(store, tag="c") == ["meta"]
    s.update_metadata(app=None)
    assert listed(store, app="shop") == [] and listed(store, user="ada") == ["meta"]
    fork = store.fork("meta")
    assert metadata_of(fork) == (None, "ada", ("c",))
    assert sorted(listed(store, tag="c")) == sorted(["meta", fork.id])
    resumed = store.session("meta")
    assert resumed.header == s.header
    assert store.verify("meta").ok


def test_an_exported_session_imports_with_its_metadata(store: SessionStore, tmp_path: Path) -> None:
    s = store.create_session(model="m", session_id="travels", app="shop", user="ada")
    s.append_user("hi")
    s.update_metadata(tags=["moved"])
    with SessionStore(f"sqlite:///{tmp_path / 'elsewhere.db'}") as elsewhere:
        elsewhere.import_session(list(store.export_session("travels")))
        info = elsewhere.session_info("travels")
        assert (info.app, info.user, info.tags) == ("shop", "ada", ("moved",))
        assert [i.id for i in elsewhere.sessions(tag="moved")] == ["travels"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"app": ""}, "app must be None or 1 to 128 characters"),
        ({"user": "x" * 129}, "user must be None or 1 to 128 characters"),
        ({"tags": "urgent"}, "tags must be a list of names"),
        ({"tags": [None]}, "a tag must be"),
        ({"tags": [f"t{n}" for n in range(65)]}, "at most 64 tags"),
        ({"owner": "ada"}, "takes app, user and tags, not owner"),
        ({"app": "a\nb"}, "unprintable"),
    ],
)
def test_bad_metadata_is_refused_and_nothing_is_written(
    store: SessionStore, changes: dict[str, object], message: str
) -> None:
    s = store.create_session(model="m", session_id="bad-meta")
    with pytest.raises(InvalidArgument, match=message):
        s.update_metadata(**changes)
    assert store.version("bad-meta") == 1
    if "owner" not in changes:
        with pytest.raises(InvalidArgument, match=message):
            store.create_session(model="m", **changes)  # type: ignore[arg-type]
    assert listed(store) == ["bad-meta"]


def test_a_message_or_a_record_and_its_state_change_are_one_transaction(
    store: SessionStore,
) -> None:
    s = started(store)
    s.update_state({"city": "Paris", "unit": "C"})
    head = s.version
    s.append_message(
        Message(role="assistant", parts=(TextPart(text="12 degrees"),)),
        state={"city": "Paris", "last": 12},  # the city is unchanged: left out of the event
    )
    s.append_record("adk.event", Native(api="adk", value={"escalate": True}), state={"done": True})
    s.append_message(Message(role="user", parts=(TextPart(text="thanks"),)), state={"done": True})
    kinds = [(e.seq, e.type) for e in store.read(s.id, head + 1)]
    assert kinds == [
        (head + 1, "MessageAppended"),
        (head + 2, "StateChanged"),
        (head + 3, "RecordAppended"),
        (head + 4, "StateChanged"),
        (head + 5, "MessageAppended"),
    ]
    changes = [e.payload for e in store.read(s.id, head + 1) if isinstance(e.payload, StateChanged)]
    assert [c.values for c in changes] == [{"last": 12}, {"done": True}]
    assert s.state() == {"city": "Paris", "unit": "C", "last": 12, "done": True}
    # a transaction: both events share one commit time, and a bad state writes neither
    with pytest.raises(InvalidArgument):
        s.append_message(Message(role="user", parts=(TextPart(text="x"),)), state={"k": {1, 2}})
    with pytest.raises(InvalidArgument):
        s.append_record("adk.event", Native(api="adk", value={}), state={"": 1})
    assert store.version(s.id) == head + 5


def test_tool_result_part_is_the_part_append_tool_result_records_without_appending_it(
    store: SessionStore,
) -> None:
    s = store.create_session(model="gpt-4o", context_window=128_000)
    s.append_user("read both")
    calls = [ToolCall(id="a", name="read", input={}), ToolCall(id="b", name="grep", input={})]
    s.append_assistant("", tool_calls=calls)
    head = s.version
    big = "".join(f"line {n}\n" for n in range(5_000))
    first = s.tool_result_part("a", big)
    second = s.tool_result_part("b", "one match", is_error=True)
    assert store.version(s.id) == head  # nothing appended yet
    assert first.name == "read" and first.output == big and first.truncation is not None
    assert second.name == "grep" and second.is_error and second.truncation is None
    s.append_message(Message(role="tool", parts=(first, second)))
    [message] = s.context().messages[-1:]
    assert [p.call_id for p in message.parts] == ["a", "b"]  # type: ignore[union-attr]
    assert message.parts[0].output == first.shown  # type: ignore[union-attr]
    with pytest.raises(NotInContext):
        s.tool_result_part("a", "again")  # answered: no longer pending
