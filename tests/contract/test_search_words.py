"""Every backend finds what the words say: the index's words (`indexed_terms`), handed to
SQLite's FTS5 table or PostgreSQL's `to_tsvector('simple', ...)`, come out as exactly those
words, and a search on SQLite and PostgreSQL finds the events the memory store (which matches
the words themselves) finds. Property-based, over text mixing ASCII, accents, ligatures,
other scripts, digits and punctuation."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore
from sessionstore.events import indexed_terms, parse_query
from tests.conftest import Backend

PIECES = [
    "alembic", "Upgrade", "HEAD", "café", "NAÏVE", "ﬁle", "Straße", "søren", "x²", "v2.0",
    "session_id", "İstanbul", "ΣΊΣΥΦΟΣ", "中文", "हिन्दी", "עברית", "1e5", "0x1F", "naïve",
    "ǅemal", "\u210cello", "Ⅻ", "ﾊﾝｶｸ", "a-b", "k8s", "ok", "__init__", "don't",
]  # fmt: skip
SEPARATORS = [" ", "\n", ".", ", ", "/", "::", "-", "_", "(", ") ", "'", '"', "\t"]

texts = st.lists(
    st.tuples(st.sampled_from(PIECES), st.sampled_from(SEPARATORS)), min_size=1, max_size=12
).map(lambda pairs: "".join(piece + separator for piece, separator in pairs))


def fts5_tokens(terms: str) -> list[str]:
    """The tokens SQLite's FTS5 table of revision 0005 makes of an index row's words."""
    with sqlite3.connect(":memory:") as conn:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(terms, tokenize='ascii')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        conn.execute("INSERT INTO t(terms) VALUES (?)", (terms,))
        rows = conn.execute("SELECT term, offset FROM v ORDER BY offset").fetchall()
    conn.close()
    return [term for term, _ in rows]


@settings(max_examples=200, deadline=None)
@given(texts)
def test_fts5_keeps_the_words_as_they_are(text: str) -> None:
    terms = indexed_terms(text)
    assert fts5_tokens(terms) == terms.split()


@pytest.fixture(scope="module")
def postgres() -> Iterator[sa.Engine]:
    from tests.conftest import POSTGRES_URL, require_postgres

    require_postgres()
    engine = sa.create_engine(POSTGRES_URL, poolclass=sa.pool.NullPool)
    yield engine
    engine.dispose()


@pytest.mark.postgres
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts)
def test_postgres_keeps_the_words_as_they_are(postgres: sa.Engine, text: str) -> None:
    terms = indexed_terms(text)
    with postgres.connect() as conn:
        found = conn.execute(
            sa.text(
                "SELECT lexeme, positions FROM unnest(to_tsvector('simple', :terms)) "
                "ORDER BY positions[1]"
            ),
            {"terms": terms},
        ).all()
    placed = sorted((position, lexeme) for lexeme, positions in found for position in positions)
    assert [lexeme for _, lexeme in placed] == terms.split()


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(texts, min_size=1, max_size=4), st.data())
def test_a_search_finds_what_the_memory_store_finds(
    backend: Backend, messages: list[str], data: st.DataObject
) -> None:
    if backend.name == "memory":
        pytest.skip("the memory store is the reference here")
    query_words = data.draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=3))
    query = " ".join(query_words) if data.draw(st.booleans()) else f'"{" ".join(query_words)}"'
    try:
        parse_query(query)
    except ValueError:
        return
    found = {}
    for name, url in (("reference", "memory://"), ("backend", backend.url)):
        with SessionStore(url) as store:
            session = store.create_session(title="t")
            for text in messages:
                session.append_user(text)
            found[name] = [hit.seq for hit in store.search(query, limit=100)]
            store.purge(session.id)  # the next example's session is alone in the index
    assert found["backend"] == found["reference"]
