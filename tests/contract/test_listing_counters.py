"""The counters a listing shows live on the `sessions` row, written with each write: they equal
a fresh fold of the session's events after anything that writes (appends, compactions,
prunes, undos, forks, raw appends, imports, redactions), on every backend; `verify` catches a
row whose counters were changed; a database at 0003 upgrades with them filled in; keyset
pages concatenate to the whole listing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore, ToolCall, Usage
from sessionstore.log._replay import load_fold
from sessionstore.storage._migrate import alembic_config
from tests.builders import compaction, conversation
from tests.conftest import Backend


def fresh_counters(store: SessionStore, session_id: str) -> tuple[int, int, int | None]:
    """(live tokens, compactions, window) as a fold of every event finds them, no snapshot."""
    head = store.version(session_id)
    fold = load_fold(store._recorder, session_id, head, use_snapshots=False).fold
    compactions = sum(e.type == "ContextCompacted" for e in store.read(session_id))
    assert fold.header is not None
    return fold.tokens, compactions, fold.header.context_window


def row_counters(store: SessionStore, session_id: str) -> tuple[int | None, int, int | None]:
    info = store.session_info(session_id)
    return info.live_tokens, info.compactions, info.context_window


def assert_counted(store: SessionStore, session_id: str) -> None:
    assert row_counters(store, session_id) == fresh_counters(store, session_id)
    [summary] = store.summaries(session_id)
    fresh = fresh_counters(store, session_id)
    assert (summary.live_tokens, summary.compactions, summary.context_window) == fresh
    assert store.verify(session_id).ok


def worked_session(store: SessionStore) -> str:
    s = store.create_session(model="m", context_window=50_000, title="work")
    s.append_system("You are a coding agent.")
    s.append_user("Make the tests pass.")
    for n in range(4):
        s.append_assistant(
            f"Step {n}.",
            tool_calls=[ToolCall(id=f"c{n}", name="read", input={"path": f"m{n}.py"})],
            usage=Usage(input=100 * n, output=20),
        )
        s.append_tool_result(f"c{n}", output=f"line {n}\n" * 400)
    return s.id


def test_the_row_counts_what_a_fold_finds_after_each_kind_of_write(store: SessionStore) -> None:
    session_id = worked_session(store)
    assert_counted(store, session_id)
    s = store.session(session_id)
    s.append_user("next")
    messages = s.context().messages
    last_user = max(n for n, m in enumerate(messages) if m.role == "user")
    replaced = tuple(m.id for m in messages[:last_user] if m.role != "system")
    s.append_events([compaction("So far.", messages[last_user].id, replaced)])
    assert_counted(store, session_id)
    assert store.session_info(session_id).compactions == 1
    compacted_at = s.version
    s.undo(compacted_at)  # the compaction's messages come back: the tokens with them
    assert_counted(store, session_id)
    s.append_user("again")
    s.pop()
    assert_counted(store, session_id)
    s.clear(reason="fresh start")
    assert store.session_info(session_id).live_tokens == 0
    assert_counted(store, session_id)


def test_prunes_restores_and_redactions_are_counted(store: SessionStore) -> None:
    session_id = worked_session(store)
    s = store.session(session_id)
    s.configure(minimum_prune=1, minimum_prune_ratio=0, keep_tool_results=1, protect_turns=0)
    s.append_user("u2")
    s.append_user("u3")
    before = store.session_info(session_id).live_tokens
    assert s.prune() is not None
    assert store.session_info(session_id).live_tokens != before
    assert_counted(store, session_id)
    s.restore()
    assert_counted(store, session_id)
    part = s.context().messages[1].parts[0]
    s.redact([part.id], reason="secret")
    assert_counted(store, session_id)


def test_forks_raw_appends_and_imports_are_counted(store: SessionStore) -> None:
    session_id = worked_session(store)
    fork = store.fork(session_id, at=6)
    assert_counted(store, fork.id)
    fork.append_user("on the fork")
    assert_counted(store, fork.id)
    store.append("raw", conversation(turns=3), expected_version=0)
    assert_counted(store, "raw")
    store.append("raw", conversation(turns=2)[1:], expected_version=store.version("raw"))
    assert_counted(store, "raw")
    chat = json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    imported = store.import_session(chat, format="openai")
    assert_counted(store, imported.id)
    exported = list(store.export_session("raw"))
    with SessionStore("memory://") as other:
        other.import_session(exported)
        assert_counted(other, "raw")
        assert row_counters(other, "raw") == row_counters(store, "raw")


def test_a_redacted_parent_leaves_its_forks_counted_again(store: SessionStore) -> None:
    session_id = worked_session(store)
    fork = store.fork(session_id)
    fork.append_user("more")
    parent = store.session(session_id)
    part = parent.context().messages[1].parts[0]
    parent.redact([part.id], reason="secret")
    assert store.session_info(fork.id).live_tokens is None  # counted again by a listing
    [summary] = store.summaries(fork.id)
    assert summary.live_tokens == fresh_counters(store, fork.id)[0]
    assert store.verify(fork.id).ok


def test_verify_names_a_counter_that_does_not_match_the_events(
    store: SessionStore, backend: Backend
) -> None:
    session_id = worked_session(store)
    tokens, _, _ = fresh_counters(store, session_id)
    backend.execute(
        "UPDATE sessions SET live_tokens = live_tokens + 7, compactions = 3, "
        "context_window = 9 WHERE id = :id",
        id=session_id,
    )
    report = store.verify(session_id)
    assert report.problems == (
        "the sessions row has context_window 9, but SessionStarted recorded 50000",
        "the sessions row counts 3 compactions, but its events hold 0",
        f"the sessions row has {tokens + 7:,} live tokens, but a fold of its events finds "
        f"{tokens:,}",
    )


def test_a_database_at_0003_upgrades_with_its_counters_filled_in(backend: Backend) -> None:
    if backend.name == "memory":
        pytest.skip("not on memory: a memory database is always at the schema's head")
    with SessionStore(backend.url) as store:
        session_id = worked_session(store)
        s = store.session(session_id)
        messages = s.context().messages
        s.append_events([compaction("So far.", messages[-2].id, (messages[1].id,))])
        store.append("raw", conversation(turns=2), expected_version=0)
        expected = {i: fresh_counters(store, i) for i in (session_id, "raw")}
    config = alembic_config(backend.url)
    command.downgrade(config, "0003")
    command.upgrade(config, "head")  # by hand: the revisions alone
    with SessionStore(backend.url, migrate=False) as store:
        for session_id, (tokens, compactions, window) in expected.items():
            # the revision counts compactions and reads the window; live tokens are the fold's
            assert row_counters(store, session_id) == (None, compactions, window)
            [summary] = store.summaries(session_id)  # folded for the listing, not written
            assert (summary.live_tokens, summary.compactions) == (tokens, compactions)
            assert store.verify(session_id).ok
            assert store.session_info(session_id).live_tokens is None
        store.session("raw").append_user("after the upgrade")  # a write counts again
        assert_counted(store, "raw")


def test_a_store_that_upgrades_from_0003_counts_every_session(backend: Backend) -> None:
    if backend.name == "memory":
        pytest.skip("not on memory: a memory database is always at the schema's head")
    with SessionStore(backend.url) as store:
        ids = [worked_session(store) for _ in range(3)]
        expected = {i: fresh_counters(store, i) for i in ids}
    command.downgrade(alembic_config(backend.url), "0003")
    with SessionStore(backend.url) as store:  # migrates, then counts
        assert {i: row_counters(store, i) for i in ids} == expected
        assert all(store.verify(i).ok for i in ids)


START = datetime(2026, 1, 1, tzinfo=UTC)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    minutes=st.lists(st.integers(0, 3), min_size=1, max_size=9),
    page=st.integers(1, 4),
    touched=st.sets(st.integers(0, 8), max_size=3),
)
def test_keyset_pages_concatenate_to_the_listing_without_repeats(
    backend: Backend, minutes: list[int], page: int, touched: set[int]
) -> None:
    """Sessions updated at few distinct times (ties broken by id); pages read after the last
    of the page before give the whole listing, and appends between pages repeat nothing and
    lose no session they did not touch."""
    now = [START]
    store = SessionStore(backend.url, clock=lambda: now[0])
    try:
        base = len(store.sessions())
        ids = []
        for n, minute in enumerate(minutes):
            now[0] = START + timedelta(minutes=minute)
            ids.append(store.create_session(session_id=f"k{base + n:04d}").id)
        whole = store.sessions()
        pages = []
        after = None
        while True:
            got = store.sessions(limit=page, after=after)
            pages.extend(got)
            if len(got) < page:
                break
            after = got[-1]
        assert pages == whole

        moved = {ids[i] for i in touched if i < len(ids)}
        seen: list[str] = []
        after = None
        while True:
            got = store.sessions(limit=page, after=after)
            seen.extend(info.id for info in got)
            for session_id in moved:  # another writer, between two pages
                now[0] += timedelta(seconds=1)
                store.session(session_id).append_user("moved")
            if len(got) < page:
                break
            after = got[-1]
        assert len(seen) == len(set(seen))
        assert {info.id for info in whole} - moved <= set(seen)
    finally:
        store.close()
