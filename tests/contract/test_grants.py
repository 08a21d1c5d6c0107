"""`sessionstore db grant ROLE` and `SessionStore.grant(role)`: the role an application connects
as may do all the store does and nothing more. For it the grants keep what the triggers keep
for the tables' owner: no event changed or deleted, no body changed, and a body deleted only
through the function that checks a redaction of its session names it (revision 0010). On a
Citus cluster, where no trigger of a shard can read `events`, they are what enforces it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from sessionstore import InvalidArgument, SchemaMismatch, SessionStore
from sessionstore.cli import main
from sessionstore.storage._postgres import APPLICATION_PRIVILEGES
from tests.conftest import POSTGRES_BACKENDS, POSTGRES_URL, Backend, schema_of
from tests.contract.test_redaction import SECRET, leaky_session

GRANTED = [
    "sessions: SELECT, INSERT, UPDATE",
    "events: SELECT, INSERT",
    "blobs: SELECT, INSERT",
    "snapshots: SELECT, INSERT, DELETE",
    "session_tags: SELECT, INSERT, DELETE",
    "search_index: SELECT, INSERT, DELETE",
    "alembic_version: SELECT",
    "sessionstore_delete_redacted_bodies(varchar, text[]): EXECUTE (a body is deleted only "
    "through it)",
]


@pytest.fixture(params=POSTGRES_BACKENDS)
def pg(request: pytest.FixtureRequest) -> Backend:
    fixture = {"postgresql": "postgres_backend"}.get(request.param, "partitioned_postgres_backend")
    backend: Backend = request.getfixturevalue(fixture)
    return backend


@pytest.fixture
def app_role(pg: Backend) -> Iterator[str]:
    """A role that logs in (trust, as the test server allows), neither superuser nor owner."""
    role = f"sessionstore_app_{uuid.uuid4().hex[:12]}"
    pg.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        yield role
    finally:
        pg.execute(f'DROP OWNED BY "{role}"')
        pg.execute(f'DROP ROLE "{role}"')


def owner_of(backend: Backend) -> str:
    """The test database's URL as the tables' owner (when the suite runs as a role: `ROLE`)."""
    return backend.owner_url or backend.url


def as_role(backend: Backend, role: str) -> str:
    return sa.make_url(backend.url).set(username=role).render_as_string(hide_password=False)


def run_as(backend: Backend, role: str, sql: str, **params: object) -> None:
    url = sa.make_url(as_role(backend, role)).difference_update_query(["partitions"])
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(sql), params)
    finally:
        engine.dispose()


def test_a_granted_role_runs_the_store_and_its_redactions(pg: Backend, app_role: str) -> None:
    with SessionStore(owner_of(pg)) as owner:
        assert owner.grant(app_role) == GRANTED
    assert [line.split(":")[0] for line in GRANTED[:-1]] == list(APPLICATION_PRIVILEGES)
    with SessionStore(as_role(pg, app_role)) as store:
        s, short, long = leaky_session(store)
        s.update_metadata(app="agent", user="u1", tags=["a", "b"])
        fork = store.fork(s.id)
        fork.append_user("and after the fork")
        assert [hit.session_id for hit in store.search("fork")] == [fork.id]
        event = s.redact([short, long], reason="leaked")
        assert event is not None
        purged = store.create_session(model="m")
        purged.append_user(f"my key is {SECRET}")
        assert store.purge(purged.id, reason="asked") is not None
        for session_id in (s.id, fork.id, purged.id):
            assert store.verify(session_id).ok
            assert SECRET not in str(store.session(session_id).context().to_openai())
        assert store.search(SECRET) == []
        assert {i.id for i in store.sessions(tag="b")} == {s.id, fork.id}  # a fork keeps its tags
    with pg.raw_engine().connect() as conn:  # the bodies are gone from the table, not hidden
        stored = conn.execute(sa.text("SELECT data FROM blobs")).scalars().all()
    assert stored and not any(SECRET.encode() in bytes(d) for d in stored if d is not None)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE events SET type = type",
        "DELETE FROM events",
        "TRUNCATE events",
        "UPDATE blobs SET size = size",
        "DELETE FROM blobs",
        "TRUNCATE blobs",
        "DELETE FROM sessions",
        "TRUNCATE sessions",
        "UPDATE alembic_version SET version_num = version_num",
        "DROP TABLE session_tags",
        "CREATE TABLE events_copy (n integer)",
    ],
)
def test_a_granted_role_cannot_change_what_the_store_keeps(
    pg: Backend, app_role: str, statement: str
) -> None:
    with SessionStore(owner_of(pg)) as owner:
        owner.grant(app_role)
        leaky_session(owner)
    before = pg.table_rows()
    with pytest.raises(sa.exc.ProgrammingError, match=r"permission denied|must be owner"):
        run_as(pg, app_role, statement)
    assert pg.table_rows() == before


def test_the_function_deletes_only_bodies_a_redaction_of_their_session_names(
    pg: Backend, app_role: str
) -> None:
    with SessionStore(owner_of(pg)) as owner:
        owner.grant(app_role)
        s, short, _ = leaky_session(owner)
        other = owner.create_session(model="m")
        other.append_user(f"OPENAI_API_KEY={SECRET}\n")  # the same bytes, another session
        s.redact([short], reason="leaked")
    with pg.raw_engine().connect() as conn:
        named = conn.execute(
            sa.text("SELECT payload -> 'digests' ->> 0 FROM events WHERE type = 'ContentRedacted'")
        ).scalar_one()
        unnamed = conn.execute(
            sa.text("SELECT digest FROM blobs WHERE session_id = :s LIMIT 1"), {"s": s.id}
        ).scalar_one()
    before = pg.table_rows()
    call = "SELECT sessionstore_delete_redacted_bodies(:s, :d)"
    for who in (app_role, None):  # the check binds the owner too
        for session_id, digests in ((s.id, [unnamed]), (other.id, [named])):
            with pytest.raises(sa.exc.IntegrityError, match="only by a redaction that names"):
                if who is None:
                    pg.execute(call, s=session_id, d=digests)
                else:
                    run_as(pg, who, call, s=session_id, d=digests)
    assert pg.table_rows() == before


def test_granting_again_narrows_a_role_granted_more_by_hand(pg: Backend, app_role: str) -> None:
    with SessionStore(owner_of(pg)) as owner:
        leaky_session(owner)
        pg.execute(f'GRANT ALL ON events, blobs TO "{app_role}"')
        pg.execute(f'GRANT USAGE ON SCHEMA "{schema_of(pg.url)}" TO "{app_role}"')
        run_as(pg, app_role, "SELECT count(*) FROM events")  # it could before
        owner.grant(app_role)
        owner.grant(app_role)  # and again: the same grants
    with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
        run_as(pg, app_role, "UPDATE blobs SET size = size")


def test_grant_refuses_a_role_no_grant_would_bind(pg: Backend, app_role: str) -> None:
    owner_name = sa.make_url(POSTGRES_URL).username
    with SessionStore(owner_of(pg)) as store:
        with pytest.raises(InvalidArgument, match="no role 'nobody_here' on this server"):
            store.grant("nobody_here")
        with pytest.raises(InvalidArgument, match="is a superuser, whom no grant binds"):
            store.grant(str(owner_name))
        pg.execute(f'ALTER TABLE events OWNER TO "{app_role}"')
        try:
            with pytest.raises(InvalidArgument, match="owns the store's tables"):
                store.grant(app_role)
        finally:
            pg.execute(f'ALTER TABLE events OWNER TO "{owner_name}"')


def test_grant_where_there_are_no_roles_says_why(sqlite_backend: Backend) -> None:
    with (
        SessionStore(sqlite_backend.url) as store,
        pytest.raises(SchemaMismatch, match="is not PostgreSQL: roles and grants"),
    ):
        store.grant("app")
    with SessionStore("memory://grants") as store, pytest.raises(SchemaMismatch, match="not Post"):
        store.grant("app")


def test_db_grant_prints_what_the_role_may_do(
    pg: Backend, app_role: str, capsys: pytest.CaptureFixture[str]
) -> None:
    SessionStore(owner_of(pg)).close()
    assert main(["--db", owner_of(pg), "db", "grant", app_role]) == 0
    assert capsys.readouterr().out.splitlines() == [f"granted {app_role}:"] + [
        f"  {line}" for line in GRANTED
    ]
    assert main(["--db", owner_of(pg), "db", "grant", "nobody_here"]) == 1
    err = capsys.readouterr().err
    assert "no role 'nobody_here' on this server" in err and len(err.strip().splitlines()) == 1
