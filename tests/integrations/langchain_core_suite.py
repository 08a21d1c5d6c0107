"""A pytest plugin that runs langchain-core's own chat-history tests on
`SessionStoreChatMessageHistory`, on SQLite or PostgreSQL.

Run from an unpacked `langchain-core` sdist (`pip download --no-deps --no-binary :all:
langchain-core==<version>`), with this repository and this folder on `PYTHONPATH`:

    SESSIONSTORE_SUITE_BACKEND=postgresql python -m pytest -p langchain_core_suite <HISTORY_TESTS>

The one thing it changes is how those tests build a history: in each of their modules the
name `InMemoryChatMessageHistory` stands for a `SessionStoreChatMessageHistory` of a new
session of the test's store (`suite_databases`), built as LangChain's is (`messages=`) and
equal to another when its messages are, as LangChain's pydantic model is. Every test body,
assertion and helper runs as langchain-core wrote it. `tests/integrations/
test_langchain_core_suite.py` runs it on both backends and checks that what fails is what
`docs/frameworks/langchain.md` lists as not applicable.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from sessionstore.integrations.langchain import SessionStoreChatMessageHistory

try:
    from tests.integrations.suite_databases import built, close_the_tests_stores, store_for
except ImportError:  # in langchain-core's checkout, whose `tests` is its own
    from suite_databases import (  # type: ignore[import-not-found,no-redef]
        built,
        close_the_tests_stores,
        store_for,
    )

__all__ = ["close_the_tests_stores"]

HISTORY_TESTS = (
    "tests/unit_tests/chat_history/test_chat_history.py",
    "tests/unit_tests/runnables/test_history.py",
)
"""langchain-core's tests of chat message histories: the history itself, and
`RunnableWithMessageHistory` reading and writing one per session."""


TESTS_STORE = "histories"
"""The store of a test's histories, each a session of its own in it."""


@pytest.fixture(autouse=True)
def histories_store(close_the_tests_stores: None) -> None:
    """The test's store, opened before it runs: LangChain calls a history factory on the event
    loop, where opening a database would block it (langchain-core's tests fail any blocking
    call there); a history itself does no I/O until it is used, and then on the workers."""
    store_for(TESTS_STORE)


class StoreChatMessageHistory(SessionStoreChatMessageHistory):
    """Built as `InMemoryChatMessageHistory(messages=...)` is: a history of its own (a new
    session of the test's store), holding `messages`."""

    def __init__(self, messages: Sequence[BaseMessage] | None = None, **_: Any) -> None:
        super().__init__(f"history-{uuid.uuid4().hex}", store_for(TESTS_STORE))
        built("SessionStoreChatMessageHistory")
        if messages:
            self.add_messages(list(messages))

    def __eq__(self, other: object) -> bool:
        """Equal to another history of the same class with the same messages, as LangChain's
        pydantic `InMemoryChatMessageHistory` compares."""
        return isinstance(other, StoreChatMessageHistory) and self.messages == other.messages

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StoreChatMessageHistory(messages={self.messages!r})"


_PATCHED: set[str] = set()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each collected module of `HISTORY_TESTS` builds its histories with this adapter."""
    for item in items:
        module = getattr(item, "module", None)
        if module is None or module.__name__ in _PATCHED:
            continue
        if not any(str(item.path).endswith(path) for path in HISTORY_TESTS):
            continue
        _PATCHED.add(module.__name__)
        if hasattr(module, "InMemoryChatMessageHistory"):
            module.InMemoryChatMessageHistory = StoreChatMessageHistory
