"""`verify` proves a session's history was not altered, and names where it was."""

from __future__ import annotations

import zlib

import pytest
import sqlalchemy as sa

from sessionstore import Checkpoint, InvalidCheckpoint, SessionHead, SessionStore, ToolCall
from sessionstore.events._bodies import digest_of
from tests.builders import conversation
from tests.conftest import Backend


@pytest.fixture
def tampered(store: SessionStore, backend: Backend) -> SessionStore:
    """A store whose session `s1` (10 events) may now be edited behind its back."""
    store.append("s1", conversation(turns=3), expected_version=0)
    backend.drop_immutability_triggers()
    return store


def test_an_untouched_session_verifies(store: SessionStore) -> None:
    store.append("s1", conversation(turns=3), expected_version=0)
    report = store.verify("s1")
    assert (report.ok, report.events_checked, report.first_broken_seq) == (True, 10, None)


def test_an_altered_payload_is_named_by_its_seq(tampered: SessionStore, backend: Backend) -> None:
    if backend.name == "postgresql":
        backend.execute(
            "UPDATE events SET payload = jsonb_set(payload, '{message,parts,0,text}', "
            "'\"step 1: delete everything\"') WHERE seq = 5"
        )
    else:
        backend.execute(
            "UPDATE events SET payload = json_set(payload, '$.message.parts[0].text', "
            "'step 1: delete everything') WHERE seq = 5"
        )

    report = tampered.verify("s1")

    assert (report.ok, report.first_broken_seq, report.events_checked) == (False, 5, 4)
    assert report.reason == "stored hash does not match the event's content"


def test_a_rewritten_hash_breaks_the_next_link(tampered: SessionStore, backend: Backend) -> None:
    backend.execute("UPDATE events SET hash = :h WHERE seq = 7", h="f" * 64)

    report = tampered.verify("s1")

    assert report.first_broken_seq == 7
    assert report.reason == "stored hash does not match the event's content"


def test_a_deleted_event_is_a_gap(tampered: SessionStore, backend: Backend) -> None:
    backend.execute("DELETE FROM events WHERE seq = 4")

    report = tampered.verify("s1")

    assert report.first_broken_seq == 4
    assert report.reason == "expected seq 4, found seq 5"


def test_a_dropped_tail_disagrees_with_the_session_head(
    tampered: SessionStore, backend: Backend
) -> None:
    backend.execute("DELETE FROM events WHERE seq >= 9")

    report = tampered.verify("s1")

    assert report.first_broken_seq == 9
    assert report.reason == "session head is seq 10, but the log ends at seq 8"


def test_verify_checks_the_sessions_row_against_session_started(
    tampered: SessionStore, backend: Backend
) -> None:
    backend.execute("UPDATE sessions SET title = 'a forged title', parent_id = 'p', parent_seq = 1")

    report = tampered.verify("s1")

    assert (report.ok, report.first_broken_seq) == (False, None)
    assert report.problems == (
        "the sessions row has title 'a forged title', "
        "but SessionStarted recorded 'fix the failing test'",
        "the sessions row has parent_id 'p', but SessionStarted recorded None",
        "the sessions row has parent_seq 1, but SessionStarted recorded None",
    )


def test_verify_all_covers_sessions_that_have_events_but_no_row(
    tampered: SessionStore, backend: Backend
) -> None:
    tampered.append("s2", conversation(turns=1), expected_version=0)
    backend.execute("DELETE FROM sessions WHERE id = 's1'")

    reports = {r.session_id: r for r in tampered.verify_all()}

    assert sorted(reports) == ["s1", "s2"]
    assert reports["s1"].problems == ("it has events but no row in the sessions table",)
    assert (reports["s1"].ok, reports["s2"].ok) == (False, True)


def head_at(store: SessionStore, backend: Backend, seq: int) -> None:
    """Point the sessions row of s1 at its event `seq`, as a forger hiding a tail would (its
    live tokens marked not counted, which verify would otherwise find do not match)."""
    [event] = store.read("s1", from_seq=seq, to_seq=seq)
    backend.execute(
        "UPDATE sessions SET head_seq = :seq, head_hash = :h, live_tokens = NULL WHERE id = 's1'",
        seq=seq,
        h=event.hash,
    )


def test_a_deleted_tail_with_a_rewritten_head_is_caught_by_a_checkpoint(
    tampered: SessionStore, backend: Backend
) -> None:
    checkpoint = Checkpoint.of(tampered.verify_all())
    assert checkpoint.heads == (SessionHead("s1", 10, tampered.read("s1")[-1].hash),)
    backend.execute("DELETE FROM events WHERE seq >= 9")
    backend.execute("DELETE FROM search_index WHERE seq >= 9")  # a careful forger's
    head_at(tampered, backend, 8)
    assert tampered.verify("s1").ok  # the chain alone cannot tell

    [report] = tampered.verify_all(against=Checkpoint.loads(checkpoint.dumps()))

    assert report.ok is False
    assert report.problems == (
        "the checkpoint has it at seq 10, but its log ends at seq 8: history was removed",
    )


def test_a_truncated_then_rechained_session_is_caught_by_a_checkpoint(
    tampered: SessionStore, backend: Backend
) -> None:
    checkpoint = Checkpoint.of(tampered.verify_all())
    backend.execute("DELETE FROM events WHERE seq >= 5")
    backend.execute("DELETE FROM search_index WHERE seq >= 5")  # a careful forger's
    head_at(tampered, backend, 4)
    tampered.append("s1", conversation(turns=3)[1:], expected_version=4)  # seq 5..13, chained
    assert tampered.verify("s1").ok

    report = tampered.verify("s1", against=checkpoint)

    assert report.problems == (
        "its event 10 does not have the checkpoint's hash: history up to the checkpoint "
        "was rewritten",
    )


def test_a_session_the_checkpoint_names_that_is_gone_is_reported(
    tampered: SessionStore, backend: Backend
) -> None:
    checkpoint = Checkpoint.of(tampered.verify_all())
    backend.execute("DELETE FROM events")
    backend.execute("DELETE FROM sessions")

    [report] = tampered.verify_all(against=checkpoint)

    assert (report.session_id, report.ok) == ("s1", False)
    assert report.problems == ("the checkpoint has it at seq 10, but the store holds none of it",)


def test_a_session_grown_since_the_checkpoint_still_verifies_against_it(
    store: SessionStore,
) -> None:
    store.append("s1", conversation(turns=1), expected_version=0)
    checkpoint = Checkpoint.of(store.verify_all())
    store.append("s1", conversation(turns=2)[1:], expected_version=4)
    assert all(r.ok for r in store.verify_all(against=checkpoint))


@pytest.mark.parametrize(
    "text",
    ["", "[]", '{"format": "other"}', '{"format": "sessionstore-checkpoint", "heads": [1]}'],
)
def test_a_file_that_is_no_checkpoint_is_refused(text: str) -> None:
    with pytest.raises(InvalidCheckpoint, match=r"^not a checkpoint"):
        Checkpoint.loads(text)


def stored_body(backend: Backend, digest: str) -> tuple[int, str, bytes]:
    """The `blobs` row of `digest`: size, compression, data."""
    engine = backend.raw_engine()
    try:
        with engine.connect() as conn:
            row = conn.execute(
                sa.text("SELECT size, compression, data FROM blobs WHERE digest = :d"),
                {"d": digest},
            ).one()
    finally:
        engine.dispose()
    return int(row[0]), str(row[1]), bytes(row[2])


def test_bytes_appended_after_a_compressed_bodys_zlib_stream_fail_verify(
    store: SessionStore, backend: Backend
) -> None:
    """zlib stops at the end of its stream and ignores what follows: the body still reads as
    its text, with its digest, yet the row holds bytes nobody appended (room to smuggle data)."""
    s = store.create_session(model="m")
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="bash", input={"cmd": "make"})])
    output = "".join(f"{n:06d} compiling crate_{n % 97}\n" for n in range(4_000))
    s.append_tool_result("c1", output)
    digest = digest_of(output)
    size, compression, data = stored_body(backend, digest)
    assert (size, compression, zlib.decompress(data).decode()) == (len(output), "zlib", output)
    assert store.verify(s.id).ok
    backend.drop_body_guards()

    backend.execute(
        "UPDATE blobs SET data = :data WHERE digest = :d", data=data + b"smuggled", d=digest
    )

    assert zlib.decompress(stored_body(backend, digest)[2]).decode() == output  # zlib: fine
    report = store.verify(s.id)
    assert (report.ok, report.first_broken_seq) == (False, None)
    assert report.problems == (f"the body {digest} (event {s.version}) does not have its digest",)
    [event] = store.read(s.id, from_seq=s.version)  # a read still joins the text
    assert event.payload.message.parts[0].output == output  # type: ignore[attr-defined]


def test_a_compressed_body_that_inflates_past_its_size_fails_verify(
    store: SessionStore, backend: Backend
) -> None:
    """A row whose zlib stream inflates to more than the body's recorded size (a bomb, say)
    is refused: verify inflates at most one byte past that size to know."""
    s = store.create_session(model="m")
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="bash", input={"cmd": "make"})])
    output = "".join(f"{n:06d} compiling crate_{n % 97}\n" for n in range(4_000))
    s.append_tool_result("c1", output)
    digest = digest_of(output)
    backend.drop_body_guards()

    backend.execute(
        "UPDATE blobs SET data = :data WHERE digest = :d",
        data=zlib.compress(output.encode() + b"\0" * 50_000_000, 1),
        d=digest,
    )

    report = store.verify(s.id)
    assert report.problems == (f"the body {digest} (event {s.version}) does not have its digest",)


def test_a_redacted_body_stored_again_by_hand_with_other_text_fails_verify(
    store: SessionStore, backend: Backend
) -> None:
    """A redaction deletes a body; a body put back under its digest with other text would be
    read in its place, so it is checked as any other, whatever its history."""
    s = store.create_session(model="m")
    secret = s.append_user("my key is sk-LEAKED-0123456789").parts[0]
    s.append_assistant("noted")
    s.redact([secret.id], reason="leaked key")
    digest = digest_of("my key is sk-LEAKED-0123456789")
    assert store.verify(s.id).ok
    forged = "my key is nothing you need to know"

    backend.execute(
        "INSERT INTO blobs (session_id, digest, size, compression, data) "
        "VALUES (:s, :d, :n, 'none', :data)",
        s=s.id,
        d=digest,
        n=len(forged),
        data=forged.encode(),
    )

    report = store.verify(s.id)
    assert (report.ok, report.first_broken_seq) == (False, None)
    assert report.problems == (f"the body {digest} (event 2) does not have its digest",)


def test_a_redacted_body_appended_again_by_the_user_verifies(store: SessionStore) -> None:
    """The same text appended after its redaction is stored again, legitimately, under the same
    digest: verify checks its bytes and finds them whole."""
    s = store.create_session(model="m")
    first = s.append_user("the build log says error E0425").parts[0]
    s.redact([first.id], reason="not for the model")
    s.append_user("the build log says error E0425")

    report = store.verify(s.id)

    assert (report.ok, report.problems) == (True, ())
