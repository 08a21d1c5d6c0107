"""SQLite's full-text index takes the rows of appends in batches (revision 0006): each append
writes its index rows and their ids in `search_pending`; the FTS5 table takes them at the 64th,
and a search reads the rows still waiting beside it. What a search finds does not change
(tests/contract/test_search)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic import command

from sessionstore import SessionStore
from sessionstore.storage._migrate import alembic_config


def pending(path: Path) -> int:
    with sqlite3.connect(path) as raw:
        count: int = raw.execute("SELECT count(*) FROM search_pending").fetchone()[0]
    raw.close()
    return count


def fts_matches(path: Path, word: str) -> int:
    """Rows the FTS5 table itself finds, without the search's taking of pending rows."""
    with sqlite3.connect(path) as raw:
        sql = "SELECT count(*) FROM search_fts WHERE search_fts MATCH ?"
        count: int = raw.execute(sql, (f'"{word}"',)).fetchone()[0]
    raw.close()
    return count


def test_a_search_finds_the_rows_still_waiting_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    with SessionStore(f"sqlite:///{path}") as store:
        s = store.create_session(title="t")
        for n in range(5):
            s.append_user(f"tangerine number {n}")
        s.append_user("a blood orange")
        assert pending(path) == 6
        assert fts_matches(path, "tangerine") == 0
        assert [h.seq for h in store.search("tangerine")] == [6, 5, 4, 3, 2]
        assert [h.seq for h in store.search('"number 3" tangerine')] == [5]
        assert [h.seq for h in store.search("tangerine number")] == [6, 5, 4, 3, 2]
        assert store.search('"number tangerine"') == []  # a phrase keeps its order
        assert store.search("tangerin") == []  # words, not prefixes
        assert [h.seq for h in store.search("blood")] == [7]
        assert pending(path) == 6


def test_a_read_only_store_finds_the_rows_still_waiting(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    with SessionStore(f"sqlite:///{path}") as store:
        store.create_session(title="t").append_user("persimmon pie")
    with SessionStore(f"sqlite:///file:{path}?mode=ro&uri=true") as read_only:
        assert [h.excerpt for h in read_only.search("persimmon")] == ["persimmon pie"]
    assert pending(path) == 1


def test_the_write_that_brings_the_rows_to_64_indexes_them_all(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    with SessionStore(f"sqlite:///{path}") as store:
        s = store.create_session(title="t")
        for n in range(63):
            s.append_user(f"clementine {n}")
        assert (pending(path), fts_matches(path, "clementine")) == (63, 0)
        s.append_user("clementine 63")
        assert (pending(path), fts_matches(path, "clementine")) == (0, 64)
        s.append_user("clementine 64")
        assert (pending(path), fts_matches(path, "clementine")) == (1, 64)
        assert len(store.search("clementine", limit=100)) == 65


def test_a_downgrade_to_0005_indexes_the_pending_rows(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    url = f"sqlite:///{path}"
    with SessionStore(url) as store:
        s = store.create_session(title="t")
        s.append_user("kumquat one")
        s.append_user("kumquat two")
    command.downgrade(alembic_config(url), "0005")
    assert fts_matches(path, "kumquat") == 2
    with sqlite3.connect(path) as raw:  # the per-row triggers of 0005 are back
        raw.execute(
            "INSERT INTO search_index (session_id, seq, part, chunk, role, event_type, digest, "
            "recorded_at, terms) VALUES ('x', 1, 0, 0, 'user', 'MessageAppended', NULL, "
            "'2026-11-27 00:00:00.000000', 'kumquat three')"
        )
    raw.close()
    assert fts_matches(path, "kumquat") == 3
    command.upgrade(alembic_config(url), "head")
    with SessionStore(url) as store:
        assert len(store.search("kumquat")) == 2  # the row without a session is no hit
