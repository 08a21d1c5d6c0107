"""The OpenAI Agents SDK's own session tests, run on `AgentsSession` and
`AdvancedAgentsSession` (`agents_sdk_suite`) on SQLite and on PostgreSQL: what fails is exactly
what `docs/frameworks/openai-agents.md` lists as not applicable, with why, and the same on both.

How the sdist and the suite's test dependencies are found (or downloaded, in CI) and what the
runs leave behind: `framework_suites`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("agents")

from tests.integrations.agents_sdk_suite import ADVANCED_TESTS, SESSION_TESTS
from tests.integrations.framework_suites import REPOSITORY, Suite, not_applicable, run_suite

DOCS = REPOSITORY / "docs" / "frameworks" / "openai-agents.md"
SESSIONS = Suite("openai-agents-sessions", "openai-agents", "agents_sdk_suite", SESSION_TESTS, DOCS)
ADVANCED = Suite(
    "openai-agents-advanced", "openai-agents", "agents_sdk_suite", ADVANCED_TESTS, DOCS, timeout=20
)
"""Its waits are short: a test that gates one of the SDK's own worker functions waits for a
call that never comes here, and fails at the timeout (a listed test)."""


@pytest.mark.slow  # some 280 and 130 tests of the SDK, each suite in a pytest of its own
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("suite", [SESSIONS, ADVANCED], ids=lambda suite: suite.name)
def test_the_sdk_session_tests_pass_but_those_that_cannot_apply(
    suite: Suite, backend: str, tmp_path: Path
) -> None:
    outcome = run_suite(suite, backend, tmp_path)
    assert len(outcome.built) > 100, f"only {len(outcome.built)} SDK tests built our adapter"
    listed = not_applicable(suite.docs)
    assert sorted(outcome.ids("failed") - set(listed)) == []  # a new failure: a defect, or a row
    skipped = {case for case in outcome.ids("skipped") if case in outcome.built}
    assert sorted(skipped - set(listed)) == []
