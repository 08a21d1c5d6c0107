"""What every recorder must do, stated once (as eventsourcing's recorder test cases do): each
backend's module subclasses `RecorderContract` and says how to make its recorder, on a fresh
database at head (and how to leave a body no session references, which no write can do).
Every member of the `Recorder` protocol, and every parameter of each, is exercised here:
tests/recorders/test_contract_coverage.py fails when one is not. The store's behaviour suite
(tests/contract) runs on every backend besides."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from sessionstore.events import SearchEntry
from sessionstore.events._errors import DatabaseUnavailable, SchemaMismatch
from sessionstore.storage._migrate import head_revision
from sessionstore.storage._recorder import (
    BodyRow,
    DatabaseState,
    EventRow,
    Head,
    ListingKey,
    LostRace,
    NewSession,
    Recorder,
    SearchFilter,
    SearchRow,
    SessionFilter,
    SessionMetadata,
)
from sessionstore.storage._schema import events
from sessionstore.storage._schema import metadata as schema
from sessionstore.storage._sql import PAGE, SqlRecorder

T0 = datetime(2026, 11, 23, 12, 0, 0, 123456, tzinfo=UTC)


def rows(
    session_id: str,
    first: int,
    count: int,
    *,
    kind: str = "MessageAppended",
    later: timedelta = timedelta(0),
) -> list[EventRow]:
    """`count` rows continuing a session from seq `first`, one microsecond apart (`later`
    than T0 + seq microseconds), with hashes that only need to be distinct (the recorder
    stores them; the chain is the store's)."""
    return [
        EventRow(
            session_id=session_id,
            seq=seq,
            event_id=f"{session_id}-e{seq}",
            type="SessionStarted" if seq == 1 else kind,
            schema_version=1,
            recorded_at=T0 + later + timedelta(microseconds=seq),
            prev_hash=f"{seq - 1:064x}",
            hash=f"{seq:064x}",
            payload=json.dumps({"n": seq, "text": "héllo ✓ \u2028"}, ensure_ascii=False),
        )
        for seq in range(first, first + count)
    ]


def redaction(session_id: str, seq: int, digests: list[str]) -> list[EventRow]:
    """A `ContentRedacted` row at `seq` naming `digests`: what lets a write delete bodies."""
    (row,) = rows(session_id, seq, 1, kind="ContentRedacted")
    return [row._replace(payload=json.dumps({"digests": digests}))]


def head_of(batch: list[EventRow]) -> Head:
    return Head(batch[-1].seq, batch[-1].hash, batch[-1].recorded_at)


def body(n: int, data: bytes = b"hello") -> BodyRow:
    return BodyRow(f"{n:064x}", len(data), "none", data)


NEW = NewSession(title="t", parent_id=None, parent_seq=None)


def entry(
    seq: int,
    terms: str,
    *,
    part: int = 0,
    role: str = "user",
    digest: str | None = None,
    at: datetime | None = None,
) -> SearchEntry:
    """An index row of event `seq` (recorded as `rows` records it, unless `at`)."""
    recorded_at = at if at is not None else T0 + timedelta(seconds=1, microseconds=seq)
    return SearchEntry(seq, part, 0, role, "MessageAppended", digest, recorded_at, terms)


class RecorderContract:
    """Subclasses give a `recorder` fixture: a recorder on an empty database at head."""

    scheme: str
    """The backend name of the URLs the recorder is opened with ("sqlite", "postgresql", ...)."""

    @pytest.fixture
    def recorder(self) -> Iterator[Recorder]:  # pragma: no cover - every subclass gives one
        raise NotImplementedError
        yield

    def start(self, recorder: Recorder, session_id: str, count: int = 3) -> list[EventRow]:
        batch = rows(session_id, 1, count)
        recorder.write(session_id, None, batch, NEW)
        return batch

    # writing and the head

    def test_a_session_it_does_not_hold_has_no_head(self, recorder: Recorder) -> None:
        assert recorder.head("nobody") is None
        assert recorder.session("nobody") is None
        assert list(recorder.events("nobody", 1, 10)) == []
        assert list(recorder.events_at("nobody", [1])) == []
        assert recorder.events_by_id("nobody", ["nobody-e1"]) == []
        assert recorder.body_digests("nobody") == []
        assert recorder.session_ids() == []
        assert recorder.sessions() == []

    def test_a_new_session_gets_its_row_and_its_head(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        assert recorder.head("s1") == head_of(batch)
        info = recorder.session("s1")
        assert info is not None
        assert (info.id, info.title, info.version, info.head_hash) == ("s1", "t", 3, batch[-1].hash)
        assert (info.parent_id, info.parent_seq) == (None, None)
        assert (info.created_at, info.updated_at) == (batch[0].recorded_at, batch[-1].recorded_at)
        assert (info.app, info.user, info.tags) == (None, None, ())

    def test_a_fork_keeps_its_parent_and_fork_point(self, recorder: Recorder) -> None:
        self.start(recorder, "parent")
        recorder.write("child", None, rows("child", 1, 1), NewSession("fork", "parent", 2))
        info = recorder.session("child")
        assert info is not None
        assert (info.title, info.parent_id, info.parent_seq) == ("fork", "parent", 2)

    def test_positions_increase_across_sessions(self, recorder: Recorder) -> None:
        assert recorder.write("a", None, rows("a", 1, 2), NEW) == [1, 2]
        assert recorder.write("b", None, rows("b", 1, 3), NEW) == [3, 4, 5]
        assert recorder.write("a", head_of(rows("a", 1, 2)), rows("a", 3, 1)) == [6]
        assert [e.position for e in recorder.events("a", 1, 3)] == [1, 2, 6]

    def test_a_write_after_the_head_moves_it(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        more = rows("s1", 4, 2)
        recorder.write("s1", head_of(batch), more)
        assert recorder.head("s1") == head_of(more)
        assert [e.seq for e in recorder.events("s1", 1, 100)] == [1, 2, 3, 4, 5]
        info = recorder.session("s1")
        assert info is not None
        assert (info.version, info.created_at, info.updated_at) == (
            5,
            batch[0].recorded_at,
            more[-1].recorded_at,
        )

    def test_a_write_can_retitle_the_session_in_its_transaction(self, recorder: Recorder) -> None:
        """A purge's redaction deletes the title's body: the row reads its placeholder."""
        batch = self.start(recorder, "s1")
        purge = rows("s1", 4, 1, kind="ContentRedacted")
        recorder.write("s1", head_of(batch), purge, title="[redacted: purged]")
        info = recorder.session("s1")
        assert info is not None and (info.title, info.version) == ("[redacted: purged]", 4)
        with pytest.raises(LostRace):
            recorder.write("s1", head_of(batch), rows("s1", 4, 1), title="lost")
        info = recorder.session("s1")
        assert info is not None and (info.title, info.version) == ("[redacted: purged]", 4)

    def test_a_write_after_a_stale_head_loses_and_writes_nothing(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        stale = Head(2, batch[1].hash, batch[1].recorded_at)
        with pytest.raises(LostRace):
            recorder.write(
                "s1",
                stale,
                rows("s1", 3, 1),
                bodies=[body(1)],
                metadata=SessionMetadata("app", "user", ("tag",)),
                title="lost",
            )
        assert recorder.head("s1") == head_of(batch)
        assert [e.event_id for e in recorder.events("s1", 1, 100)] == [r.event_id for r in batch]
        assert recorder.body_digests("s1") == []
        info = recorder.session("s1")
        assert info is not None and (info.title, info.app, info.user, info.tags) == (
            "t",
            None,
            None,
            (),
        )

    def test_a_write_after_a_head_of_no_session_loses(self, recorder: Recorder) -> None:
        with pytest.raises(LostRace):
            recorder.write("ghost", Head(1, "0" * 64, T0), rows("ghost", 2, 1))
        assert recorder.session_ids() == []

    def test_a_taken_session_id_loses(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        with pytest.raises(LostRace):
            recorder.write("s1", None, rows("s1", 1, 1), NEW)
        assert recorder.head("s1") == head_of(batch)

    def test_a_taken_event_id_loses_the_whole_batch(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        clash = rows("s1", 4, 3)
        clash[2] = clash[2]._replace(event_id=batch[0].event_id)
        with pytest.raises(LostRace):
            recorder.write("s1", head_of(batch), clash)
        assert recorder.head("s1") == head_of(batch)
        assert len(list(recorder.events("s1", 1, 100))) == 3
        assert recorder.counts().events == 3

    def test_a_taken_seq_loses_the_whole_batch(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        clash = [row._replace(event_id=f"other-{row.seq}") for row in rows("s1", 3, 2)]
        with pytest.raises(LostRace):
            recorder.write("s1", head_of(batch), clash)
        assert recorder.head("s1") == head_of(batch)
        assert recorder.events_by_id("s1", ["other-3", "other-4"]) == []

    def test_one_of_writers_racing_from_one_head_wins(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        outcomes: list[str] = []

        def write(n: int) -> None:
            racing = [row._replace(event_id=f"w{n}-{row.seq}") for row in rows("s1", 4, 2)]
            try:
                recorder.write("s1", head_of(batch), racing)
                outcomes.append(f"w{n}")
            except LostRace:
                outcomes.append("lost")

        writers = [threading.Thread(target=write, args=(n,)) for n in range(6)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        (winner,) = [outcome for outcome in outcomes if outcome != "lost"]
        assert sorted(outcomes) == sorted([winner, *["lost"] * 5])
        assert [e.event_id for e in recorder.events("s1", 4, 5)] == [f"{winner}-4", f"{winner}-5"]

    # reading

    def test_events_read_back_exactly_as_written(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1", count=4)
        stored = list(recorder.events("s1", 1, 4))
        for row, back in zip(batch, stored, strict=True):
            assert back.session_id == row.session_id and back.seq == row.seq
            assert (back.event_id, back.type, back.schema_version) == row[2:5]
            assert back.recorded_at == row.recorded_at
            assert back.recorded_at.tzinfo is not None
            assert (back.prev_hash, back.hash) == (row.prev_hash, row.hash)
            assert json.loads(back.payload) == json.loads(row.payload)

    def test_a_range_is_read_a_page_at_a_time_to_its_end(self, recorder: Recorder) -> None:
        count = PAGE * 2 + 7
        self.start(recorder, "long", count=count)
        assert [e.seq for e in recorder.events("long", 1, count)] == list(range(1, count + 1))
        assert [e.seq for e in recorder.events("long", PAGE - 1, PAGE + 1)] == [
            PAGE - 1,
            PAGE,
            PAGE + 1,
        ]
        assert list(recorder.events("long", count + 1, count + 5)) == []
        assert list(recorder.events("long", 5, 4)) == []

    def test_events_at_seqs_and_by_id(self, recorder: Recorder) -> None:
        self.start(recorder, "s1", count=6)
        self.start(recorder, "s2", count=6)
        assert [e.seq for e in recorder.events_at("s1", [5, 2, 9, 2])] == [2, 5]
        assert [e.session_id for e in recorder.events_at("s2", [1])] == ["s2"]
        found = recorder.events_by_id("s1", ["s1-e3", "s2-e4", "s1-e6"])
        assert sorted((e.seq, e.event_id) for e in found) == [(3, "s1-e3"), (6, "s1-e6")]
        many = [f"s1-e{n}" for n in range(PAGE + 3)]
        assert sorted(e.seq for e in recorder.events_by_id("s1", many)) == [1, 2, 3, 4, 5, 6]

    def test_event_hash_and_the_seq_at_a_time(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1", count=3)
        assert recorder.event_hash("s1", 2) == batch[1].hash
        assert recorder.event_hash("s1", 4) is None
        assert recorder.event_hash("s2", 1) is None
        assert recorder.seq_at("s1", batch[1].recorded_at) == 2
        assert recorder.seq_at("s1", batch[1].recorded_at + timedelta(microseconds=1)) == 3
        assert recorder.seq_at("s1", T0) is None
        assert recorder.seq_at("s1", datetime(9999, 12, 31, tzinfo=UTC)) == 3
        assert recorder.seq_at("s2", datetime(9999, 12, 31, tzinfo=UTC)) is None

    def test_sessions_newest_first_and_every_id(self, recorder: Recorder) -> None:
        self.start(recorder, "older")
        recorder.write("newer", None, rows("newer", 1, 2, later=timedelta(hours=1)), NEW)
        assert [s.id for s in recorder.sessions()] == ["newer", "older"]
        assert recorder.session_ids() == ["newer", "older"]

    # the counters a listing shows

    def test_a_write_keeps_the_listing_counters_on_the_row(self, recorder: Recorder) -> None:
        first = rows("s1", 1, 2)
        recorder.write("s1", None, first, NEW._replace(context_window=8_000), live_tokens=40)
        compacted = rows("s1", 3, 2, kind="ContextCompacted")
        recorder.write("s1", head_of(first), compacted, live_tokens=12)
        info = recorder.session("s1")
        assert info is not None
        assert (info.context_window, info.live_tokens, info.compactions) == (8_000, 12, 2)
        more = rows("s1", 5, 1)
        recorder.write("s1", head_of(compacted), more)  # a writer without a fold: not counted
        [listed] = recorder.sessions()
        assert (listed.live_tokens, listed.compactions) == (None, 2)
        assert recorder.uncounted_sessions() == [("s1", 5)]

    def test_live_tokens_are_counted_only_at_the_head_they_were_folded_at(
        self, recorder: Recorder
    ) -> None:
        batch = self.start(recorder, "s1")
        assert recorder.count_live_tokens("s1", 2, 99) is False  # the head is at 3
        assert recorder.count_live_tokens("s1", 3, 30) is True
        assert recorder.uncounted_sessions() == []
        info = recorder.session("s1")
        assert info is not None and info.live_tokens == 30
        recorder.write("s1", head_of(batch), rows("s1", 4, 1), live_tokens=31)
        recorder.forget_live_tokens(["s1", "nobody"])
        assert recorder.uncounted_sessions() == [("s1", 4)]

    def test_forks_are_found_by_their_parent(self, recorder: Recorder) -> None:
        self.start(recorder, "parent")
        for child in ("b", "a"):
            recorder.write(child, None, rows(child, 1, 1), NewSession("fork", "parent", 2))
        recorder.write("grandchild", None, rows("grandchild", 1, 1), NewSession("f", "a", 1))
        assert recorder.forks_of(["parent"]) == ["a", "b"]
        assert recorder.forks_of(["a", "b"]) == ["grandchild"]
        assert recorder.forks_of(["grandchild", "nobody"]) == []

    def test_a_listing_goes_on_after_a_key_ties_by_id(self, recorder: Recorder) -> None:
        for session_id, later in [("a", 1), ("b", 2), ("c", 2), ("d", 3)]:
            batch = rows(session_id, 1, 1, later=timedelta(hours=later))
            recorder.write(session_id, None, batch, NEW)
        whole = recorder.sessions()
        assert [info.id for info in whole] == ["d", "b", "c", "a"]

        def after(info_id: str, limit: int | None = None) -> list[str]:
            [info] = [i for i in whole if i.id == info_id]
            key = ListingKey(info.updated_at, info.id)
            return [i.id for i in recorder.sessions(SessionFilter(limit=limit, after=key))]

        assert after("d") == ["b", "c", "a"]
        assert after("b") == ["c", "a"]
        assert after("c", limit=1) == ["a"]
        assert after("a") == []

    # listing metadata

    def test_sessions_are_listed_by_metadata_newest_first_ties_by_id(
        self, recorder: Recorder
    ) -> None:
        listed = {
            "a": (timedelta(hours=2), SessionMetadata("crm", "ann", ("red", "blue"))),
            "b": (timedelta(hours=1), SessionMetadata("crm", "bob", ("blue",))),
            "c": (timedelta(hours=1), SessionMetadata("ops", "ann", ())),
            "d": (timedelta(hours=3), None),
        }
        for session_id, (later, metadata) in listed.items():
            batch = rows(session_id, 1, 1, later=later)
            recorder.write(session_id, None, batch, NEW, metadata=metadata)

        def ids(where: SessionFilter) -> list[str]:
            return [info.id for info in recorder.sessions(where)]

        assert ids(SessionFilter()) == ["d", "a", "b", "c"]
        assert ids(SessionFilter(app="crm")) == ["a", "b"]
        assert ids(SessionFilter(user="ann")) == ["a", "c"]
        assert ids(SessionFilter(tag="blue")) == ["a", "b"]
        assert ids(SessionFilter(app="crm", user="bob", tag="blue")) == ["b"]
        assert ids(SessionFilter(tag="green")) == []
        assert ids(SessionFilter(limit=2)) == ["d", "a"]
        assert ids(SessionFilter(limit=2, offset=1)) == ["a", "b"]
        assert ids(SessionFilter(offset=3)) == ["c"]
        assert ids(SessionFilter(offset=4)) == []
        assert ids(SessionFilter(limit=0)) == []
        a = recorder.session("a")
        assert a is not None and (a.app, a.user, a.tags) == ("crm", "ann", ("blue", "red"))
        assert [info.tags for info in recorder.sessions()] == [(), ("blue", "red"), ("blue",), ()]

    def test_new_metadata_replaces_the_old_tags_and_all(self, recorder: Recorder) -> None:
        first = rows("s1", 1, 1)
        recorder.write("s1", None, first, NEW, metadata=SessionMetadata("crm", "ann", ("x", "y")))
        second = rows("s1", 2, 1, kind="MetadataChanged")
        recorder.write("s1", head_of(first), second, metadata=SessionMetadata(tags=("z",)))
        info = recorder.session("s1")
        assert info is not None and (info.app, info.user, info.tags) == (None, None, ("z",))
        assert [s.id for s in recorder.sessions(SessionFilter(tag="x"))] == []
        recorder.write("s1", head_of(second), rows("s1", 3, 1), metadata=SessionMetadata())
        assert [s.id for s in recorder.sessions(SessionFilter(tag="z"))] == []
        third = recorder.session("s1")
        assert third is not None and (third.tags, third.version) == ((), 3)

    def test_a_tag_given_twice_loses_and_writes_nothing(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        with pytest.raises(LostRace):
            recorder.write(
                "s1", head_of(batch), rows("s1", 4, 1), metadata=SessionMetadata(tags=("a", "a"))
            )
        assert recorder.head("s1") == head_of(batch)

    # snapshots

    def test_snapshots_keep_the_first_under_a_key_and_serve_the_newest(
        self, recorder: Recorder
    ) -> None:
        self.start(recorder, "s1", count=9)
        for seq in (3, 6):
            recorder.save_snapshot("s1", "context", 3, seq, json.dumps({"at": seq}), T0)
        recorder.save_snapshot("s1", "context", 3, 6, json.dumps({"at": "again"}), T0)
        recorder.save_snapshot("s1", "context", 2, 8, json.dumps({"old": True}), T0)
        recorder.save_snapshot("s1", "other", 3, 7, json.dumps({"other": True}), T0)
        newest = recorder.newest_snapshot("s1", "context", 3, 9)
        assert newest is not None and (newest[0], json.loads(newest[1])) == (6, {"at": 6})
        older = recorder.newest_snapshot("s1", "context", 3, 5)
        assert older is not None and (older[0], json.loads(older[1])) == (3, {"at": 3})
        assert recorder.newest_snapshot("s1", "context", 3, 2) is None
        assert recorder.newest_snapshot("s1", "context", 1, 9) is None
        stored = recorder.snapshots("s1", "context", 3)
        assert [(seq, json.loads(text)) for seq, text in stored] == [(3, {"at": 3}), (6, {"at": 6})]
        assert [seq for seq, _ in recorder.snapshots("s1", "context", 2)] == [8]

    def test_forgotten_snapshots_are_gone_and_only_theirs(self, recorder: Recorder) -> None:
        for session_id in ("s1", "s2", "s3"):
            self.start(recorder, session_id)
            recorder.save_snapshot(session_id, "context", 3, 2, json.dumps({"s": session_id}), T0)
        recorder.forget_snapshots(["s1", "s3", "nobody"])
        assert recorder.snapshots("s1", "context", 3) == []
        assert recorder.newest_snapshot("s3", "context", 3, 3) is None
        kept = recorder.newest_snapshot("s2", "context", 3, 3)
        assert kept is not None and (kept[0], json.loads(kept[1])) == (2, {"s": "s2"})
        recorder.forget_snapshots([])
        assert [seq for seq, _ in recorder.snapshots("s2", "context", 3)] == [2]

    # figures

    def test_counts_and_events_of_a_type(self, recorder: Recorder) -> None:
        assert tuple(recorder.counts()) == (0, 0, 0, 0, 0, 0)
        one = self.start(recorder, "s1", count=3)
        two = rows("s2", 1, 2)
        recorder.write("s2", None, two, NEW)
        counts = recorder.counts()
        assert (counts.sessions, counts.events) == (2, 5)
        assert counts.payload_bytes == sum(len(r.payload.encode("utf-8")) for r in one + two)
        assert sorted(
            (t, v, json.loads(p)["n"]) for t, v, p in recorder.payloads_of_type(["SessionStarted"])
        ) == [("SessionStarted", 1, 1), ("SessionStarted", 1, 1)]
        assert sorted(
            (t, json.loads(p)["n"])
            for t, _, p in recorder.payloads_of_type(["SessionStarted", "MessageAppended"], "s1")
        ) == [("MessageAppended", 2), ("MessageAppended", 3), ("SessionStarted", 1)]
        assert list(recorder.payloads_of_type(["SessionStarted"], "nobody")) == []
        assert recorder.count_of_type("MessageAppended", None) == {"s1": 2, "s2": 1}
        assert recorder.count_of_type("MessageAppended", "s2") == {"s2": 1}
        assert recorder.count_of_type("ContentRedacted", None) == {}

    # bodies

    def test_each_session_reads_its_own_bodies(self, recorder: Recorder) -> None:
        hello, other = body(7), body(8, b"other bytes")
        for session_id in ("s1", "s2", "s3"):
            self.start(recorder, session_id)
        recorder.write("s1", head_of(rows("s1", 1, 3)), rows("s1", 4, 1), bodies=[other, hello])
        recorder.write("s2", head_of(rows("s2", 1, 3)), rows("s2", 4, 1), bodies=[hello])
        again = hello._replace(compression="zlib", data=b"x\x9c")  # a digest held is kept
        recorder.write("s2", head_of(rows("s2", 1, 4)), rows("s2", 5, 1), bodies=[again])
        wanted = [hello.digest, other.digest, body(9).digest]
        assert sorted(recorder.bodies("s1", wanted)) == sorted([hello, other])
        assert recorder.bodies("s2", wanted) == [hello]
        assert recorder.bodies("s3", [hello.digest]) == []
        assert sorted(recorder.body_digests("s1")) == sorted([hello.digest, other.digest])
        assert recorder.body_digests("s2") == [hello.digest]
        assert recorder.body_digests("s3") == []
        many = [body(n).digest for n in range(PAGE + 3)]
        assert sorted(recorder.bodies("s1", many)) == sorted([hello, other])
        counts = recorder.counts()  # each body once per session that holds it
        stored = (counts.bodies, counts.body_bytes, counts.stored_body_bytes)
        assert stored == (3, 5 + 11 + 5, 5 + 11 + 5)

    def test_a_redaction_deletes_the_body_of_its_own_session_alone(
        self, recorder: Recorder
    ) -> None:
        secret = body(7)
        for session_id in ("s1", "s2"):
            self.start(recorder, session_id)
            recorder.write(session_id, head_of(rows(session_id, 1, 3)), rows(session_id, 4, 1),
                           bodies=[secret])  # fmt: skip
        for session_id in ("s1", "s2"):
            assert recorder.bodies("s2", [secret.digest]) == [secret]
            after = head_of(rows(session_id, 1, 4))
            recorder.write(
                session_id, after, redaction(session_id, 5, [secret.digest]), forget=[secret.digest]
            )
            assert recorder.body_digests(session_id) == []
            assert recorder.bodies(session_id, [secret.digest]) == []
        assert recorder.bodies("s2", [secret.digest]) == []
        assert recorder.counts().bodies == 0
        assert recorder.scrub(wait=False) is True
        assert recorder.scrub() is True

    def test_a_deletion_no_redaction_names_loses_and_writes_nothing(
        self, recorder: Recorder
    ) -> None:
        """The database refuses to delete a session's body unless a `ContentRedacted` event
        of that session names its digest."""
        kept, named = body(7), body(8)
        batch = self.start(recorder, "s1")
        with_bodies = rows("s1", 4, 1)
        recorder.write("s1", head_of(batch), with_bodies, bodies=[kept, named])
        with pytest.raises(LostRace):
            recorder.write(
                "s1",
                head_of(with_bodies),
                redaction("s1", 5, [named.digest]),
                forget=[named.digest, kept.digest],
            )
        assert recorder.head("s1") == head_of(with_bodies)
        assert sorted(recorder.bodies("s1", [kept.digest, named.digest])) == sorted([kept, named])
        recorder.write(
            "s1", head_of(with_bodies), redaction("s1", 5, [named.digest]), forget=[named.digest]
        )
        assert recorder.bodies("s1", [kept.digest, named.digest]) == [kept]

    # search

    def test_search_finds_events_by_their_index_rows_newest_first_once_each(
        self, recorder: Recorder
    ) -> None:
        one, two = self.start(recorder, "s1"), self.start(recorder, "s2")
        later = rows("s1", 4, 2, later=timedelta(seconds=1))
        index = [
            entry(4, "run alembic upgrade head", part=0),
            entry(4, "alembic again in a second part", part=1),
            entry(5, "the head of the queue", role="assistant", digest=body(5).digest),
        ]
        recorder.write("s1", head_of(one), later, index=index)
        recorder.write("s2", head_of(two), rows("s2", 4, 1), index=[entry(4, "alembic ini", at=T0)])
        assert recorder.search(SearchFilter(phrases=(("alembic",),))) == [
            SearchRow("s1", 4, "MessageAppended", index[0].recorded_at, "t"),
            SearchRow("s2", 4, "MessageAppended", T0, "t"),
        ]
        assert [(r.session_id, r.seq) for r in recorder.search(SearchFilter((("head",),)))] == [
            ("s1", 5),
            ("s1", 4),
        ]
        phrase = SearchFilter((("upgrade", "head"),))
        assert [r.seq for r in recorder.search(phrase)] == [4]
        assert recorder.search(SearchFilter((("head", "upgrade"),))) == []
        assert recorder.search(SearchFilter((("alembic",), ("queue",)))) == []
        assert [r.seq for r in recorder.search(SearchFilter((("head",),), limit=1))] == [5]
        assert [r.seq for r in recorder.search(SearchFilter((("head",),), role="user"))] == [4]
        since = SearchFilter((("alembic",),), since=T0 + timedelta(milliseconds=1))
        assert [r.session_id for r in recorder.search(since)] == ["s1"]
        assert recorder.search(SearchFilter((("alembic",),), app="nobody")) == []
        assert recorder.search(SearchFilter((("alembic",),), user="nobody")) == []
        assert recorder.search(SearchFilter((("alembic",),), tag="nobody")) == []

    def test_a_write_unindexes_the_rows_of_the_bodies_it_names_in_its_session_only(
        self, recorder: Recorder
    ) -> None:
        secret = body(7)
        for session_id in ("s1", "s2"):
            batch = self.start(recorder, session_id)
            recorder.write(
                session_id,
                head_of(batch),
                rows(session_id, 4, 1),
                bodies=[secret],
                index=[entry(4, "the key is zq7leak9x", digest=secret.digest)],
            )
        recorder.write(
            "s1",
            head_of(rows("s1", 1, 4)),
            redaction("s1", 5, [secret.digest]),
            forget=[secret.digest],
            unindex=[secret.digest],
        )
        found = recorder.search(SearchFilter((("zq7leak9x",),)))
        assert [(r.session_id, r.seq) for r in found] == [("s2", 4)]
        assert recorder.indexed("s1") == []
        assert recorder.indexed("s2") == [(4, 0, 0, secret.digest)]
        assert recorder.indexed("nobody") == []
        assert list(recorder.each_indexed("s2")) == [(4, 0, 0, secret.digest)]
        assert list(recorder.each_indexed("nobody")) == []

    # lifecycle

    def test_a_database_at_head_is_at_head(self, recorder: Recorder) -> None:
        state = recorder.database_state()
        assert (state.exists, state.revision) == (True, head_revision())
        assert set(schema.tables) <= state.tables

    def test_migrating_to_head_lets_refuse_look_and_changes_nothing(
        self, recorder: Recorder
    ) -> None:
        batch = self.start(recorder, "s1")
        before = recorder.database_state()
        seen: list[DatabaseState] = []
        recorder.migrate("head", refuse=seen.append)
        assert [(state.revision, state.tables) for state in seen] == [
            (before.revision, before.tables)
        ]
        assert recorder.database_state() == before
        assert recorder.head("s1") == head_of(batch)

        def refuse(state: DatabaseState) -> None:
            raise SchemaMismatch(f"refused at {state.revision}")

        with pytest.raises(SchemaMismatch, match=f"refused at {head_revision()}"):
            recorder.migrate("head", refuse=refuse)
        assert recorder.database_state() == before

    def test_the_url_it_shows_hides_any_password(self, recorder: Recorder) -> None:
        shown = sa.make_url(recorder.shown_url)
        assert shown.get_backend_name() == self.scheme
        assert shown.password in (None, "***")

    def test_a_closed_recorder_can_be_closed_again(self, recorder: Recorder) -> None:
        recorder.close()
        recorder.close()


class SqlRecorderContract(RecorderContract):
    """The contract, and what a SQL recorder owes besides: rows its own fast paths write read
    the same through SQLAlchemy Core, and the reverse."""

    def test_rows_read_the_same_through_sqlalchemy_core(self, recorder: Recorder) -> None:
        assert isinstance(recorder, SqlRecorder)
        self.start(recorder, "s1", count=2)
        with recorder.engine.connect() as conn:
            core = conn.execute(
                sa.select(events.c.seq, events.c.recorded_at, events.c.payload)
                .where(events.c.session_id == "s1")
                .order_by(events.c.seq)
            ).all()
        fast = list(recorder.events("s1", 1, 2))
        assert [r.seq for r in core] == [e.seq for e in fast]
        for row, event in zip(core, fast, strict=True):
            assert row.recorded_at.replace(tzinfo=UTC) == event.recorded_at.astimezone(UTC)
            assert row.payload == json.loads(event.payload)


def unreachable(recorder_for: type, url: str, **options: object) -> None:
    with pytest.raises(DatabaseUnavailable):
        recorder = recorder_for(sa.make_url(url), **options)
        try:
            recorder.head("s")
        finally:
            recorder.close()
