"""The databases a framework's own test suite gets when it runs on our adapters
(`agents_sdk_suite`, `langchain_core_suite`): one sessionstore store per database a test names,
on SQLite or PostgreSQL, closed (and its PostgreSQL schema dropped) when the test ends.

`SESSIONSTORE_SUITE_BACKEND` says where: `sqlite` (the default; a file each) or `postgresql`
(a fresh schema each at `SESSIONSTORE_TEST_POSTGRES_URL`, made and dropped as
`tests/conftest.py` makes them). A plugin imports `store_for` and `close_the_tests_stores`
(the autouse fixture that closes them); this module is on `PYTHONPATH` beside it, since the
framework's checkout has a `tests` package of its own.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore

BACKEND = os.environ.get("SESSIONSTORE_SUITE_BACKEND", "sqlite")

_built: list[str] = []
_stores: dict[str, SessionStore] = {}
_opened: list[SessionStore] = []
_databases = ExitStack()
_guard = threading.Lock()


@cache
def _backends() -> Any:
    """This repository's `tests/conftest.py`, loaded by its path (the framework's `tests`
    package has the name): how the suite makes and drops a PostgreSQL schema."""
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("sessionstore_test_backends", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _new_store() -> SessionStore:
    folder = Path(tempfile.mkdtemp(prefix="framework-suite-"))
    if BACKEND == "sqlite":
        store = SessionStore(f"sqlite:///{folder / 'sessions.db'}")
    else:
        backends = _backends()
        backend = _databases.enter_context(backends.fresh_database(BACKEND, folder))
        backends.create_schema(backend)
        store = SessionStore(backend.url)
    _opened.append(store)
    return store


def store_for(key: str | None) -> SessionStore:
    """The store of a test's database `key` (a file path, a URL, an engine's id): one per key
    in a test, so two sessions of one database see each other; a new one for `None` (an
    in-memory database, which SQLite gives each connection its own of)."""
    with _guard:
        if key is None:
            return _new_store()
        if key not in _stores:
            _stores[key] = _new_store()
        return _stores[key]


def built(adapter: str) -> None:
    """Say that the running test built one of our adapters (`adapter`): the suite's report
    counts the tests that did (a test of the framework's own base classes builds none)."""
    with _guard:
        _built.append(adapter)


@pytest.fixture(autouse=True)
def close_the_tests_stores(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test's databases are its own: closed, and their schemas dropped, when it ends;
    whether it built an adapter goes into its report (JUnit: the `built_adapter` property)."""
    yield
    with _guard:
        adapters = sorted(set(_built))
        _built.clear()
    request.node.user_properties.append(("built_adapter", ",".join(adapters)))
    with _guard:
        opened = list(_opened)
        _opened.clear()
        _stores.clear()
    for store in opened:
        store.close()
    _databases.close()
