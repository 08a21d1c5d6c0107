"""`verify` checks a session a page of events at a time; what it finds does not depend on where
the pages end. Each test runs with pages of two events (every check crosses pages: a body
referenced again pages later, a redaction pages after the text it deletes) and with the
default page, and expects the same report."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sessionstore import SessionStore
from sessionstore.events._bodies import digest_of
from sessionstore.log import _verify
from tests.conftest import Backend

SECRET = "sk-proj-Zq7LEAK9x"


@pytest.fixture(params=[2, _verify._PAGE], ids=["pages-of-2", "default-page"])
def paged(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(_verify, "_PAGE", request.param)
    yield request.param


def test_a_redaction_pages_after_its_text_takes_out_its_index_rows(
    store: SessionStore, backend: Backend, paged: int
) -> None:
    """The rows of a text a redaction deletes are expected up to the redaction, pages later,
    and again once the same text is appended after it."""
    s = store.create_session(model="m")
    secret = s.append_user(f"key {SECRET}").parts[0]  # 2
    s.append_user("first words")  # 3
    s.append_user("second words")  # 4
    s.append_user(f"key {SECRET}")  # 5: the same body
    s.redact([secret.id], reason="leak")  # 6
    s.append_user(f"key {SECRET}")  # 7: stored and indexed again
    assert store.verify(s.id).ok
    backend.execute("DELETE FROM search_index WHERE seq = 3")
    backend.execute(
        "INSERT INTO search_index (session_id, seq, part, chunk, role, event_type, digest, "
        "recorded_at, terms) SELECT session_id, 2, part, chunk, role, event_type, digest, "
        "recorded_at, terms FROM search_index WHERE session_id = :s AND seq = 7",
        s=s.id,
    )

    report = store.verify(s.id)

    assert report.problems == (
        "its search index rows are not those its events give: 1 missing (the first at event "
        "3), 1 that its events do not give (the first at event 2)",
    )


def test_a_body_referenced_on_several_pages_is_reported_once_at_its_first_event(
    store: SessionStore, backend: Backend, paged: int
) -> None:
    s = store.create_session(model="m")
    s.append_user("the same words")  # 2
    s.append_user("other words")  # 3
    s.append_user("more words")  # 4
    s.append_user("the same words")  # 5
    s.append_user("last words")  # 6
    digest = digest_of("the same words")
    backend.drop_body_guards()

    backend.execute(
        "UPDATE blobs SET data = :data WHERE digest = :d", data=b"the sane words", d=digest
    )

    report = store.verify(s.id)
    assert (report.first_broken_seq, report.bad_snapshots) == (None, ())
    assert report.problems == (f"the body {digest} (event 2) does not have its digest",)


def test_a_body_gone_from_several_pages_is_reported_once_and_stops_the_refold(
    store: SessionStore, backend: Backend, paged: int
) -> None:
    s = store.create_session(model="m")
    s.append_user("first words")  # 2
    s.append_user("the same words")  # 3
    s.append_user("other words")  # 4
    s.append_user("the same words")  # 5
    digest = digest_of("the same words")
    backend.drop_body_guards()

    backend.execute("DELETE FROM blobs WHERE session_id = :s AND digest = :d", s=s.id, d=digest)

    report = store.verify(s.id)
    assert report.problems == (
        f"event 3 references body {digest}, which is not stored and no redaction deleted",
        "its search index rows are not those its events give: 2 that its events do not give "
        "(the first at event 3)",
        f"its events cannot be folded to check its snapshots: event 3 of {s.id!r} references "
        f"body {digest}, which the store does not hold and no redaction deleted",
    )
