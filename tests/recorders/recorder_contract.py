"""What every recorder must do, stated once (as eventsourcing's recorder test cases do): each
backend's module subclasses `RecorderContract` and says how to make its recorder, on a fresh,
migrated database. The store's behaviour suite (tests/contract) runs on every backend besides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from sessionstore.events._errors import DatabaseUnavailable
from sessionstore.storage._migrate import head_revision
from sessionstore.storage._recorder import BodyRow, EventRow, Head, LostRace, NewSession, Recorder
from sessionstore.storage._schema import events as events_table
from sessionstore.storage._sql import PAGE

T0 = datetime(2026, 11, 23, 12, 0, 0, 123456, tzinfo=UTC)


def rows(
    session_id: str, first: int, count: int, *, kind: str = "MessageAppended"
) -> list[EventRow]:
    """`count` rows continuing a session from seq `first`, one microsecond apart, with hashes
    that only need to be distinct (the recorder stores them; the chain is the store's)."""
    return [
        EventRow(
            session_id=session_id,
            seq=seq,
            event_id=f"{session_id}-e{seq}",
            type="SessionStarted" if seq == 1 else kind,
            schema_version=1,
            recorded_at=T0 + timedelta(microseconds=seq),
            prev_hash=f"{seq - 1:064x}",
            hash=f"{seq:064x}",
            payload=json.dumps({"n": seq, "text": "héllo ✓ \u2028"}, ensure_ascii=False),
        )
        for seq in range(first, first + count)
    ]


def head_of(batch: list[EventRow]) -> Head:
    return Head(batch[-1].seq, batch[-1].hash, batch[-1].recorded_at)


NEW = NewSession(title="t", parent_id=None, parent_seq=None)


class RecorderContract:
    """Subclasses give a `recorder` fixture: a recorder on an empty database at head."""

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

    def test_a_new_session_gets_its_row_and_its_head(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        assert recorder.head("s1") == head_of(batch)
        info = recorder.session("s1")
        assert info is not None
        assert (info.id, info.title, info.version, info.head_hash) == ("s1", "t", 3, batch[-1].hash)
        assert (info.created_at, info.updated_at) == (batch[0].recorded_at, batch[-1].recorded_at)

    def test_positions_increase_across_sessions(self, recorder: Recorder) -> None:
        first = recorder.write("a", None, rows("a", 1, 2), NEW)
        second = recorder.write("b", None, rows("b", 1, 2), NEW)
        assert first == sorted(first) and second == sorted(second)
        assert max(first) < min(second)

    def test_a_write_after_the_head_moves_it(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1")
        more = rows("s1", 4, 2)
        recorder.write("s1", head_of(batch), more)
        assert recorder.head("s1") == head_of(more)
        assert [e.seq for e in recorder.events("s1", 1, 100)] == [1, 2, 3, 4, 5]

    def test_a_write_can_retitle_the_session_in_its_transaction(self, recorder: Recorder) -> None:
        """A purge's redaction deletes the title's body: the row reads its placeholder."""
        batch = self.start(recorder, "s1")
        redaction = rows("s1", 4, 1, kind="ContentRedacted")
        recorder.write("s1", head_of(batch), redaction, title="[redacted: purged]")
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
            recorder.write("s1", stale, rows("s1", 3, 1))
        assert recorder.head("s1") == head_of(batch)
        assert [e.event_id for e in recorder.events("s1", 1, 100)] == [r.event_id for r in batch]

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

    def test_rows_read_the_same_through_sqlalchemy_core(self, recorder: Recorder) -> None:
        """A backend's own fast paths write what a Core statement reads, and the reverse."""
        self.start(recorder, "s1", count=2)
        with recorder.engine.connect() as conn:
            core = conn.execute(
                sa.select(events_table.c.seq, events_table.c.recorded_at, events_table.c.payload)
                .where(events_table.c.session_id == "s1")
                .order_by(events_table.c.seq)
            ).all()
        fast = list(recorder.events("s1", 1, 2))
        assert [r.seq for r in core] == [e.seq for e in fast]
        for row, event in zip(core, fast, strict=True):
            assert row.recorded_at.replace(tzinfo=UTC) == event.recorded_at.astimezone(UTC)
            assert row.payload == json.loads(event.payload)

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
        found = recorder.events_by_id("s1", ["s1-e3", "s2-e4", "s1-e6"])
        assert sorted(e.seq for e in found) == [3, 6]

    def test_event_hash_and_the_seq_at_a_time(self, recorder: Recorder) -> None:
        batch = self.start(recorder, "s1", count=3)
        assert recorder.event_hash("s1", 2) == batch[1].hash
        assert recorder.event_hash("s1", 4) is None
        assert recorder.seq_at("s1", batch[1].recorded_at) == 2
        assert recorder.seq_at("s1", batch[1].recorded_at + timedelta(microseconds=1)) == 3
        assert recorder.seq_at("s1", T0) is None

    def test_sessions_newest_first_and_every_id(self, recorder: Recorder) -> None:
        self.start(recorder, "older")
        later = [
            r._replace(recorded_at=r.recorded_at + timedelta(hours=1)) for r in rows("newer", 1, 2)
        ]
        recorder.write("newer", None, later, NEW)
        assert [s.id for s in recorder.sessions()] == ["newer", "older"]
        assert recorder.session_ids() == ["newer", "older"]

    # snapshots

    def test_snapshots_keep_the_first_under_a_key_and_serve_the_newest(
        self, recorder: Recorder
    ) -> None:
        self.start(recorder, "s1", count=9)
        for seq in (3, 6):
            recorder.save_snapshot("s1", "context", 3, seq, json.dumps({"at": seq}), T0)
        recorder.save_snapshot("s1", "context", 3, 6, json.dumps({"at": "again"}), T0)
        recorder.save_snapshot("s1", "context", 2, 8, json.dumps({"old": True}), T0)
        newest = recorder.newest_snapshot("s1", "context", 3, 9)
        assert newest is not None and newest[0] == 6 and json.loads(newest[1]) == {"at": 6}
        assert recorder.newest_snapshot("s1", "context", 3, 5) == (
            3,
            recorder.snapshots("s1", "context", 3)[0][1],
        )
        assert recorder.newest_snapshot("s1", "context", 3, 2) is None
        assert [seq for seq, _ in recorder.snapshots("s1", "context", 3)] == [3, 6]

    # figures

    def test_counts_and_events_of_a_type(self, recorder: Recorder) -> None:
        self.start(recorder, "s1", count=3)
        batch = rows("s2", 1, 2)
        recorder.write("s2", None, batch, NEW)
        counts = recorder.counts()
        assert (counts.sessions, counts.events) == (2, 5)
        assert counts.payload_bytes >= sum(len(r.payload.encode()) for r in batch) * 5 // 2
        assert sorted(t for t, _, _ in recorder.payloads_of_type(["SessionStarted"])) == [
            "SessionStarted",
            "SessionStarted",
        ]
        assert recorder.count_of_type("MessageAppended", None) == {"s1": 2, "s2": 1}
        assert recorder.count_of_type("MessageAppended", "s2") == {"s2": 1}

    # bodies

    def test_a_body_goes_when_its_last_reference_does_and_not_before(
        self, recorder: Recorder
    ) -> None:
        body = BodyRow(f"{7:064x}", 5, "none", b"hello")
        for session_id in ("s1", "s2"):
            self.start(recorder, session_id)
            recorder.write(session_id, head_of(rows(session_id, 1, 3)), rows(session_id, 4, 1),
                           bodies=[body])  # fmt: skip
        for session_id in ("s1", "s2"):
            redaction = rows(session_id, 5, 1, kind="ContentRedacted")
            redaction[0] = redaction[0]._replace(payload=json.dumps({"digests": [body.digest]}))
            after = head_of(rows(session_id, 1, 4))
            assert recorder.unreferenced_bodies() == []
            assert recorder.delete_unreferenced_bodies([body.digest]) == 0  # still referenced
            assert recorder.bodies("s2", [body.digest]) == [body]
            recorder.write(session_id, after, redaction, forget=[body.digest])
        assert recorder.bodies("s2", [body.digest]) == []
        assert recorder.unreferenced_bodies() == []
        assert recorder.scrub(wait=False) is True

    # lifecycle

    def test_a_migrated_database_is_at_head(self, recorder: Recorder) -> None:
        state = recorder.database_state()
        assert state.exists and state.revision == head_revision()
        assert {"events", "sessions", "snapshots"} <= state.tables

    def test_a_closed_recorder_can_be_closed_again(self, recorder: Recorder) -> None:
        recorder.close()
        recorder.close()


def unreachable(recorder_for: type, url: str, **options: object) -> None:
    with pytest.raises(DatabaseUnavailable):
        recorder = recorder_for(sa.make_url(url), **options)
        try:
            recorder.head("s")
        finally:
            recorder.close()
