"""Running a framework's own test suite, from its source distribution, on our adapters.

The frameworks ship their tests in their sdists, not their wheels. A suite's sdist (of the
installed version) is found at `$<SUITE>_SDIST` (an unpacked sdist: `pip download --no-deps
--no-binary :all: <distribution>==<version>`, then unpack it); in CI (`CI` set) it is
downloaded from the package index into a temporary folder, never into this repository;
elsewhere, without the variable, the test skips. The test dependencies a suite needs
(`TEST_DEPENDENCIES`) come from `$SESSIONSTORE_SUITE_DEPS` (folders joined by the path
separator), or in CI are installed into the same temporary folder.

Each run is a pytest of its own in the sdist, with one of our plugins (`agents_sdk_suite`,
`langchain_core_suite`) that changes only how the tests build a session, on one backend
(`SESSIONSTORE_SUITE_BACKEND`); its JUnit report says which tests failed and which built our
adapter. When `$SESSIONSTORE_SUITE_REPORTS` names a folder, the run's artefacts go there:
`<suite>-<backend>.xml` (the JUnit report) and `<suite>-<backend>.json` (the counts and the
failed tests), which `docs/frameworks/index.md` explains.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
TEST_DEPENDENCIES = (
    "pytest-asyncio",
    "pytest-timeout",  # a test that waits for what never comes fails instead of hanging
    "greenlet",  # SQLAlchemy's asyncio (the Agents SDK's SQLAlchemy session tests)
    "pytest-mock",  # langchain-core's conftest
    "blockbuster",  # langchain-core's conftest: no blocking call on the event loop
    "forbiddenfruit",  # blockbuster's
    "syrupy",  # langchain-core's pytest options name its snapshot flags
)


@dataclass(frozen=True)
class Suite:
    """A framework's tests to run: its distribution, our plugin, the test files."""

    name: str
    distribution: str
    plugin: str
    paths: tuple[str, ...]
    docs: Path
    """The docs page whose table lists the tests that cannot apply, and why."""
    timeout: int = 120


@dataclass
class Outcome:
    """What one run of a suite did: every test case, by status, and which built an adapter."""

    status: dict[str, str] = field(default_factory=dict)
    """pytest id -> "passed", "failed", "skipped"."""
    built: set[str] = field(default_factory=set)

    def ids(self, status: str) -> set[str]:
        return {case for case, value in self.status.items() if value == status}

    def counts(self) -> dict[str, int]:
        """Counts of the tests that built our adapter, as the docs' table gives them."""
        ours = {case: value for case, value in self.status.items() if case in self.built}
        return {
            "tests": len(self.status),
            "built_our_adapter": len(ours),
            "passed": sum(1 for v in ours.values() if v == "passed"),
            "failed": sum(1 for v in ours.values() if v == "failed"),
            "skipped": sum(1 for v in ours.values() if v == "skipped"),
        }


def not_applicable(docs: Path) -> dict[str, str]:
    """A docs page's table of framework tests that cannot apply: test id -> why."""
    rows = re.findall(r"^\| `(tests/[^`]+)` \| (.+) \|$", docs.read_text(), flags=re.MULTILINE)
    return dict(rows)


def case_id(classname: str, name: str) -> str:
    """pytest's id of a JUnit test case (`tests.memory.test_x.TestClass` and its name)."""
    parts = classname.split(".")
    last = max(n for n, part in enumerate(parts) if part.startswith("test_"))
    module = "/".join(parts[: last + 1]) + ".py"
    return "::".join([module, *parts[last + 1 :], name])


_prepared: dict[str, tuple[Path, list[str]]] = {}
"""What `unpacked_sdist` downloaded, by distribution: once per test process."""


def unpacked_sdist(suite: Suite, folder: Path) -> tuple[Path, list[str]]:
    """The unpacked sdist of the installed version, and the folders of the test dependencies
    (see the module's docstring); skips when neither is given nor CI can download them."""
    if suite.distribution not in _prepared:
        _prepared[suite.distribution] = _unpacked_sdist(suite, folder)
    return _prepared[suite.distribution]


def _unpacked_sdist(suite: Suite, folder: Path) -> tuple[Path, list[str]]:
    version = importlib.metadata.version(suite.distribution)
    variable = suite.distribution.upper().replace("-", "_") + "_SDIST"
    given = os.environ.get(variable)
    dependencies = os.environ.get("SESSIONSTORE_SUITE_DEPS", "")
    if given and dependencies:
        return Path(given), dependencies.split(os.pathsep)
    if not os.environ.get("CI"):
        pytest.skip(
            f"{suite.distribution}'s tests are in its sdist: set {variable} to an unpacked "
            f"{suite.distribution}=={version} sdist and SESSIONSTORE_SUITE_DEPS to a folder of "
            f"{', '.join(TEST_DEPENDENCIES)} (CI downloads them)"
        )
    pip = [sys.executable, "-m", "pip", "--quiet", "--disable-pip-version-check"]
    if given:
        sdist = Path(given)
    else:
        wanted = [f"{suite.distribution}=={version}", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*pip, "download", *wanted, "-d", str(folder)], check=True)
        [archive] = folder.glob(f"{suite.distribution.replace('-', '_')}-*.tar.gz")
        with tarfile.open(archive) as sdist_file:
            sdist_file.extractall(folder, filter="data")
        sdist = folder / archive.name.removesuffix(".tar.gz")
    if dependencies:
        return sdist, dependencies.split(os.pathsep)
    target = folder / "dependencies"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(target), *TEST_DEPENDENCIES], check=True
    )
    return sdist, [str(target)]


def run_suite(suite: Suite, backend: str, folder: Path) -> Outcome:
    """Run `suite` on `backend` in a pytest of its own and read its JUnit report."""
    sdist, dependencies = unpacked_sdist(suite, folder)
    report = folder / f"{suite.name}-{backend}.xml"
    paths = [str(REPOSITORY), str(REPOSITORY / "tests" / "integrations"), *dependencies]
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        "SESSIONSTORE_SUITE_BACKEND": backend,
    }
    options = ["-q", "-p", "no:cacheprovider", f"--timeout={suite.timeout}"]
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", suite.plugin, *suite.paths, *options,
         f"--junitxml={report}", "-o", "junit_logging=no"],
        cwd=sdist,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    if not report.exists():  # pytest itself failed (a plugin that does not import, say)
        pytest.fail(f"{suite.name} did not run:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}")
    outcome = Outcome()
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        test = case_id(case.get("classname", ""), case.get("name", ""))
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        outcome.status[test] = "failed" if failed else "skipped" if skipped else "passed"
        for prop in case.iter("property"):
            if prop.get("name") == "built_adapter" and prop.get("value"):
                outcome.built.add(test)
    keep_artefacts(suite, backend, report, outcome)
    return outcome


def keep_artefacts(suite: Suite, backend: str, report: Path, outcome: Outcome) -> None:
    """Copy the run's JUnit report and write its summary to `$SESSIONSTORE_SUITE_REPORTS`."""
    where = os.environ.get("SESSIONSTORE_SUITE_REPORTS")
    if not where:
        return
    folder = Path(where)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(report, folder / report.name)
    summary = {
        "suite": suite.name,
        "distribution": f"{suite.distribution}=={importlib.metadata.version(suite.distribution)}",
        "backend": backend,
        **outcome.counts(),
        "failed_tests": sorted(outcome.ids("failed")),
    }
    (folder / f"{suite.name}-{backend}.json").write_text(json.dumps(summary, indent=2) + "\n")
