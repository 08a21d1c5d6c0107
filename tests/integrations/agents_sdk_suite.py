"""A pytest plugin that runs the OpenAI Agents SDK's own session tests on `AgentsSession`.

Run from an unpacked `openai-agents` sdist (`pip download --no-deps --no-binary :all:
openai-agents==<version>`), with this repository on `PYTHONPATH`:

    python -m pytest -p tests.integrations.agents_sdk_suite <the files in SESSION_TESTS>

The one thing it changes is how those tests build a session: in each of their modules the
names `SQLiteSession` and `SQLAlchemySession` stand for sessions of this adapter over a
sessionstore database (one per database the test names: a file path, a URL, an engine), so
every test body, assertion and helper runs as the SDK wrote it. `tests/integrations/
test_openai_agents_sdk_suite.py` runs it and checks that what fails is what
`docs/frameworks/openai-agents.md` lists as not applicable.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore
from sessionstore.integrations.openai_agents import AgentsSession

SESSION_TESTS = (
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/memory/test_openai_responses_compaction_session.py",
    "tests/extensions/memory/test_sqlalchemy_session.py",
    "tests/extensions/memory/test_encrypt_session.py",
)
"""The SDK's tests of sessions: its own SQLite and SQLAlchemy sessions, the limit, and the two
wrappers (compaction, encryption) over a session."""

_stores: dict[str, SessionStore] = {}
_guard = threading.Lock()


def _store(key: str | None) -> SessionStore:
    """The sessionstore database of a test's database: one per file path, URL or engine the
    test names, so two sessions of one database see each other; a new one for each in-memory
    database, as SQLite gives each connection to `:memory:` its own."""
    with _guard:
        if key is None:
            folder = Path(tempfile.mkdtemp(prefix="agents-sdk-"))
            return SessionStore(f"sqlite:///{folder / 'sessions.db'}")
        if key not in _stores:
            folder = Path(tempfile.mkdtemp(prefix="agents-sdk-"))
            _stores[key] = SessionStore(f"sqlite:///{folder / 'sessions.db'}")
        return _stores[key]


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
            key = None if str(db_path) == ":memory:" else str(Path(db_path).resolve())
            settings = _settings(kw.get("session_settings"))
            return AgentsSession(session_id, _store(key), **settings)
        return super().__new__(cls)

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        key = None if str(db_path) == ":memory:" else str(Path(db_path).resolve())
        super().__init__(session_id, _store(key), **_settings(session_settings))


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
