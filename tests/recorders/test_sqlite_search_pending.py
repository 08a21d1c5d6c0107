"""SQLite's full-text index takes the rows of appends in batches (revision 0006): each append
writes its index rows and their ids in `search_pending`; the FTS5 table takes them at the 64th,
or when a search comes first. What a search finds does not change (tests/contract/test_search)."""

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


def test_rows_wait_for_a_search_which_indexes_them_first(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    with SessionStore(f"sqlite:///{path}") as store:
        s = store.create_session(title="t")
        for n in range(5):
            s.append_user(f"tangerine number {n}")
        assert pending(path) == 5
        assert fts_matches(path, "tangerine") == 0
        assert [h.seq for h in store.search("tangerine")] == [6, 5, 4, 3, 2]
        assert pending(path) == 0
        assert fts_matches(path, "tangerine") == 5


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
