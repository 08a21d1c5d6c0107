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

`SESSIONSTORE_SUITE_BACKEND` says where those databases are (`suite_databases`): `sqlite` (the
default) or `postgresql`, a fresh schema each; every store a test opened is closed, and its
schema dropped, when the test ends. `tests/integrations/test_openai_agents_sdk_suite.py` runs
it on both and checks that what fails is what `docs/frameworks/openai-agents.md` lists as not
applicable.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

try:
    from tests.integrations.suite_databases import built, close_the_tests_stores, store_for
except ImportError:  # in the SDK's checkout, whose `tests` is its own: this folder is on the path
    from suite_databases import (  # type: ignore[import-not-found,no-redef]
        built,
        close_the_tests_stores,
        store_for,
    )
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

__all__ = ["close_the_tests_stores"]  # in this plugin's namespace, so pytest registers it


def _store(key: str | None, adapter: str = "AgentsSession") -> Any:
    built(adapter)
    return store_for(key)


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
        store = _store(_key(db_path), "AdvancedAgentsSession")
        super().__init__(session_id, store, logger=logger, **_settings(session_settings))


def pytest_configure(config: pytest.Config) -> None:
    """`AdvancedSQLiteSession` is ours before the SDK's test module imports it (its module-level
    subclasses then subclass ours)."""
    import agents.extensions.memory as memory

    setattr(memory, "AdvancedSQLiteSession", StoreAdvancedSQLiteSession)  # noqa: B010


_PATCHED: set[str] = set()


IN_CHILD_PROCESSES = (
    "it runs `AdvancedSQLiteSession` in child processes, fresh interpreters that import the "
    "SDK's own class: this plugin does not reach them"
)
"""Why the advanced tests marked `review_optional` (each starts child processes) are skipped."""
GATES_SDK_WORKERS = (
    "it holds one of the SDK's own worker functions, by its name (`_pop_item_sync`, "
    "`_capture_current_turn`, ...), at a barrier by patching the SDK module's "
    "`asyncio.to_thread`: sessionstore runs its calls on its own workers, so the barrier is "
    "never reached and the test would wait for ever"
)
"""Why the advanced tests that use the SDK suite's `_gate_worker` are skipped."""


def _skipped_why(item: pytest.Item) -> str | None:
    """Why an advanced test cannot run here at all (it would hang), or `None`."""
    if not any(str(item.path).endswith(path) for path in ADVANCED_TESTS):
        return None
    if item.get_closest_marker("review_optional") is not None:
        return IN_CHILD_PROCESSES
    function = getattr(item, "function", None)
    if function is not None and "_gate_worker(" in inspect.getsource(function):
        return GATES_SDK_WORKERS
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each collected module of `SESSION_TESTS` builds its sessions with this adapter; the
    advanced tests that run the SDK's class in child processes are skipped, saying why."""
    for item in items:
        why = _skipped_why(item)
        if why is not None:
            item.add_marker(pytest.mark.skip(reason=why))
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
