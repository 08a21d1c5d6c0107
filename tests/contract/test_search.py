"""Full-text search across sessions, on every backend: what is found, in which order, with which
excerpt, through which filters; what a redaction or a purge leaves in the index (nothing of
what it deleted); a fork's inherited events found once; a database of revision 0004 indexed by
its upgrade."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from sessionstore import InvalidArgument, InvalidSearchQuery, SearchHit, SessionStore, ToolCall
from sessionstore.events import MessageAppended
from sessionstore.storage._memory import database_named
from sessionstore.storage._migrate import alembic_config
from tests.builders import compaction
from tests.conftest import Backend

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
SECRET = "sk-proj-Zq7LEAK9x"
SECRET_WORD = "zq7leak9x"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLAUDE_CODE_SESSION = "claude-code-3c9e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10"
"""The secret's word as the index keeps it (folded)."""


def ticking() -> Iterator[datetime]:
    return (T0 + timedelta(seconds=n) for n in itertools.count())


@pytest.fixture
def opened(backend: Backend) -> Iterator[SessionStore]:
    """A store on the backend whose clock moves a second a call: hits in a known order."""
    times = ticking()
    with SessionStore(backend.url, clock=lambda: next(times)) as store:
        yield store


def found(hits: list[SearchHit]) -> list[tuple[str, int, str | None, str, str]]:
    return [(h.title, h.seq, h.role, h.kind, h.marked) for h in hits]


def test_words_are_found_in_messages_tool_calls_outputs_and_summaries_newest_first(
    opened: SessionStore,
) -> None:
    fix = opened.create_session(title="fix migrations", app="cli", user="ana", tags=["db"])
    fix.append_user("How do I run the Alembic upgrade on sessions.db?")
    fix.append_assistant(
        "Let me check.", tool_calls=[ToolCall(id="c1", name="bash", input={"cmd": "alembic heads"})]
    )
    fix.append_tool_result("c1", "0004 (head)\nINFO  [alembic.runtime] done")
    other = opened.create_session(title="write docs", app="web", user="bo")
    other.append_user("Document the upgrade path; alembic is not needed here")
    assert found(opened.search("alembic")) == [
        (
            "write docs",
            2,
            "user",
            "text",
            "Document the upgrade path; [alembic] is not needed here",
        ),
        ("fix migrations", 4, "tool", "tool_result", "0004 (head) INFO [[alembic].runtime] done"),
        ("fix migrations", 3, "assistant", "tool_call", 'bash {"cmd":"[alembic] heads"}'),
        ("fix migrations", 2, "user", "text", "How do I run the [Alembic] upgrade on sessions.db?"),
    ]
    (hit,) = opened.search("sessions db")
    assert (hit.session_id, hit.seq, hit.event_type) == (fix.id, 2, "MessageAppended")
    assert hit.recorded_at == T0 + timedelta(seconds=1)
    (asked,) = opened.read(fix.id, 2, 2)
    assert isinstance(asked.payload, MessageAppended)
    assert hit.part_id == asked.payload.message.parts[0].id
    assert (hit.excerpt, hit.matches) == (
        "How do I run the Alembic upgrade on sessions.db?",
        ((36, 44), (45, 47)),
    )
    summary = compaction("We fixed the ALEMBIC head; next: docs", "m", ["x"])
    fix.append_events([summary])
    (newest, *_) = opened.search("alembic")
    assert (newest.seq, newest.kind, newest.role, newest.event_type) == (
        5, "summary", "user", "ContextCompacted",
    )  # fmt: skip


def test_a_query_is_words_all_of_which_occur_and_quoted_words_in_order(
    opened: SessionStore,
) -> None:
    s = opened.create_session(title="t")
    s.append_user("upgrade the head revision")
    s.append_user("head of the upgrade queue")
    s.append_user("Café NAÏVE session_id")
    assert [h.seq for h in opened.search("upgrade head")] == [3, 2]
    assert [h.seq for h in opened.search('"upgrade the head"')] == [2]
    assert [h.seq for h in opened.search('"head upgrade"')] == []
    assert [h.seq for h in opened.search("upgrade queue")] == [3]
    assert [h.seq for h in opened.search("cafe naive")] == [4]
    assert [h.seq for h in opened.search("SESSION_ID")] == [4]
    assert [h.seq for h in opened.search("session id")] == [4]
    assert [h.seq for h in opened.search("id session")] == [4]  # two words, not a phrase
    assert [h.seq for h in opened.search("OR AND NOT * ( upgrade")] == []
    assert [h.seq for h in opened.search("upgrade -head")] == [3, 2]  # no syntax: `-` separates
    assert opened.search("revisions") == []  # a word, not a stem


@pytest.mark.parametrize("query", ["", "   ", "?!", '""', "-- ... //"])
def test_a_query_without_words_is_refused(opened: SessionStore, query: str) -> None:
    with pytest.raises(InvalidSearchQuery, match="holds no word to search for"):
        opened.search(query)


def test_arguments_are_checked(opened: SessionStore) -> None:
    with pytest.raises(InvalidSearchQuery, match="at most 32 words"):
        opened.search(" ".join(f"w{n}" for n in range(33)))
    with pytest.raises(InvalidArgument, match="timezone-aware"):
        opened.search("x", since=datetime(2026, 1, 1))
    with pytest.raises(InvalidArgument, match="limit"):
        opened.search("x", limit=0)
    with pytest.raises(InvalidArgument, match="role"):
        opened.search("x", role="robot")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="query"):
        opened.search(None)  # type: ignore[arg-type]


def test_filters_by_app_user_tag_role_time_and_limit(opened: SessionStore) -> None:
    a = opened.create_session(title="a", app="cli", user="ana", tags=["db", "x"])
    a.append_user("deploy the api")  # at T0+1s
    b = opened.create_session(title="b", app="web", user="bo", tags=["db"])
    b.append_user("deploy the web")  # T0+3s
    b.append_assistant("deploy done")  # T0+4s
    assert [h.title for h in opened.search("deploy")] == ["b", "b", "a"]
    assert [h.title for h in opened.search("deploy", app="cli")] == ["a"]
    assert [h.title for h in opened.search("deploy", user="bo")] == ["b", "b"]
    assert [h.title for h in opened.search("deploy", tag="x")] == ["a"]
    assert [h.title for h in opened.search("deploy", tag="db")] == ["b", "b", "a"]
    assert [h.seq for h in opened.search("deploy", role="assistant")] == [3]
    since = T0 + timedelta(seconds=3)
    assert [(h.title, h.seq) for h in opened.search("deploy", since=since)] == [
        ("b", 3),
        ("b", 2),
    ]
    later = since.astimezone(timezone(timedelta(hours=5)))  # any zone: the same moment
    assert len(opened.search("deploy", since=later)) == 2
    assert [(h.title, h.seq) for h in opened.search("deploy", limit=1)] == [("b", 3)]


def test_the_original_of_a_truncated_output_is_searchable(opened: SessionStore) -> None:
    s = opened.create_session(title="logs")
    s.append_assistant("", tool_calls=[ToolCall(id="c1", name="bash", input={"cmd": "make"})])
    lines = [f"line {n} ok" for n in range(3000)]
    lines[2900] = "line 2900 segfault in libfoo"
    result = s.append_tool_result("c1", "\n".join(lines))
    assert "segfault" not in result.parts[0].shown  # type: ignore[union-attr]
    (hit,) = opened.search("segfault libfoo")
    assert (hit.seq, hit.kind) == (3, "tool_result")
    around = " ".join(f"line {n} ok" for n in range(2901, 2910))
    assert hit.marked == (
        f"…2896 ok line 2897 ok line 2898 ok line 2899 ok line 2900 [segfault] in [libfoo] "
        f"{around} line 29…"
    )


def index_holdings(backend: Backend) -> str:
    """Everything the search index holds, as text: SQLite's rows, the FTS5 index's terms and
    the database's files; PostgreSQL's rows (their `tsvector`s as text); a memory store's
    rows."""
    if backend.name == "memory":
        database = database_named(str(sa.make_url(backend.url).host))
        with database.lock:
            return repr(database.index)
    whole_rows = "t::text" if backend.name == "postgresql" else "*"
    engine = backend.raw_engine()
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(f"SELECT {whole_rows} FROM search_index t"))
            held = "\n".join(str(tuple(row)) for row in rows)
    finally:
        engine.dispose()
    if backend.name == "sqlite":
        path = Path(sa.make_url(backend.url).database or "")
        with sqlite3.connect(path) as raw:
            raw.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, search_fts, row)")
            held += "\n" + " ".join(term for (term,) in raw.execute("SELECT term FROM terms"))
        raw.close()
        files = [p for p in path.parent.iterdir() if p.name.startswith(path.name)]
        held += "\n" + b"".join(p.read_bytes() for p in files).decode("latin-1")
    return held


def test_a_redaction_takes_the_text_out_of_the_index(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        s = store.create_session(title="keys")
        leaked = s.append_user(f"my key is {SECRET}, use it for the deploy")
        kept = store.create_session(title="kept")
        copy = kept.append_user(f"another copy: {SECRET}")
        assert len(store.search(SECRET_WORD)) == 2
        assert SECRET_WORD in index_holdings(backend)
        s.redact([leaked.parts[0].id], reason="leaked key")
        assert [h.title for h in store.search(SECRET_WORD)] == ["kept"]
        assert store.search("deploy") == []
        kept.redact([copy.parts[0].id], reason="leaked key")
        assert store.search(SECRET_WORD) == []
        held = index_holdings(backend)
        assert SECRET_WORD not in held.lower()
        assert "Zq7LEAK9x" not in held
        s.append_user("the deploy works now")  # the index goes on after a redaction
        assert [h.seq for h in store.search("deploy")] == [4]


def test_a_redaction_before_any_search_takes_the_text_out_of_the_index(backend: Backend) -> None:
    """On SQLite the rows of recent appends wait to be indexed (revision 0006) until a search
    or the 64th row: a redaction of one still waiting must leave nothing of it either."""
    with SessionStore(backend.url) as store:
        s = store.create_session(title="keys")
        leaked = s.append_user(f"my key is {SECRET}, use it for the deploy")
        s.append_user("the deploy waits")
        s.redact([leaked.parts[0].id], reason="leaked key")
        held = index_holdings(backend)
        assert SECRET_WORD not in held.lower()
        assert "Zq7LEAK9x" not in held
        assert [h.seq for h in store.search("deploy")] == [3]
        assert store.search(SECRET_WORD) == []


def test_a_purge_removes_the_sessions_index_rows(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        gone = store.create_session(title="gone")
        gone.append_user("purge me: tangerine")
        gone.append_assistant("", tool_calls=[ToolCall(id="c", name="grep", input={"q": "x"})])
        gone.append_tool_result("c", "tangerine found")
        stays = store.create_session(title="stays")
        stays.append_user("tangerine too")
        store.purge(gone.id)
        assert [h.title for h in store.search("tangerine")] == ["stays"]
        assert store.search("purge") == []
        assert store.search("grep") == []
        if backend.name != "memory":
            engine = backend.raw_engine()
            with engine.connect() as conn:
                left = conn.execute(
                    sa.text("SELECT count(*) FROM search_index WHERE session_id = :s"),
                    {"s": gone.id},
                ).scalar_one()
            engine.dispose()
            assert left == 0


def test_a_forks_inherited_events_are_found_once_under_the_parent(opened: SessionStore) -> None:
    parent = opened.create_session(title="parent")
    parent.append_user("the plan: rewrite the parser")
    fork = opened.fork(parent.id, title="fork")
    fork.append_user("in the fork: rewrite the lexer")
    assert [(h.title, h.seq) for h in opened.search("rewrite")] == [("fork", 2), ("parent", 2)]
    assert [h.session_id for h in opened.search("parser")] == [parent.id]


def test_a_text_redacted_then_appended_again_is_found_where_it_is_held_again(
    opened: SessionStore,
) -> None:
    s = opened.create_session(title="t")
    message = s.append_user(f"first {SECRET}")
    s.redact([message.parts[0].id], reason="leak")
    s.append_user(f"again {SECRET}")  # the same text, appended after: held, and found again
    assert [h.seq for h in opened.search(SECRET_WORD)] == [4]
    assert opened.search("first") == []


def test_a_database_at_0004_is_indexed_by_its_upgrade(backend: Backend) -> None:
    if backend.name == "memory":
        pytest.skip("not on memory: a memory database has no schema to migrate")
    with SessionStore(backend.url) as store:
        s = store.create_session(title="old")
        s.append_user("before the index: marmalade")
        s.append_assistant("", tool_calls=[ToolCall(id="c", name="cat", input={"f": "jam.txt"})])
        s.append_tool_result("c", "orange marmalade recipe " * 100)
        secret = s.append_user(f"and {SECRET}")
        s.redact([secret.parts[0].id], reason="leak")
        before = [(h.seq, h.kind, h.marked) for h in store.search("marmalade")]
    assert [(seq, kind) for seq, kind, _ in before] == [(4, "tool_result"), (2, "text")]
    assert before[1][2] == "before the index: [marmalade]"
    config = alembic_config(backend.url)
    command.downgrade(config, "0004")
    command.upgrade(config, "head")
    with SessionStore(backend.url, migrate=False) as store:
        assert [(h.seq, h.kind, h.marked) for h in store.search("marmalade")] == before
        assert [h.seq for h in store.search("jam txt")] == [3]
        assert store.search(SECRET_WORD) == []
        s = store.session(s.id)
        s.append_user("after the index: marmalade")
        assert [h.seq for h in store.search("marmalade")] == [7, 4, 2]


def test_an_imported_transcript_is_searchable(opened: SessionStore) -> None:
    """An import writes its rows with their metadata: on PostgreSQL the general write path,
    with its index rows."""
    result = opened.import_session(FIXTURES / "claude_code_session.jsonl")
    assert [s.session_id for s in result.sessions][:1] == [CLAUDE_CODE_SESSION]
    hits = opened.search("utc offset", app="claude-code")
    assert [(h.session_id, h.seq, h.kind) for h in hits] == [
        (CLAUDE_CODE_SESSION, 19, "text"),
        (CLAUDE_CODE_SESSION, 14, "summary"),
    ]
    assert [h.marked for h in opened.search("pytest", role="assistant")] == [
        'Bash {"command":"[pytest] -q","description":"Run all tests"}',
        'Bash {"command":"[pytest] tests/test_parser.py -x -q",'
        '"description":"Run the failing test"}',
    ]


def test_verify_finds_an_index_row_missing_or_added(backend: Backend) -> None:
    with SessionStore(backend.url) as store:
        s = store.create_session(title="t")
        s.append_user("first words")
        s.append_user("second words")
        secret = s.append_user(f"key {SECRET}")
        s.redact([secret.parts[0].id], reason="leak")
        assert store.verify(s.id).ok
        backend.execute("DELETE FROM search_index WHERE seq = 3")
        (problem,) = store.verify(s.id).problems
        assert problem == (
            "its search index rows are not those its events give: 1 missing (the first at event 3)"
        )
