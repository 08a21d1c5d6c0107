"""langchain-core's own chat-history tests (`tests/unit_tests/chat_history` and
`RunnableWithMessageHistory`'s, `tests/unit_tests/runnables/test_history.py`), run on
`SessionStoreChatMessageHistory` (`langchain_core_suite`) on SQLite and on PostgreSQL: every
test passes, or is listed in `docs/frameworks/langchain.md` with why.

How the sdist and the suite's test dependencies are found (or downloaded, in CI) and what the
runs leave behind: `framework_suites`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain")

from tests.integrations.framework_suites import REPOSITORY, Suite, not_applicable, run_suite
from tests.integrations.langchain_core_suite import HISTORY_TESTS

DOCS = REPOSITORY / "docs" / "frameworks" / "langchain.md"
HISTORIES = Suite(
    "langchain-core-histories", "langchain-core", "langchain_core_suite", HISTORY_TESTS, DOCS
)


@pytest.mark.slow  # a pytest of its own in langchain-core's sdist
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_langchain_cores_history_tests_pass_on_our_history(backend: str, tmp_path: Path) -> None:
    outcome = run_suite(HISTORIES, backend, tmp_path)
    assert len(outcome.built) >= 20, f"only {len(outcome.built)} tests built our history"
    assert sorted(outcome.ids("failed") - set(not_applicable(DOCS))) == []
