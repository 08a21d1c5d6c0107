"""`sessionstore db distribute` and `SessionStore.distribute()` where there is no Citus: each
says why it cannot, in one line, and changes nothing. On a Citus coordinator the behaviour
suite itself runs on distributed tables (`SESSIONSTORE_TEST_CITUS=1`: tests/conftest.py)."""

from __future__ import annotations

import pytest

from sessionstore import SchemaMismatch, SessionStore
from sessionstore.cli import main
from tests.conftest import CITUS, Backend


def test_a_store_without_citus_is_not_distributed_and_says_why(backend: Backend) -> None:
    if CITUS and backend.name == "postgresql":
        pytest.skip("not on Citus: it is about a database without the extension")
    with SessionStore(backend.url) as store:
        store.create_session(model="m").append_user("kept as it was")
        why = "has no Citus extension" if backend.name == "postgresql" else "is not PostgreSQL"
        with pytest.raises(SchemaMismatch, match=why):
            store.distribute()
        (info,) = store.sessions()
        assert store.session(info.id).context().to_openai() == [
            {"role": "user", "content": "kept as it was"}
        ]


def test_db_distribute_without_citus_is_one_line_and_exit_1(
    sqlite_backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    SessionStore(sqlite_backend.url).close()
    assert main(["--db", sqlite_backend.url, "db", "distribute"]) == 1
    err = capsys.readouterr().err
    assert "is not PostgreSQL: Citus spreads the tables of a PostgreSQL database" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["--db", sqlite_backend.url, "db", "current"]) == 0
    assert "Citus" not in capsys.readouterr().out


def test_db_current_on_citus_says_every_table_is_spread_and_the_function_delegated(
    postgres_backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    if not CITUS:
        pytest.skip("on a Citus coordinator only (SESSIONSTORE_TEST_CITUS=1: tests/conftest.py)")
    url = postgres_backend.owner_url or postgres_backend.url
    SessionStore(url).close()  # migrated, then distributed as an operator does (conftest)
    assert main(["--db", url, "db", "current"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "Citus: every table is distributed by session (sessions, events, snapshots, blobs, "
        "session_tags, search_index), and redactions delete bodies on the session's worker"
    )
    assert main(["--db", url, "db", "distribute"]) == 0
    assert capsys.readouterr().out.startswith("nothing to do: every table is distributed")
