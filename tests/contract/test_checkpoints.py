"""Checkpoints bound a replay at any length, and are never trusted over the log.

A fold that passes a multiple of `CHECKPOINT_EVERY` saves a snapshot there (as a read, or as
raw appends that cross it), so once a read has passed a point, a replay to any seq folds only
the events after the checkpoint at or before it; the context it gives is the one a fold of
every event gives. A checkpoint whose state or hash the log contradicts is ignored (the one
before it serves), a redaction forgets those folded from what it deleted, and a fork replays
through its parent's checkpoints. The constant is made small here so that a few dozen events
span several checkpoints.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore
from sessionstore.events import (
    Message,
    MessageAppended,
    MessagePinned,
    NewEvent,
    OutputsPruned,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.log import _replay
from sessionstore.log._replay import load_fold
from sessionstore.projections import PROJECTION, PROJECTION_VERSION, Context, context_of
from sessionstore.projections._snapshot import snapshot_digest
from tests.builders import compaction, started
from tests.conftest import Backend

EVERY = 5


@pytest.fixture(autouse=True)
def every_five_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_replay, "CHECKPOINT_EVERY", EVERY)


def agent_events(ops: list[str]) -> Iterator[NewEvent]:
    """A session start, then per op: a turn (user, tool call, tool result), a prune of every
    output so far, a compaction of everything before the last user message, or a pin of it."""
    yield NewEvent(started())
    ids: list[str] = []
    results: list[str] = []
    last_user = ""
    for n, op in enumerate(ops):
        if op == "turn" or not ids:
            last_user = f"u{n}"
            call = ToolCallPart.from_input(call_id=f"c{n}", name="read", input={"n": str(n)})
            call = call.model_copy(update={"id": f"a{n}.c"})
            result = ToolResultPart(id=f"t{n}.r", call_id=f"c{n}", output=f"line {n}\n" * 40)
            for message in (
                Message(id=last_user, role="user", parts=(TextPart(text=f"step {n}"),)),
                Message(id=f"a{n}", role="assistant", parts=(call,)),
                Message(id=f"t{n}", role="tool", parts=(result,)),
            ):
                ids.append(message.id)
                yield NewEvent(MessageAppended(message=message))
            results.append(result.id)
        elif op == "prune":
            pruned = OutputsPruned(
                part_ids=tuple(results),
                placeholder="[pruned]",
                placeholder_tokens=2,
                tokens_freed=1,
            )
            yield NewEvent(pruned)
        elif op == "compact":
            before = ids[: ids.index(last_user)]
            summary = Message(id=f"s{n}", role="user", parts=(TextPart(text=f"summary {n}"),))
            yield NewEvent(compaction(summary, last_user, before))
            ids = [summary.id, *ids[ids.index(last_user) :]]
        else:
            yield NewEvent(MessagePinned(message_id=last_user))


def write(store: SessionStore, session_id: str, events: list[NewEvent], batch: int) -> int:
    """Raw appends of `batch` events at a time; the head seq."""
    for start in range(0, len(events), batch):
        store.append(session_id, events[start : start + batch], expected_version=start)
    return len(events)


def full_fold(store: SessionStore, session_id: str, seq: int) -> Context:
    return context_of(load_fold(store._recorder, session_id, seq, use_snapshots=False).fold)


def checkpoint_seqs(store: SessionStore, session_id: str) -> list[int]:
    stored = store._recorder.snapshots(session_id, PROJECTION, PROJECTION_VERSION)
    return [int(seq) for seq, _ in stored]


OPS = st.lists(st.sampled_from(["turn", "turn", "turn", "prune", "compact", "pin"]), max_size=14)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS, batch=st.integers(1, 7))
def test_a_replay_at_every_seq_equals_a_fold_of_every_event(
    store: SessionStore, ops: list[str], batch: int
) -> None:
    """Replays at every seq, in order, each starting from the checkpoint at or before it
    (which the replays before saved, where the writes did not): each folds fewer than
    `CHECKPOINT_EVERY` events (or half the context's length, where that is longer: see
    `checkpoint_due`) and gives exactly the fully folded context; replayed again from the
    head down, the same."""
    session_id = f"ck-{len(store.sessions())}"
    head = write(store, session_id, list(agent_events(ops)), batch)
    longest = max(len(full_fold(store, session_id, seq).messages) for seq in range(1, head + 1))
    for seq in range(1, head + 1):
        loaded = load_fold(store._recorder, session_id, seq, checkpoint=store._log.save_snapshot)
        assert context_of(loaded.fold) == full_fold(store, session_id, seq)
        assert loaded.folded < EVERY + longest // 2
    for seq in reversed(range(1, head + 1)):
        loaded = load_fold(store._recorder, session_id, seq)
        assert context_of(loaded.fold) == full_fold(store, session_id, seq)
        assert loaded.folded < EVERY + longest // 2
    assert store.verify(session_id).ok


def test_raw_appends_save_a_checkpoint_where_they_cross_a_multiple(store: SessionStore) -> None:
    """No read needed: the raw appends' own fold is saved at the head of the write that
    passed each multiple."""
    events = list(agent_events(["turn", "turn", "compact", "turn", "compact", "turn"]))
    write(store, "raw", events, 3)  # heads at 3, 6, 9, 12, 15
    assert checkpoint_seqs(store, "raw") == [6, 12, 15]
    assert store.session("raw").context() == full_fold(store, "raw", 15)


def test_a_replay_reads_through_once_then_folds_from_checkpoints(store: SessionStore) -> None:
    events = list(agent_events(["turn", "prune", "turn", "compact", "turn", "turn", "pin"]))
    head = write(store, "once", events, len(events))  # one write: its head is saved
    assert checkpoint_seqs(store, "once") == [head]
    first = load_fold(store._recorder, "once", 12, checkpoint=store._log.save_snapshot)
    assert (first.snapshot_seq, first.folded) == (None, 12)
    assert checkpoint_seqs(store, "once") == [5, 10, head]
    again = load_fold(store._recorder, "once", 12)
    assert (again.snapshot_seq, again.folded) == (10, 2)


def tampered(backend: Backend, session_id: str, seq: int, change: str) -> None:
    """Edit the stored checkpoint at `seq`: its `hash` (with its digest recomputed, so only
    the log tells), or its token total (likewise)."""
    engine = backend.raw_engine()
    try:
        with engine.begin() as conn:
            text = conn.execute(
                sa.text(
                    "SELECT CAST(state AS TEXT) FROM snapshots WHERE session_id = :s AND seq = :seq"
                ),
                {"s": session_id, "seq": seq},
            ).scalar_one()
            state = json.loads(text)
            if change == "hash":
                state["hash"] = "0" * 64
            else:
                state["tokens"] += 1
            state["digest"] = snapshot_digest(state)
            conn.execute(
                sa.text("UPDATE snapshots SET state = :t WHERE session_id = :s AND seq = :seq"),
                {"t": json.dumps(state), "s": session_id, "seq": seq},
            )
    finally:
        engine.dispose()


@pytest.mark.parametrize("change", ["hash", "tokens"])
def test_a_tampered_checkpoint_is_ignored_and_the_one_before_serves(
    backend: Backend, store: SessionStore, change: str
) -> None:
    events = list(agent_events(["turn", "turn", "prune", "turn", "compact", "turn", "turn"]))
    write(store, "tamper", events, EVERY)  # checkpoints at 5, 10, 15
    tampered(backend, "tamper", 15, change)
    loaded = load_fold(store._recorder, "tamper", 17)
    assert (loaded.snapshot_seq, loaded.folded) == (10, 7)
    assert context_of(loaded.fold) == full_fold(store, "tamper", 17)
    assert [seq for seq, _ in store.verify("tamper").bad_snapshots] == [15]


def test_a_redaction_forgets_the_checkpoints_folded_from_what_it_deleted(
    store: SessionStore,
) -> None:
    events = list(agent_events(["turn", "turn", "turn", "turn", "turn", "turn"]))
    head = write(store, "redact", events, EVERY)
    session = store.session("redact")
    assert checkpoint_seqs(store, "redact") != []
    first_output = session.context(at=4).messages[-1].parts[0].id
    session.redact([first_output], reason="secret")
    assert checkpoint_seqs(store, "redact") == []
    replayed = session.context(at=head)
    assert replayed == full_fold(store, "redact", head)
    assert "[redacted: secret]" in json.dumps(replayed.to_openai())
    assert store.verify("redact").ok


def test_a_fork_replays_through_its_parents_checkpoints(store: SessionStore) -> None:
    events = list(agent_events(["turn", "prune", "turn", "turn", "compact", "turn", "turn"]))
    write(store, "parent", events, EVERY)
    fork = store.fork("parent", at=17)
    fork.append_user("and now the fork goes on")
    for n in range(8):
        fork.append_user(f"fork step {n}")
    store.session(fork.id)
    for seq in range(1, fork.version + 1):
        loaded = load_fold(store._recorder, fork.id, seq)
        assert context_of(loaded.fold) == full_fold(store, fork.id, seq)
    assert store.verify(fork.id).ok


def test_a_replay_that_cannot_save_a_checkpoint_tries_once_and_still_folds_right(
    backend: Backend, store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A reader that cannot write (here: the snapshots table refuses every row) gets the right
    context, with one warning, not one per checkpoint it passed."""
    events = list(agent_events(["turn", "compact", "turn", "compact", "turn", "compact", "turn"]))
    write(store, "readonly", events, len(events))
    if backend.name == "postgresql":
        backend.execute(
            "CREATE FUNCTION refuse_snapshots() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'read only'; END $$"
        )
        backend.execute(
            "CREATE TRIGGER refuse_snapshots BEFORE INSERT ON snapshots "
            "FOR EACH ROW EXECUTE FUNCTION refuse_snapshots()"
        )
    else:
        backend.execute(
            "CREATE TRIGGER refuse_snapshots BEFORE INSERT ON snapshots "
            "BEGIN SELECT RAISE(ABORT, 'read only'); END"
        )
    with caplog.at_level("WARNING", logger="sessionstore"):
        loaded = load_fold(store._recorder, "readonly", 14, checkpoint=store._log.save_snapshot)
    assert (loaded.snapshot_seq, loaded.folded) == (None, 14)
    assert context_of(loaded.fold) == full_fold(store, "readonly", 14)
    warnings = [r for r in caplog.records if "could not save a snapshot" in r.getMessage()]
    assert len(warnings) == 1
