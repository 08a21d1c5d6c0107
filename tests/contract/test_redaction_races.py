"""Redaction under concurrency: whatever the interleaving, an acknowledged append keeps its
content, no row of a redacted body is left, and a purge covers every message up to
the event it commits after.

Each test races two threads on two stores (two engines, as two processes would have) for
several hundred iterations in the slow set (twenty in the default run), each on a fresh text
(or a fresh session), and checks every iteration. The races are real ones on the database: no
part of the store is replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa

from sessionstore import ConcurrencyError, SessionStore
from sessionstore.events import ContentRedacted, MessageAppended, RecordedEvent, TextPart
from tests.builders import started, user
from tests.conftest import Backend, full_in_slow

T = TypeVar("T")
U = TypeVar("U")

ITERATIONS = 300
"""Races per test and backend in the slow set (`-m slow`): on the loaded 2-core CI machine
each test stays within about 30 s per backend, and before the fixes each caught its defect
many times over (the report of the change gives the figures)."""
RACES_BY_DEFAULT = 20
"""Races per test and backend in the default run: each test still races on every run."""
SESSION_TURNS = 20
"""Races run in one session (or pair) before the next starts: a redaction reads its
session's events and every session's row, so neither may grow with the iterations."""
REDACTION_MS = 8
"""About how long a redaction of a fresh session takes here, reading included: the append
starts up to this much later, so that it often lands inside the redaction's write."""


def at_once(
    first: Callable[[], T], second: Callable[[], U], *, second_after_ms: float = 0.0
) -> tuple[T, U]:
    """Run both at the same moment on two threads (released by one barrier), the second a
    random 0 to `second_after_ms` later (spreading its start over the first's work, so that
    its write lands in the first's transaction often); their results, or the first error
    either raised."""
    barrier = threading.Barrier(2)
    results: list[object] = [None, None]
    errors: list[BaseException] = []
    delays = (0.0, random.uniform(0.0, second_after_ms / 1000))

    def run(index: int, call: Callable[[], object]) -> None:
        barrier.wait()
        if delays[index]:
            time.sleep(delays[index])
        try:
            results[index] = call()
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(0, first)),
        threading.Thread(target=run, args=(1, second)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results[0], results[1]  # type: ignore[return-value]


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stored_digests(backend: Backend) -> set[str]:
    """The digest of every body row, whichever session holds it."""
    engine = backend.raw_engine()
    try:
        with engine.connect() as conn:
            return {str(row[0]) for row in conn.execute(sa.text("SELECT digest FROM blobs"))}
    finally:
        engine.dispose()


def text_of(event: RecordedEvent) -> str:
    assert isinstance(event.payload, MessageAppended)
    part = event.payload.message.parts[0]
    assert isinstance(part, TextPart)
    return part.text


@full_in_slow("iterations", default=RACES_BY_DEFAULT, full=ITERATIONS)
def test_an_append_racing_a_redaction_of_the_same_text_keeps_its_content(
    backend: Backend, iterations: int
) -> None:
    """Session A redacts its part holding a fresh text while session B appends a message
    holding the same text: B's append returns, so B holds the text, whichever ran first.
    (Before the fix, on PostgreSQL, the redaction deleted the body B's uncommitted append
    had just referenced, and B could no longer be read.)"""
    with SessionStore(backend.url) as first, SessionStore(backend.url) as second:
        appending = second.create_session(model="m").id
        lost: list[int] = []
        for iteration in range(iterations):
            if iteration % SESSION_TURNS == 0:
                redacting = first.create_session(model="m")
            text = f"shared secret {iteration} of the append race"
            part = redacting.append_user(text).parts[0].id
            _, (appended,) = at_once(
                lambda: redacting.redact([part], reason="leaked"),  # noqa: B023
                lambda: second.append(appending, [user(text)], expected_version=None),  # noqa: B023
                second_after_ms=REDACTION_MS,
            )
            try:
                [read] = first.read(appending, appended.seq, appended.seq)
            except Exception:
                lost.append(iteration)
                continue
            assert text_of(read) == text
        assert lost == [], f"{len(lost)} of {iterations} acknowledged appends lost their content"
        assert first.verify(appending).ok
        assert first.verify(redacting.id).ok
        assert [m.parts[0].text for m in first.session(appending).context().messages] == [  # type: ignore[union-attr]
            f"shared secret {i} of the append race" for i in range(iterations)
        ]


@full_in_slow("iterations", default=RACES_BY_DEFAULT, full=ITERATIONS)
def test_two_sessions_redacting_one_shared_body_at_once_delete_it(
    backend: Backend, iterations: int
) -> None:
    """Two sessions hold the same fresh text and redact it at the same moment: afterwards no
    row of it is left (a secret with no owner, which no later redaction could reach). (Before
    a fix, on PostgreSQL, each saw the other's reference to the one row they shared and
    neither deleted it; since revision 0008 each deletes its own row.)"""
    with SessionStore(backend.url) as first, SessionStore(backend.url) as second:
        secrets: set[str] = set()
        for iteration in range(iterations):
            if iteration % SESSION_TURNS == 0:
                one = first.create_session(model="m")
                other = second.create_session(model="m")
            text = f"shared secret {iteration} of the redaction race"
            secrets.add(digest_of(text))
            part_of_one = one.append_user(text).parts[0].id
            part_of_other = other.append_user(text).parts[0].id
            redacted = at_once(
                lambda: one.redact([part_of_one], reason="leaked"),  # noqa: B023
                lambda: other.redact([part_of_other], reason="leaked"),  # noqa: B023
            )
            assert [event is not None for event in redacted] == [True, True]
        left = secrets & stored_digests(backend)
        assert not left, f"{len(left)} of {iterations} redacted secrets left in the database"
        assert first.verify(one.id).ok
        assert first.verify(other.id).ok


PURGES = 200


@full_in_slow("iterations", default=RACES_BY_DEFAULT, full=PURGES)
def test_a_purge_covers_every_message_appended_before_its_event(
    backend: Backend, iterations: int
) -> None:
    """A purge racing an appender on the same session: every message before the purge's
    `ContentRedacted` event is redacted, whichever committed first. (Before the fix the purge
    planned from the head it read and appended after whatever the head had become, leaving
    the messages written in between, on every backend.)"""
    with SessionStore(backend.url) as purging, SessionStore(backend.url) as appending:
        missed: list[int] = []
        for iteration in range(iterations):
            session_id = f"purged-{iteration}"
            purging.append(session_id, [started(), user(f"first {iteration}")], expected_version=0)
            event, _ = at_once(
                lambda: purging.purge(session_id),  # noqa: B023
                lambda: appending.append(
                    session_id,  # noqa: B023
                    [user(f"second {iteration}")],  # noqa: B023
                    expected_version=None,
                ),
            )
            assert event is not None
            before = purging.read(session_id, 1, event.seq)
            redacted = {
                part_id
                for e in before
                if isinstance(e.payload, ContentRedacted)
                for part_id in e.payload.part_ids
            }
            written = {
                part.id
                for e in before
                if isinstance(e.payload, MessageAppended)
                for part in e.payload.message.parts
            }
            if not written <= redacted:
                missed.append(iteration)
        assert missed == [], f"{len(missed)} of {iterations} purges missed a message before them"


def snapshots_holding(backend: Backend, session_id: str, text: str) -> list[int]:
    """The seqs of the session's stored snapshots whose JSON holds `text`."""
    engine = backend.raw_engine()
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT seq, state FROM snapshots WHERE session_id = :id ORDER BY seq"),
                {"id": session_id},
            )
            return [int(seq) for seq, state in rows if text in str(state)]
    finally:
        engine.dispose()


def test_a_snapshot_folded_before_a_purge_is_not_stored_after_it(backend: Backend) -> None:
    """The purge forgot the session's snapshots; a fold read before it (a writer's, saving
    the snapshot its append made due) comes late: it is not stored, since it holds the
    state's value by value."""
    with SessionStore(backend.url, snapshot_every=1000) as store:
        session = store.create_session(model="m")
        session.update_state({"key": "a state value the purge deletes"})
        session.append_user("hello")
        folded_before = session._fold
        assert store.purge(session.id) is not None

        store._log.save_snapshot(folded_before)

        assert snapshots_holding(backend, session.id, "the purge deletes") == []
        assert store.verify(session.id).ok


@full_in_slow("iterations", default=RACES_BY_DEFAULT, full=PURGES)
def test_no_snapshot_left_holds_a_state_value_a_racing_purge_deleted(
    backend: Backend, iterations: int
) -> None:
    """A writer whose every append saves a snapshot (the state in it by value) races a purge
    of its session: afterwards no snapshot holds the purged value, whichever ran first."""
    with (
        SessionStore(backend.url, snapshot_every=1) as writing,
        SessionStore(backend.url) as purging,
    ):
        kept: list[int] = []
        for iteration in range(iterations):
            secret = f"purged state value {iteration}"
            session = writing.create_session(model="m")
            session.update_state({"key": secret})

            def append() -> None:
                # ConcurrencyError: the purge came first, and this handle is behind it
                with contextlib.suppress(ConcurrencyError):
                    session.append_user("more")  # noqa: B023

            at_once(
                lambda: purging.purge(session.id),  # noqa: B023
                append,
                second_after_ms=REDACTION_MS,
            )
            if snapshots_holding(backend, session.id, secret):
                kept.append(iteration)
        assert kept == [], f"{len(kept)} of {iterations} purges left a snapshot holding it"
