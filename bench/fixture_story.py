"""What a long coding-agent session does, told once for any agent's format: tasks the user
asks for (some pasted at length, some stating preferences), and for each the agent's replies
of tool acts (search, read, run the tests and fail, edit, fail an edit, run again, type-check
or build, write a new file, update the todo list) with the outputs a real project prints.

`bench.make_fixtures` writes a story as a Claude Code transcript or a Codex rollout.
Deterministic for a given seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from bench import fixture_text as text

HUGE_RUN_TASK = 5
"""The task whose passing test runs are verbose listings of a few thousand tests: outputs over
the truncation limit, as a `-v` run of a real suite prints."""

ActKind = Literal["read", "search", "edit", "write", "run", "todos"]


@dataclass(frozen=True)
class Act:
    """One tool call and its outcome. `path` is as the agent names it (absolute for Claude
    Code, relative to the workspace for Codex); `output` is what the tool printed."""

    kind: ActKind
    path: str = ""
    command: str = ""
    output: str = ""
    old: str = ""
    new: str = ""
    exit_code: int = 0
    failed: bool = False
    todos: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Reply:
    text: str
    acts: tuple[Act, ...]


@dataclass(frozen=True)
class Task:
    """One user request and the agent's work on it. `injected` are texts the agent wrote into
    the user's turn before it (reminders, command echoes)."""

    request: str
    replies: tuple[Reply, ...]
    answer: str
    injected: tuple[str, ...] = ()


@dataclass
class Project:
    """A workspace: its root, language, files (relative paths) and the user's requests."""

    root: str
    language: Literal["python", "rust"]
    sources: list[str]
    tests: list[str]
    requests: list[str]
    absolute: bool
    files: dict[str, str] = field(default_factory=dict)

    def shown(self, path: str) -> str:
        return f"{self.root}/{path}" if self.absolute else path


def story(project: Project, seed: int) -> list[Task]:
    """The tasks of a session on `project`, one per request."""
    rng = random.Random(seed)
    make = text.python_module if project.language == "python" else text.rust_module
    for path in project.sources + project.tests:
        project.files[path] = make(rng, path, rng.randrange(6, 36))
    teller = _Teller(project, rng)
    return [teller.task(n, request) for n, request in enumerate(project.requests)]


class _Teller:
    def __init__(self, project: Project, rng: random.Random) -> None:
        self.p = project
        self.rng = rng
        self.replies: list[Reply] = []
        self.task_number = 0
        self.rust_tests = [f"{m}::tests::{text.name(rng, 2)}" for m in ("chunk", "render", "io")]
        self.rust_tests = [f"{t}_{n}" for n in range(12) for t in self.rust_tests]

    def task(self, n: int, request: str) -> Task:
        self.replies = []
        self.task_number = n
        rng, p = self.rng, self.p
        if n % 3 == 0:
            self._todos(n)
        module = rng.choice(p.sources)
        self._reply("Let me look at the code first.", [self._search(), self._read(module)])
        for extra in rng.sample(p.sources + p.tests, rng.randrange(1, 4)):
            self._reply("", [self._read(extra)])
        if rng.random() < 0.8:
            self._fail_and_fix(module)
        else:
            self._reply("Running the tests.", [self._tests_pass()])
        if rng.random() < 0.4:
            self._check_and_fix()
        if rng.random() < 0.25:
            self._write_new()
        if p.language == "python" and rng.random() < 0.2:
            self._traceback_and_fix(module)
        injected: tuple[str, ...] = ()
        if p.absolute and n % 4 == 2:
            injected = (
                "<system-reminder>\nThe TodoWrite tool hasn't been used recently. If you're "
                "working on tasks that would benefit from tracking progress, consider using "
                "it.\n</system-reminder>",
            )
        answer = f"Done: {request.splitlines()[0][:60]}. The test suite passes."
        return Task(request, tuple(self.replies), answer, injected)

    def _reply(self, say: str, acts: list[Act]) -> None:
        self.replies.append(Reply(say, tuple(acts)))

    # acts

    def _read(self, path: str) -> Act:
        content = self.p.files[path]
        if self.p.absolute:
            return Act("read", path=self.p.shown(path), output=text.numbered(content))
        shown = "\n".join(content.splitlines()[:400])
        return Act("run", command=f"sed -n '1,400p' {path}", output=shown)

    def _search(self) -> Act:
        pattern = text.name(self.rng, 2)
        hits = text.search_hits(
            self.rng, [self.p.shown(s) for s in self.p.sources], pattern, self.rng.randrange(3, 40)
        )
        if self.p.absolute:
            return Act("search", command=pattern, output=hits)
        return Act("run", command=f"rg -n '{pattern}' src tests", output=hits)

    def _edit(self, path: str, fail: bool = False) -> Act:
        lines = self.p.files[path].splitlines()
        at = self.rng.randrange(len(lines))
        old = lines[at] if lines[at].strip() else "    return value"
        if fail:
            wrong = old.replace("value", "amount") + "  # stale"
            output = (
                f"<tool_use_error>String to replace not found in file.\nString: {wrong}"
                "</tool_use_error>"
                if self.p.absolute
                else f"apply_patch verification failed: Failed to find expected lines in "
                f"{path}:\n{wrong}"
            )
            return Act(
                "edit", path=self.p.shown(path), old=wrong, new=old, output=output, failed=True
            )
        new = old.rstrip() + f"  # {text.name(self.rng, 2)}"
        lines[at] = new
        self.p.files[path] = "\n".join(lines) + "\n"
        snippet = text.numbered("\n".join(lines[max(0, at - 4) : at + 5]), max(1, at - 3))
        output = (
            f"The file {self.p.shown(path)} has been updated. Here's the result of running "
            f"`cat -n` on a snippet of the edited file:\n{snippet}"
            if self.p.absolute
            else f"Success. Updated the following files:\nM {path}\n"
        )
        return Act("edit", path=self.p.shown(path), old=old, new=new, output=output)

    def _run(self, command: str, output: str, code: int) -> Act:
        return Act("run", command=command, output=output, exit_code=code, failed=code != 0)

    def _tests_pass(self) -> Act:
        if self.p.language == "rust":
            return self._run("cargo test", text.cargo_test_pass(self.rng, self.rust_tests), 0)
        verbose = self.rng.random() < 0.3 or self.task_number == HUGE_RUN_TASK
        per_file = 1_200 if self.task_number == HUGE_RUN_TASK else 40
        log = text.pytest_pass(self.rng, self.p.root, self.p.tests, verbose, per_file)
        return self._run("uv run pytest -q" + (" -v" if verbose else ""), log, 0)

    def _tests_fail(self) -> tuple[Act, str]:
        """A failing run, and the file that the fix goes into."""
        rng = self.rng
        if self.p.language == "rust":
            failing = rng.choice(self.rust_tests)
            if rng.random() < 0.4:
                path = rng.choice(self.p.sources)
                build = text.cargo_build_error(rng, self.p.root, path)
                return self._run("cargo test", build.log, 101), path
            failure = text.cargo_test_failure(rng, self.rust_tests, failing)
            return self._run("cargo test", failure.log, 101), rng.choice(self.p.sources)
        test_file = rng.choice(self.p.tests)
        test = f"test_{text.name(rng, 3)}"
        got = f"Decimal('{rng.randrange(1, 99)}.{rng.randrange(100, 999)}')"
        failure = text.pytest_failure(rng, self.p.root, self.p.tests, test_file, test, got)
        return self._run(f"uv run pytest {test_file} -q", failure.log, 1), test_file

    def _fail_and_fix(self, module: str) -> None:
        rng = self.rng
        failing, test_file = self._tests_fail()
        self._reply("Running the tests to see what fails.", [failing])
        self._reply("", [self._read(test_file)])
        if rng.random() < 0.15:
            self._reply("", [self._edit(module, fail=True)])
            self._reply("The file changed; reading it again.", [self._read(module)])
        self._reply("Fixing the parser.", [self._edit(module)])
        if rng.random() < 0.35:
            again, test_file = self._tests_fail()
            self._reply("", [again])
            self._reply("Another failure; fixing it too.", [self._edit(rng.choice(self.p.sources))])
        self._reply("Running the tests again.", [self._tests_pass()])

    def _check_and_fix(self) -> None:
        rng = self.rng
        paths = rng.sample(self.p.sources, rng.randrange(1, 3))
        if self.p.language == "rust":
            build = text.cargo_build_error(rng, self.p.root, paths[0])
            self._reply("Checking the build.", [self._run("cargo build", build.log, 101)])
            self._reply("", [self._edit(paths[0])])
            self._reply("", [self._run("cargo build", "    Finished `dev` profile in 2.1s", 0)])
            return
        errors = text.mypy_errors(rng, paths)
        self._reply("Type-checking.", [self._run("uv run mypy src", errors.log, 1)])
        self._reply("", [self._edit(path) for path in paths])
        ok = "Success: no issues found in 41 source files"
        self._reply("", [self._run("uv run mypy src", ok, 0)])

    def _write_new(self) -> None:
        rng, p = self.rng, self.p
        folder = rng.choice(["src/ledger" if p.language == "python" else "src", "tests"])
        suffix = ".py" if p.language == "python" else ".rs"
        path = f"{folder}/{text.name(rng, 2)}{suffix}"
        make = text.python_module if p.language == "python" else text.rust_module
        content = make(rng, path, rng.randrange(3, 10))
        p.files[path] = content
        (p.sources if folder != "tests" else p.tests).append(path)
        output = f"File created successfully at: {p.shown(path)}"
        if not p.absolute:
            output = f"Success. Updated the following files:\nA {path}\n"
        self._reply(
            "Adding a new module.", [Act("write", path=p.shown(path), new=content, output=output)]
        )
        self._reply("", [self._tests_pass()])

    def _traceback_and_fix(self, module: str) -> None:
        crash = text.python_traceback(self.rng, self.p.root, module, "Betrag")
        command = "uv run ledger import tests/fixtures/export_de.csv"
        self._reply("Trying the CLI on the sample export.", [self._run(command, crash.log, 1)])
        self._reply("", [self._edit(module)])
        self._reply("", [self._run(command, "Imported 38 rows into ledger.db", 0)])

    def _todos(self, n: int) -> None:
        steps = ["Reproduce the failure", "Fix the parser", "Run the whole suite", "Type-check"]
        statuses = ("completed", "in_progress", "pending", "pending")
        shift = (n // 3) % 3
        items = tuple(
            (f"{step} (task {n})", statuses[(i + shift) % 4]) for i, step in enumerate(steps)
        )
        output = (
            "Todos have been modified successfully. Ensure that you continue to use the todo "
            "list to track your progress. Please proceed with the current tasks if applicable"
        )
        if not self.p.absolute:
            output = "Plan updated"
        self._reply("Updating the plan.", [Act("todos", todos=items, output=output)])
