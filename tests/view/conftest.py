"""A small fixed session for the view's tests: every kind of event the curve marks (a
compaction, a truncation, a prune, a restore, a revert), hostile text in a request and an
output, usage on a turn, and a fork; fixed ids and times, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sessionstore import Session, SessionStore
from sessionstore.events import Message, ReasoningPart, TextPart, Usage, seeded_ids
from tests.cli.conftest import READ_OUTPUT, START, build_session, call, fixed_clock, text
from tests.conftest import Backend, create_schema

HOSTILE = '</script><script>window.hacked=1</script><img src=x onerror="window.hacked=2">&amp;'
"""Session text that would run, or read as markup, were it not escaped."""


def build_view_session(store: SessionStore) -> Session:
    """`s1` of the command line's tests, then a compaction, a truncated output, a prune and
    its restore, a pin, a revert; and a fork of it at event 12."""
    with seeded_ids(7, START):
        s = build_session(store)
        s.compact(keep_turns=1)
        s.configure(max_lines=12)
        s.append_message(text("u3", "user", "Now add a test. " + HOSTILE))
        s.append_message(call("a5", "c3", "read", '{"path":"test_parser.py"}'))
        s.append_tool_result("c3", READ_OUTPUT + HOSTILE)
        thinking = ReasoningPart(id="a6.r", text="The test must cover empty input.")
        answer = TextPart(id="a6.t", text="Read it.")
        usage = Usage(input=300, cache_read=100, cache_write=0, output=20)
        s.append_message(Message(id="a6", role="assistant", parts=(thinking, answer), usage=usage))
        s.append_message(text("u4", "user", "Go on."))
        s.append_message(text("a7", "assistant", "Done."))
        s.prune()
        s.restore()
        s.pin("u3")
        s.append_message(text("u5", "user", "Undo that."))
        s.revert("a7")
        store.fork("s1", at=12, title="try another way")
    return s


@pytest.fixture(params=["sqlite", "postgresql"])
def view_store(request: pytest.FixtureRequest) -> Iterator[SessionStore]:
    """A store on SQLite or PostgreSQL holding `build_view_session`'s sessions."""
    name = "postgres_backend" if request.param == "postgresql" else "sqlite_backend"
    backend: Backend = request.getfixturevalue(name)
    create_schema(backend)
    with SessionStore(backend.url, clock=fixed_clock()) as store:
        build_view_session(store)
        yield store
