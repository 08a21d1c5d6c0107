"""A pytest plugin that runs the OpenAI Agents SDK's own session tests on `AgentsSession` and
`AdvancedAgentsSession`, on SQLite or PostgreSQL.

Run from an unpacked `openai-agents` sdist (`pip download --no-deps --no-binary :all:
openai-agents==<version>`), with this repository on `PYTHONPATH`:

    SESSIONSTORE_SUITE_BACKEND=postgresql python -m pytest -p agents_sdk_suite <SESSION_TESTS>

The one thing it changes is how those tests build a session: in each of their modules the
names `SQLiteSession` and `SQLAlchemySession` stand for sessions of `AgentsSession`, and
`AdvancedSQLiteSession` (replaced where the test module imports it from, so that the module's
own subclasses of it are ours too) for `AdvancedAgentsSession`, over a sessionstore database:
one per database the test names (a file path, a URL, an engine), so two sessions of one
database see each other. Every test body, assertion and helper runs as the SDK wrote it.

`SESSIONSTORE_SUITE_BACKEND` says where those databases are: `sqlite` (the default; a file
each) or `postgresql` (a fresh schema each at `SESSIONSTORE_TEST_POSTGRES_URL`, made and
dropped as `tests/conftest.py` makes them). Every store a test opened is closed, and its
schema dropped, when the test ends. `tests/integrations/test_openai_agents_sdk_suite.py` runs
it on both and checks that what fails is what `docs/frameworks/openai-agents.md` lists as not
applicable.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore
from sessionstore.integrations.openai_agents import AdvancedAgentsSession, AgentsSession

SESSION_TESTS = (
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/memory/test_openai_responses_compaction_session.py",
    "tests/extensions/memory/test_sqlalchemy_session.py",
    "tests/extensions/memory/test_encrypt_session.py",
)
"""The SDK's tests of sessions: its own SQLite and SQLAlchemy sessions, the limit, and the two
wrappers (compaction, encryption) over a session."""
ADVANCED_TESTS = ("tests/extensions/memory/test_advanced_sqlite_session.py",)
"""The SDK's tests of `AdvancedSQLiteSession`: branches, turns, usage."""

BACKEND = os.environ.get("SESSIONSTORE_SUITE_BACKEND", "sqlite")


def _backends() -> Any:
    """This repository's `tests/conftest.py`, loaded by its path: the sdist has a `tests`
    package of its own, so ours cannot be imported by name."""
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("sessionstore_test_backends", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_stores: dict[str, SessionStore] = {}
_opened: list[SessionStore] = []
_databases = ExitStack()
_guard = threading.Lock()


def _new_store() -> SessionStore:
    folder = Path(tempfile.mkdtemp(prefix="agents-sdk-"))
    if BACKEND == "sqlite":
        store = SessionStore(f"sqlite:///{folder / 'sessions.db'}")
    else:
        backends = _backends_module()
        backend = _databases.enter_context(backends.fresh_database(BACKEND, folder))
        backends.create_schema(backend)
        store = SessionStore(backend.url)
    _opened.append(store)
    return store


_loaded: list[Any] = []


def _backends_module() -> Any:
    if not _loaded:
        _loaded.append(_backends())
    return _loaded[0]


def _store(key: str | None) -> SessionStore:
    """The sessionstore database of a test's database: one per file path, URL or engine the
    test names, so two sessions of one database see each other; a new one for each in-memory
    database, as SQLite gives each connection to `:memory:` its own."""
    with _guard:
        if key is None:
            return _new_store()
        if key not in _stores:
            _stores[key] = _new_store()
        return _stores[key]


@pytest.fixture(autouse=True)
def _close_the_tests_stores() -> Iterator[None]:
    """Each test's databases are its own: closed, and their schemas dropped, when it ends."""
    yield
    with _guard:
        opened = list(_opened)
        _opened.clear()
        _stores.clear()
    for store in opened:
        store.close()
    _databases.close()


def _key(db_path: str | Path) -> str | None:
    return None if str(db_path) == ":memory:" else str(Path(db_path).resolve())


def _settings(session_settings: Any) -> dict[str, Any]:
    return {} if session_settings is None else {"session_settings": session_settings}


class StoreSQLiteSession(AgentsSession):
    """Built as the SDK's `SQLiteSession` is (`session_id`, `db_path`, table names, settings);
    a plain `SQLiteSession(...)` is an `AgentsSession` itself, a test's subclass of it is a
    subclass of `AgentsSession`."""

    def __new__(
        cls, session_id: str, db_path: str | Path = ":memory:", *args: Any, **kw: Any
    ) -> Any:
        if cls is StoreSQLiteSession:
            settings = _settings(kw.get("session_settings"))
            return AgentsSession(session_id, _store(_key(db_path)), **settings)
        return super().__new__(cls)

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        super().__init__(session_id, _store(_key(db_path)), **_settings(session_settings))


class StoreSQLAlchemySession(AgentsSession):
    """Built as the SDK's `SQLAlchemySession` is: `from_url(session_id, url=...)`, or with an
    `engine` (its database is the engine's)."""

    def __init__(
        self,
        session_id: str,
        *,
        engine: Any = None,
        create_tables: bool = False,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
        **_: Any,
    ) -> None:
        key = None if engine is None else f"engine-{id(engine)}"
        super().__init__(session_id, _store(key), **_settings(session_settings))

    @classmethod
    def from_url(
        cls,
        session_id: str,
        *,
        url: str,
        engine_kwargs: dict[str, Any] | None = None,
        session_settings: Any = None,
        **kwargs: Any,
    ) -> AgentsSession:
        key = None if ":memory:" in url else url
        return AgentsSession(session_id, _store(key), **_settings(session_settings))


class StoreAdvancedSQLiteSession(AdvancedAgentsSession):
    """Built as the SDK's `AdvancedSQLiteSession` is (keyword arguments: `session_id`,
    `db_path`, `create_tables`, `logger`, `session_settings`, table names)."""

    def __init__(
        self,
        *,
        session_id: str,
        db_path: str | Path = ":memory:",
        create_tables: bool = False,
        logger: Any = None,
        session_settings: Any = None,
        **_: Any,
    ) -> None:
        super().__init__(
            session_id, _store(_key(db_path)), logger=logger, **_settings(session_settings)
        )


def pytest_configure(config: pytest.Config) -> None:
    """`AdvancedSQLiteSession` is ours before the SDK's test module imports it (its module-level
    subclasses then subclass ours)."""
    import agents.extensions.memory as memory

    setattr(memory, "AdvancedSQLiteSession", StoreAdvancedSQLiteSession)  # noqa: B010


_PATCHED: set[str] = set()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each collected module of `SESSION_TESTS` builds its sessions with this adapter."""
    for item in items:
        module = getattr(item, "module", None)
        if module is None or module.__name__ in _PATCHED:
            continue
        if not any(str(item.path).endswith(path) for path in SESSION_TESTS):
            continue
        _PATCHED.add(module.__name__)
        if hasattr(module, "SQLiteSession"):
            module.SQLiteSession = StoreSQLiteSession
        if hasattr(module, "SQLAlchemySession"):
            module.SQLAlchemySession = StoreSQLAlchemySession
