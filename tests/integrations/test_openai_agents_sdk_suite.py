"""The OpenAI Agents SDK's own session tests, run on `AgentsSession` (`agents_sdk_suite`): what
fails is exactly what `docs/frameworks/openai-agents.md` lists as not applicable, with why.

The SDK's tests come with its source distribution, not its wheel. Point
`OPENAI_AGENTS_SDIST` at an unpacked sdist of the installed version (`pip download --no-deps
--no-binary :all: openai-agents==<version>`, then unpack it); in CI (`CI` set) the test
downloads it, and the test dependencies the SDK's suite needs (pytest-asyncio; greenlet for
SQLAlchemy's asyncio; pytest-timeout, so a test that waits for what never comes fails instead of
hanging), into a temporary folder; elsewhere `OPENAI_AGENTS_SDIST_DEPS` names a folder (or
several) that holds them. Without an sdist the test skips.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

pytest.importorskip("agents")

from tests.integrations.agents_sdk_suite import SESSION_TESTS

REPOSITORY = Path(__file__).resolve().parents[2]
DOCS = REPOSITORY / "docs" / "frameworks" / "openai-agents.md"
TEST_DEPENDENCIES = ("pytest-asyncio", "pytest-timeout", "greenlet")


def not_applicable() -> dict[str, str]:
    """The docs page's table of SDK tests that cannot apply: test id -> why."""
    rows = re.findall(r"^\| `(tests/[^`]+)` \| (.+) \|$", DOCS.read_text(), flags=re.MULTILINE)
    return dict(rows)


def case_id(classname: str, name: str) -> str:
    """pytest's id of a JUnit test case (`tests.memory.test_x.TestClass` and its name)."""
    parts = classname.split(".")
    last = max(n for n, part in enumerate(parts) if part.startswith("test_"))
    module = "/".join(parts[: last + 1]) + ".py"
    return "::".join([module, *parts[last + 1 :], name])


def sdist_and_dependencies(folder: Path) -> tuple[Path, list[str]]:
    """The unpacked sdist, and the folders to put on `PYTHONPATH` for its test dependencies."""
    version = importlib.metadata.version("openai-agents")
    given = os.environ.get("OPENAI_AGENTS_SDIST")
    if given:
        return Path(given), os.environ.get("OPENAI_AGENTS_SDIST_DEPS", "").split(os.pathsep)
    if not os.environ.get("CI"):
        pytest.skip(
            "the SDK's tests are in its sdist: set OPENAI_AGENTS_SDIST to an unpacked "
            f"openai-agents=={version} sdist (CI downloads it)"
        )
    pip = [sys.executable, "-m", "pip", "--quiet", "--disable-pip-version-check"]
    wanted = [f"openai-agents=={version}", "--no-deps", "--no-binary", ":all:"]
    subprocess.run([*pip, "download", *wanted, "-d", str(folder)], check=True)
    [archive] = folder.glob("openai_agents-*.tar.gz")
    with tarfile.open(archive) as sdist:
        sdist.extractall(folder, filter="data")
    dependencies = folder / "dependencies"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(dependencies), *TEST_DEPENDENCIES],
        check=True,
    )
    return folder / f"openai_agents-{version}", [str(dependencies)]


@pytest.mark.slow  # some 300 tests of the SDK, in a pytest of their own
def test_the_sdk_session_tests_pass_but_those_that_cannot_apply(tmp_path: Path) -> None:
    sdist, dependencies = sdist_and_dependencies(tmp_path)
    report = tmp_path / "report.xml"
    paths = [str(REPOSITORY), str(REPOSITORY / "tests" / "integrations"), *dependencies]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    options = ["-q", "-p", "no:cacheprovider", "--timeout=120", f"--junitxml={report}"]
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "agents_sdk_suite", *SESSION_TESTS, *options],
        cwd=sdist,
        env=environment,
        capture_output=True,
        check=False,
    )
    failed = set()
    ran = 0
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        ran += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(case_id(case.get("classname", ""), case.get("name", "")))
    assert ran > 200, f"only {ran} of the SDK's session tests ran"
    assert sorted(failed - set(not_applicable())) == []  # a new failure: a defect, or a row
