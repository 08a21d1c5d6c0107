"""A snapshot is a cache and is never trusted over the log.

An edited snapshot row is either refused on load (schema, digest, the event it stands at,
the header, the messages it may reference) and the fold starts from the log, or, where only
a fresh fold can tell (an attacker who recomputed the digest), `verify` names it. Malformed
rows never crash a resume, and deleting every snapshot changes no result at any fork depth.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import Session, SessionStore, ToolCall
from sessionstore.events import OutputsPruned, SessionStarted
from sessionstore.projections import Context
from sessionstore.projections._snapshot import snapshot_digest
from tests.builders import user
from tests.conftest import Backend, full_in_slow

State = dict[str, Any]
LEVELS_BY_DEFAULT = sys.getrecursionlimit() + 100
"""Fork levels in the default run: still deeper than a walk up the forks that recursed could go
(the slow set goes 10,000 deep on SQLite, 1,500 on PostgreSQL)."""
POSTGRES_LEVELS = {LEVELS_BY_DEFAULT: 200, 10_000: 1_500}
"""How deep the chain goes on PostgreSQL, for each count: there each fork is a commit the
server syncs (12 s for 1,100 on an idle machine, over a minute on a busy one), so the default
run goes 200 deep there, and the slow set past the recursion limit."""


def coding_session(store: SessionStore) -> Session:
    """System prompt, task, two tool calls (one output pruned); snapshots every 2 events."""
    s = store.create_session(model="gpt-4o", title="fix the bug")
    s.append_system("You are a careful coding agent.")
    s.append_user("Make the tests pass.")
    for n in range(2):
        s.append_assistant(tool_calls=[ToolCall(id=f"c{n}", name="read", input={"n": n})])
        s.append_tool_result(f"c{n}", output=f"contents of file {n}\n" * 50)
    first_output = s.context().messages[3].parts[0].id
    s.append_events(
        [OutputsPruned(part_ids=(first_output,), placeholder="[pruned]", tokens_freed=1)]
    )
    s.append_user("And now?")  # seq 9: the newest snapshot stands here
    return s


@pytest.fixture
def session(backend: Backend) -> Session:
    return coding_session(SessionStore(backend.url, snapshot_every=2))


def newest_snapshot(backend: Backend, session_id: str) -> tuple[int, State]:
    engine = backend.raw_engine()
    with engine.connect() as conn:
        seq, text = conn.execute(
            sa.text(
                "SELECT seq, CAST(state AS TEXT) FROM snapshots WHERE session_id = :s "
                "ORDER BY seq DESC LIMIT 1"
            ),
            {"s": session_id},
        ).one()
    engine.dispose()
    return seq, json.loads(text)


def store_snapshot(backend: Backend, session_id: str, seq: int, state: State | str) -> None:
    text = state if isinstance(state, str) else json.dumps(state)
    backend.execute(
        "UPDATE snapshots SET state = :state WHERE session_id = :s AND seq = :seq",
        state=text,
        s=session_id,
        seq=seq,
    )


def edit_newest(
    backend: Backend, session_id: str, edit: Callable[[State], None], *, redigest: bool
) -> int:
    """Edit the newest snapshot's state in place; recompute its digest as a forger would."""
    seq, state = newest_snapshot(backend, session_id)
    edit(state)
    if redigest:
        state["digest"] = snapshot_digest(state)
    store_snapshot(backend, session_id, seq, state)
    return seq


def resumed(backend: Backend, session_id: str) -> Context:
    return SessionStore(backend.url).session(session_id).context()


def drop_system_prompt(state: State) -> None:
    state["entries"] = state["entries"][1:]
    state["tokens"] -= 8  # what the system prompt counted


def unprune(state: State) -> None:
    state["pruned"] = {}


def change_model(state: State) -> None:
    state["header"]["model"] = "an-older-cheaper-model"


def drop_a_pin_reference(state: State) -> None:
    state["entries"][1][2] = 99_999  # the task now points at an event that is not there


EDITS = [drop_system_prompt, unprune, change_model, drop_a_pin_reference]


@pytest.mark.parametrize("edit", EDITS, ids=lambda f: f.__name__)
def test_a_snapshot_edited_by_hand_is_ignored_on_load(
    session: Session, backend: Backend, edit: Callable[[State], None], caplog: Any
) -> None:
    truth = session.context()
    edit_newest(backend, session.id, edit, redigest=False)

    with caplog.at_level(logging.WARNING, logger="sessionstore"):
        assert resumed(backend, session.id) == truth
        assert session.context(at=session.version) == truth
    assert "ignoring the snapshot" in caplog.text


@pytest.mark.parametrize("edit", [change_model, drop_a_pin_reference], ids=lambda f: f.__name__)
def test_a_forged_snapshot_the_log_contradicts_is_ignored_even_with_its_digest(
    session: Session, backend: Backend, edit: Callable[[State], None]
) -> None:
    truth = session.context()
    edit_newest(backend, session.id, edit, redigest=True)
    assert resumed(backend, session.id) == truth


def test_a_snapshot_cannot_pull_in_another_sessions_message(
    session: Session, backend: Backend, caplog: Any
) -> None:
    store = SessionStore(backend.url)
    other = store.create_session(title="someone else's")
    secret = other.append_user("someone else's secret")
    truth = session.context()

    def pull_in(state: State) -> None:
        state["sessions"].append(other.id)
        state["entries"].append([secret.id, len(state["sessions"]) - 1, 2, 0])
        state["tokens"] += secret.parts[0].tokens or 0

    seq = edit_newest(backend, session.id, pull_in, redigest=True)

    with caplog.at_level(logging.WARNING, logger="sessionstore"):
        assert resumed(backend, session.id) == truth
    assert f"references '{other.id}' seq 2, outside its history" in caplog.text
    [report] = [r for r in store.verify_all() if r.session_id == session.id]
    assert report.bad_snapshots == (
        (seq, "it differs from the fold at its seq in: digest, entries, sessions, tokens"),
    )


@pytest.mark.parametrize(
    ("edit", "fields"),
    [(drop_system_prompt, "digest, entries, tokens"), (unprune, "digest, pruned")],
    ids=["drop_system_prompt", "unprune"],
)
def test_verify_refolds_and_names_every_forged_snapshot(
    session: Session, backend: Backend, edit: Callable[[State], None], fields: str
) -> None:
    store = SessionStore(backend.url)
    assert store.verify(session.id).ok
    seq = edit_newest(backend, session.id, edit, redigest=True)

    report = store.verify(session.id)

    assert (report.ok, report.first_broken_seq, report.problems) == (False, None, ())
    assert report.bad_snapshots == ((seq, f"it differs from the fold at its seq in: {fields}"),)


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        ('{"entries": "garbage"}', "does not fit the snapshot schema"),
        ("deep", "not JSON: RecursionError"),
        ('"just a string"', "not a JSON object"),
    ],
    ids=["wrong-shape", "200000-deep", "not-an-object"],
)
def test_a_malformed_snapshot_never_crashes_a_resume(
    session: Session, backend: Backend, stored: str, why: str, caplog: Any
) -> None:
    truth = session.context()
    seq, _ = newest_snapshot(backend, session.id)
    if stored == "deep":  # PostgreSQL's JSONB itself refuses documents deeper than a few 1000
        depth = 200_000 if backend.name == "sqlite" else 5_000
        stored = "[" * depth + "]" * depth
    store_snapshot(backend, session.id, seq, stored)

    with caplog.at_level(logging.WARNING, logger="sessionstore"):
        assert resumed(backend, session.id) == truth
    assert why in caplog.text
    [(bad_seq, reason)] = SessionStore(backend.url).verify(session.id).bad_snapshots
    assert bad_seq == seq and why in reason


@full_in_slow("levels", default=LEVELS_BY_DEFAULT, full=10_000)
def test_a_fork_10000_levels_deep_resumes_with_every_snapshot_deleted(
    backend: Backend, levels: int
) -> None:
    depth = POSTGRES_LEVELS[levels] if backend.name == "postgresql" else levels
    store = SessionStore(backend.url)
    root = store.create_session(title="root")
    root.append_user("the original task")
    parent, parent_seq, parent_hash = root.id, 2, root._fold.hash
    for level in range(depth):
        child = f"fork-{level}"
        [_, said] = store.append(
            child,
            [
                SessionStarted(
                    parent_session_id=parent, parent_seq=parent_seq, parent_hash=parent_hash
                ),
                user(f"level {level}"),
            ],
            expected_version=0,
        )
        parent, parent_seq, parent_hash = child, said.seq, said.hash
    backend.execute("DELETE FROM snapshots")

    leaf = SessionStore(backend.url).session(parent)

    texts = [m.parts[0].text for m in leaf.context().messages]  # type: ignore[union-attr]
    assert texts == ["the original task", *(f"level {n}" for n in range(depth))]
    assert leaf.context(at=1).messages == leaf.context().messages[:-1]
    assert store.verify(parent).ok
