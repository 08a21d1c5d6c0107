"""Export and import on every backend, and across them: a round trip is byte-identical, and a
file that is malformed or tampered with is refused with its line and writes nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from sessionstore import ImportRefused, Session, SessionExists, SessionStore, ToolCall
from sessionstore.events import GENESIS_HASH, RecordedEvent, canonical_json, event_hash
from tests.conftest import Backend, fresh_database


def agent_session(store: SessionStore) -> Session:
    s = store.create_session(model="gpt-4o", context_window=8_000, title="round trip ✓")
    s.append_system("be brief")
    for turn in range(3):
        s.append_user(f"turn {turn}: read the file — ünïcode")
        s.append_assistant(tool_calls=[ToolCall(id=f"c{turn}", name="read", input={"n": turn})])
        s.append_tool_result(f"c{turn}", output="line\n" * 3000)  # truncated on append
    s.prune()
    s.configure(minimum_compaction_saving=0)  # a short session: any saving will do
    # a short summary: the structured one of three pruned turns is longer than they are
    s.compact(lambda messages, target: "Read the file three times.", keep_turns=1, keep_tokens=0)
    return s


def envelope(event: RecordedEvent) -> tuple[object, ...]:
    return (event.seq, event.event_id, event.type, event.recorded_at, event.prev_hash, event.hash)


def test_export_then_import_gives_the_same_events_and_hashes(
    backend: Backend, tmp_path: Path
) -> None:
    with SessionStore(backend.url) as source:
        s = agent_session(source)
        lines = list(source.export_session(s.id))
        original = source.read(s.id)
        context = s.context()
    events = [line for line in lines if not line.startswith('{"body":')]
    assert len(events) == len(original) == s.version
    assert all(json.loads(line)["text"] for line in lines[len(events) :])  # then the bodies
    assert json.loads(lines[0])["hash"] == original[0].hash
    for target_backend in ("sqlite", "postgresql"):
        with (
            fresh_database(target_backend, tmp_path) as target_db,
            SessionStore(target_db.url) as target,
        ):
            imported = target.import_session("\n".join(lines) + "\n")
            assert imported.id == s.id
            assert [envelope(e) for e in target.read(s.id)] == [envelope(e) for e in original]
            assert [e.payload for e in target.read(s.id)] == [e.payload for e in original]
            assert target.verify(s.id).ok
            assert imported.context() == context
            assert list(target.export_session(s.id)) == lines  # byte-identical both ways


def test_a_tampered_export_is_refused_with_its_line_and_nothing_written(
    backend: Backend, tmp_path: Path
) -> None:
    with fresh_database("sqlite", tmp_path) as source_db, SessionStore(source_db.url) as source:
        lines = list(source.export_session(agent_session(source).id))
    event = json.loads(lines[2])
    assert event["type"] == "MessageAppended"
    event["payload"]["message"]["parts"][0]["text"] = "turn 0: delete the repo"
    tampered = [*lines[:2], json.dumps(event), *lines[3:]]
    with SessionStore(backend.url) as target:
        target.create_session(title="already here")
        before = backend.table_rows()
        with pytest.raises(ImportRefused) as refused:
            target.import_session(tampered)
        assert refused.value.line == 3
        assert str(refused.value) == (
            "line 3: the hash chain is broken at seq 3: "
            "stored hash does not match the event's content"
        )
        assert backend.table_rows() == before


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "{not json",
            "line 2: not JSON: Expecting property name enclosed in double quotes (column 2)",
        ),
        ("[1, 2]", "line 2: not an event envelope (a JSON object)"),
        ('{"session_id": "x"}', "line 2: field 'seq' is missing or not a int"),
    ],
)
def test_a_malformed_line_is_refused(store: SessionStore, line: str, message: str) -> None:
    lines = list(store.export_session(agent_session(store).id))
    with pytest.raises(ImportRefused, match=f"^{re.escape(message)}$"):
        SessionStore("sqlite:///:memory:").import_session([lines[0], line, *lines[1:]])


def test_an_unknown_event_type_is_refused_by_line(store: SessionStore) -> None:
    lines = list(store.export_session(agent_session(store).id))
    event = json.loads(lines[2])
    event["type"] = "MessageShredded"
    with pytest.raises(ImportRefused, match=r"^line 3: unknown event type 'MessageShredded'"):
        SessionStore("sqlite:///:memory:").import_session([*lines[:2], json.dumps(event)])


def test_importing_a_session_twice_is_refused(store: SessionStore) -> None:
    s = agent_session(store)
    lines = list(store.export_session(s.id))
    with pytest.raises(SessionExists, match=f"session '{s.id}' is in this store already"):
        store.import_session(lines)
    assert store.verify(s.id).ok


def test_a_fork_needs_its_parent_first(store: SessionStore, tmp_path: Path) -> None:
    parent = agent_session(store)
    fork = store.fork(parent.id, at=5)
    fork.append_user("a different path")
    with fresh_database("sqlite", tmp_path) as target_db, SessionStore(target_db.url) as target:
        with pytest.raises(ImportRefused, match=f"the parent '{parent.id}' is not in this store"):
            target.import_session(store.export_session(fork.id))
        target.import_session(store.export_session(parent.id))
        imported = target.import_session(store.export_session(fork.id))
        assert imported.context() == fork.context()


def rechained(lines: list[str], **started_changes: object) -> list[str]:
    """An export whose SessionStarted payload is changed and whose chain is recomputed, as an
    attacker with the file (and our code) would do it."""
    out, prev = [], GENESIS_HASH
    for number, line in enumerate(lines):
        if line.startswith('{"body":'):  # a body: not in the chain
            out.append(line)
            continue
        envelope = json.loads(line)
        if number == 0:
            envelope["payload"].update(started_changes)
        envelope["prev_hash"] = prev
        envelope["hash"] = prev = event_hash(
            prev_hash=prev,
            event_id=envelope["event_id"],
            session_id=envelope["session_id"],
            seq=envelope["seq"],
            event_type=envelope["type"],
            schema_version=envelope["schema_version"],
            recorded_at=datetime.fromisoformat(envelope["recorded_at"]),
            payload_json=canonical_json(envelope["payload"]),
        )
        out.append(json.dumps(envelope))
    return out


def test_a_crafted_fork_export_cannot_read_another_session(
    store: SessionStore, backend: Backend, tmp_path: Path
) -> None:
    victim = store.create_session(title="private")
    victim.append_user("my secret plan")
    with fresh_database("sqlite", tmp_path) as other_db, SessionStore(other_db.url) as other:
        mine = other.create_session(title="harmless")
        mine.append_user("hello")
        lines = list(other.export_session(mine.id))
    before = backend.table_rows()

    no_hash = rechained(lines, parent_session_id=victim.id, parent_seq=2)
    with pytest.raises(ImportRefused, match="names the parent_hash"):
        store.import_session(no_hash)
    guessed = rechained(lines, parent_session_id=victim.id, parent_seq=2, parent_hash="a" * 64)
    with pytest.raises(ImportRefused, match="has another history: its event 2"):
        store.import_session(guessed)

    assert backend.table_rows() == before


def test_an_old_export_holding_negative_zero_is_refused_not_stored_unverifiable(
    store: SessionStore, backend: Backend
) -> None:
    source = SessionStore("sqlite:///:memory:")
    s = source.create_session()
    s.configure(trigger_ratio=0.5)
    lines = list(source.export_session(s.id))
    changed = json.loads(lines[1])
    changed["payload"]["compression"]["trigger_ratio"] = -0.0  # what older versions kept
    crafted = rechained([lines[0], json.dumps(changed)])
    assert '"trigger_ratio": -0.0' in crafted[1]
    before = backend.table_rows()

    with pytest.raises(ImportRefused, match=r"^line 2: the payload holds -0\.0"):
        store.import_session(crafted)
    assert backend.table_rows() == before


def test_an_export_that_repeats_an_event_id_is_refused_with_its_line(
    store: SessionStore, backend: Backend
) -> None:
    """Its chain holds (recomputed over the repeated id), but no store can hold an event id
    twice in a session: the file is what is wrong, not the store (it was `SessionExists`)."""
    source = SessionStore("sqlite:///:memory:")
    s = source.create_session()
    s.append_user("first")
    s.append_user("second")
    lines = list(source.export_session(s.id))
    repeated = json.loads(lines[2])
    repeated["event_id"] = json.loads(lines[1])["event_id"]
    crafted = rechained([lines[0], lines[1], json.dumps(repeated), *lines[3:]])
    before = backend.table_rows()

    with pytest.raises(ImportRefused) as refused:
        store.import_session(crafted)
    assert (type(refused.value), str(refused.value)) == (
        ImportRefused,
        f"line 3: event id {repeated['event_id']!r} is the one of line 2 again; each event of "
        "a session has an id of its own",
    )
    assert backend.table_rows() == before
    assert store.sessions() == []


def test_unicode_line_separators_survive_a_round_trip(store: SessionStore) -> None:
    s = store.create_session(title="seps")
    s.append_user("one\u2028two\u2029three\x85four")
    text = "\n".join(store.export_session(s.id)) + "\n"
    with SessionStore("sqlite:///:memory:") as target:
        imported = target.import_session(text)
        assert imported.context() == s.context()


@pytest.mark.parametrize(
    ("damage", "line", "seq"),
    [
        pytest.param(lambda lines: lines[:4] + lines[5:], 5, 5, id="line-5-removed"),
        pytest.param(
            lambda lines: [*lines[:4], lines[5], lines[4], *lines[6:]], 5, 5, id="lines-swapped"
        ),
    ],
)
def test_a_missing_or_moved_line_is_named(
    store: SessionStore, damage: Callable[[list[str]], list[str]], line: int, seq: int
) -> None:
    lines = list(store.export_session(agent_session(store).id))
    with pytest.raises(ImportRefused) as refused:
        SessionStore("sqlite:///:memory:").import_session(damage(lines))
    assert (refused.value.line, str(refused.value)) == (
        line,
        f"line {line}: the hash chain is broken at seq {seq}: expected seq {seq}, found seq 6",
    )
