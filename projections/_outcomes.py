"""How a tool's output says it failed, and which of its lines say why.

An error's first 200 characters are, for a build or a test run, compiler banners and
collection noise; what decides is at the end: the last frame and the exception of a Python
traceback, pytest's `E   ...` lines and `FAILED ...` summary, a compiler's `error:` lines
with their location. `decisive_lines` keeps those, capped from the end. Exit codes are read
from the shapes agents write them in: Claude Code's `Exit code N` first line, Codex's `Exit
code: N` header or `{"metadata": {"exit_code": N}}` JSON and `Process exited with code N`,
pi's `Command exited with code N` last line.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

DECISIVE_CHARS = 600
"""The budget of one error's decisive lines, kept from the end."""
LINE_CHARS = 240
"""One line's budget (its head: the start of a long assertion says what it compares)."""
TAIL_LINES = 5

_EXIT = re.compile(
    r"^(?:exit code:?|exit status:?|(?:process|command) exited with code)\s*(-?\d+)\b",
    re.IGNORECASE,
)
_TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "[^"]+", line \d+')
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure)\b.*")
_PYTEST_E = re.compile(r"^E\s+\S")
_PYTEST_SUMMARY = re.compile(r"^(?:FAILED|ERROR) \S")
_PYTEST_LOCATION = re.compile(r"^[\w./\\-]+\.py:\d+: \S")
_PYTEST_TOTAL = re.compile(r"^=+ .*\b(?:failed|error|errors)\b.* =+$")
_COMPILER = re.compile(
    r"^(?:fatal )?error(?:\[\w+\])?: "  # rustc, cargo, ld
    r"|^\S+:\d+(?::\d+)?: (?:fatal )?error\b"  # gcc, clang, javac, go vet: file:line: error
    r"|^\S+\(\d+,\d+\): error TS\d+"  # tsc: file(line,col): error TS1234
)
_RUST_LOCATION = re.compile(r"^\s*--> \S+:\d+")


def exit_code(output: str) -> int | None:
    """The exit code an output reports in its first or last three non-empty lines, or in a
    Codex JSON envelope; `None` when it reports none."""
    envelope = _envelope(output)
    if envelope is not None:
        return envelope[1]
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines[:3] + lines[-3:]:
        found = _EXIT.match(line)
        if found:
            return int(found.group(1))
    return None


def command_output(output: str) -> str:
    """The command's own output: a Codex JSON envelope's `output`, else the output as is."""
    envelope = _envelope(output)
    return envelope[0] if envelope is not None else output


def _envelope(output: str) -> tuple[str, int | None] | None:
    if not output.startswith("{") or '"metadata"' not in output:
        return None
    try:
        value = json.loads(output)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("output"), str):
        return None
    metadata = value.get("metadata")
    code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    return value["output"], code if isinstance(code, int) else None


@dataclass(frozen=True, slots=True)
class Decisive:
    """An output's decisive lines and what kind of failure they come from: `pytest`,
    `traceback`, `compiler`, or `tail` (none recognised: its last lines)."""

    kind: str
    text: str


def decisive_lines(output: str, budget: int = DECISIVE_CHARS) -> Decisive:
    """What an output's failure comes down to, at most `budget` characters kept from the end."""
    lines = [line.rstrip() for line in output.splitlines()]
    for kind, pick in (("pytest", _pytest), ("traceback", _traceback), ("compiler", _compiler)):
        picked = pick(lines)
        if picked:
            return Decisive(kind, _capped(picked, budget))
    tail = [line for line in lines if line.strip()][-TAIL_LINES:]
    return Decisive("tail", _capped(tail, budget))


def _pytest(lines: list[str]) -> list[str]:
    """`path.py:12: AssertionError` locations, `E   ...` lines, `FAILED ...` summaries and
    the `=== 1 failed ... ===` total: present only when pytest printed its failures."""
    if not any(_PYTEST_E.match(line) for line in lines) and not any(
        _PYTEST_SUMMARY.match(line) for line in lines
    ):
        return []
    return [
        line
        for line in lines
        if _PYTEST_E.match(line)
        or _PYTEST_SUMMARY.match(line)
        or _PYTEST_LOCATION.match(line)
        or _PYTEST_TOTAL.match(line)
    ]


def _traceback(lines: list[str]) -> list[str]:
    """The last traceback's last frame (with its source line) and the exception after it."""
    starts = [n for n, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if not starts:
        return []
    body = lines[starts[-1] + 1 :]
    frames = [n for n, line in enumerate(body) if _FRAME.match(line)]
    if not frames:
        return []
    last = frames[-1]
    picked = [body[last].strip()]
    rest = body[last + 1 :]
    if rest and rest[0].startswith("    "):  # the frame's source line
        picked.append(rest[0].strip())
        rest = rest[1:]
    exception = [line for line in rest if line.strip()]
    return picked + exception[:TAIL_LINES] if exception else []


def _compiler(lines: list[str]) -> list[str]:
    """Lines that start as a compiler's errors do (`file:line:col: error: ...`, `error[E0308]:
    ...`, tsc's `file(line,col): error TS...`), with rustc's `--> file:line` after."""
    picked = []
    for n, line in enumerate(lines):
        if _COMPILER.match(line.strip()):
            picked.append(line.strip())
            following = lines[n + 1] if n + 1 < len(lines) else ""
            if _RUST_LOCATION.match(following):
                picked.append(following.strip())
    return picked


def _capped(lines: list[str], budget: int) -> str:
    cut = LINE_CHARS - 1
    shortened = [line if len(line) <= LINE_CHARS else line[:cut] + "…" for line in lines]
    text = "\n".join(shortened)
    return text if len(text) <= budget else "…" + text[len(text) - budget + 1 :]


def failed_by_its_output(output: str) -> bool:
    """Whether an output with no exit code and no error flag still shows a failure: pytest
    failures, a traceback ending in its exception, or compiler errors."""
    lines = [line.rstrip() for line in output.splitlines()]
    if _pytest(lines) or _compiler(lines):
        return True
    tail = [line for line in lines if line.strip()][-TAIL_LINES:]
    return bool(_traceback(lines)) and any(_EXCEPTION.match(line) for line in tail)


# which later call counts as the fix


_WRAPPERS = ("uv run", "poetry run", "pdm run", "hatch run", "npx", "pnpm exec", "bunx", "sudo")
_SUBCOMMANDS = frozenset(
    {"cargo", "go", "npm", "pnpm", "yarn", "bun", "git", "docker", "dotnet", "mvn", "gradle"}
)
_TEST_RUNNERS = frozenset(
    {"pytest", "cargo test", "go test", "npm test", "pnpm test", "yarn test", "bun test"}
    | {"jest", "vitest", "tox", "nox", "unittest", "mvn test", "gradle test", "dotnet test"}
)


@dataclass(frozen=True, slots=True)
class CommandKey:
    """A command as its program and targets: `cd x && uv run pytest tests/a.py -q` is
    (`pytest`, (`tests/a.py`,)). Flags and their order do not matter."""

    runner: str
    targets: frozenset[str]

    def fixed_by(self, later: CommandKey) -> bool:
        """Whether `later` succeeding means this command's failure is fixed: the same program
        on the same targets, on targets that contain them (`tests/a.py` contains
        `tests/a.py::test_x`), or a test runner on the whole suite."""
        if later.runner != self.runner:
            return False
        if not later.targets:
            return not self.targets or self.runner in _TEST_RUNNERS
        return all(
            any(t == s or t.startswith((s + "::", s.rstrip("/") + "/")) for s in later.targets)
            for t in self.targets
        )


def command_key(command: str) -> CommandKey:
    """The key of a command's last step (after `cd ... &&` and the like)."""
    step = re.split(r"&&|;|\|\|", command)[-1].strip()
    try:
        words = shlex.split(step)
    except ValueError:
        words = step.split()
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # VAR=value prefixes
    text = " ".join(words)
    for wrapper in _WRAPPERS:
        if text.startswith(wrapper + " "):
            words = words[len(wrapper.split()) :]
            break
    if len(words) >= 3 and words[0].startswith("python") and words[1] == "-m":
        words = words[2:]
    if not words:
        return CommandKey(step, frozenset())
    runner, rest = words[0].rsplit("/", 1)[-1], words[1:]
    if runner in _SUBCOMMANDS and rest and not rest[0].startswith("-"):
        runner, rest = f"{runner} {rest[0]}", rest[1:]
    return CommandKey(runner, frozenset(word for word in rest if not word.startswith("-")))
