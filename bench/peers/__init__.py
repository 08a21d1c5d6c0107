"""One adapter per store, all with the same tiny interface, so every workload runs the same
code against each of them.

A peer whose package is not installed (or fails to import) still gets an adapter: `available`
is the import error, and every row for it says "n/a: <error>" instead of crashing the run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.mix import Msg


class NotSupported(Exception):
    """The store cannot do this; the message is the reason shown in the table."""


class Store:
    """A store under test. `open` makes a fresh handle on a file, as a restarted process does."""

    name = "?"
    package = ""
    durability = "?"
    notes = ""
    max_messages: int | None = None
    """Where a store's cost per append grows with the session (so big runs are infeasible)."""
    max_reason = ""
    append_only = False
    """Run only the append workloads (a second durability setting of a store run in full)."""
    available: str | None = None
    """`None` when the store can run, else why not (an import error)."""

    def open(self, path: Path) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def new_session(self, session_id: str) -> Any:
        raise NotImplementedError

    def append(self, handle: Any, msg: Msg) -> None:
        raise NotImplementedError

    def load(self, handle: Any) -> int:
        """The live context (messages as the model would get them) on an open handle."""
        raise NotImplementedError

    def resume(self, session_id: str) -> int:
        """Get the live context from this (freshly opened) store: the number of messages."""
        raise NotImplementedError

    def replay(self, session_id: str, index: int) -> int:
        """The context right after the `index`-th message appended (1-based)."""
        raise NotSupported("no replay to a point")

    def tokens(self, handle: Any) -> int:
        """The live token count."""
        raise NotSupported("keeps no token counts")

    def from_scratch(self, session_id: str) -> int:
        """Resume without any snapshot or cache (only where the store has them)."""
        raise NotSupported("has no snapshots")

    def files(self, path: Path) -> list[Path]:
        """Every file the store keeps for `path` (the database, its WAL, ...)."""
        return [p for p in path.parent.glob(path.name + "*") if p.is_file()]


ADAPTERS = (
    "bench.peers.ours:SessionStoreNormal",
    "bench.peers.ours:SessionStoreFull",
    "bench.peers.openai_sqlite:AgentsSQLiteSession",
    "bench.peers.openai_sqlalchemy:AgentsSQLAlchemySession",
    "bench.peers.adk:AdkDatabaseSessionService",
    "bench.peers.langgraph_sqlite:LangGraphSqliteSaver",
)


def load_stores(only: list[str] | None = None) -> list[Store]:
    """Every adapter; one whose peer package cannot be imported is kept with `available` set."""
    stores: list[Store] = []
    for spec in ADAPTERS:
        module_name, class_name = spec.split(":")
        module = importlib.import_module(module_name)
        factory: Callable[[], Store] = getattr(module, class_name)
        store = factory()
        if only and store.name not in only:
            continue
        stores.append(store)
    return stores


def probe(*modules: str) -> str | None:
    """`None` when every module imports, else the first import error as one line."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else name}"
    return None
