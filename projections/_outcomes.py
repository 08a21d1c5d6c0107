"""How a tool's output says it failed, and which of its lines say why.

An error's first 200 characters are, for a build or a test run, compiler banners and
collection noise; what decides is further down: the last frame and the exception of a Python
traceback, pytest's `E   ...` lines and `FAILED ...` summary, a compiler's `error:` lines
with their location, a Rust test's panic and its assertion, another runtime's uncaught
`SomethingError: message` above its stack. `decisive_lines` keeps those, each once (a
workspace build prints the same error once per package), whole lines only. When they are too
many for the budget, the most decisive come first: the failing tests' summaries and the
exception, then the first failure's assertion, the first compiler error and its location
(later errors are often its consequences), then the rest in order; a last line says how many
were left out. Exit codes are read from the shapes agents write them in: Claude Code's `Exit
code N` first line, Codex's `Exit code: N` header or `{"metadata": {"exit_code": N}}` JSON and
`Process exited with code N`, pi's `Command exited with code N` last line.
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
_PYTEST_E_IN = re.compile(r"\nE[^\S\n]+\S")
_PYTEST_SUMMARY_IN = re.compile(r"\n(?:FAILED|ERROR) \S")
_PYTEST_LINE_IN = re.compile(
    r"\n(?:E[^\S\n]+\S|(?:FAILED|ERROR) \S|[\w./\\-]+\.py:\d+: \S|=+ [^\n]*=+(?=\n|\Z))"
)
"""The lines `_pytest` looks at, found in the joined output after a newline (each is then
matched as before). Each pattern begins with a newline, not `^` in multiline mode: the regex
engine then skips from newline to newline instead of trying every character."""
_COMPILER = re.compile(
    r"^(?:fatal )?error(?:\[\w+\])?: "  # rustc, cargo, ld
    r"|^\S+:\d+(?::\d+)?: (?:fatal )?error\b"  # gcc, clang, javac, go vet: file:line: error
    r"|^\S+\(\d+,\d+\): error TS\d+"  # tsc: file(line,col): error TS1234
)
_RUST_LOCATION = re.compile(r"^\s*--> \S+:\d+")
_PANIC = re.compile(r"^thread '.*' panicked at ")
_TEST_RESULT = re.compile(r"^test result: FAILED\b")
_EXCEPTION_LINE = re.compile(
    r"^(?:Uncaught )?(?:[A-Za-z_][\w.$]*)?(?:Error|Exception)(?: \[\w+\])?: \S"
)
_CARETS = re.compile(r"^[\s~^]+$")
"""Python 3.11's markers under a frame's source line."""


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
    `traceback`, `panic` (a Rust test), `compiler`, `exception` (another runtime's), or
    `tail` (none recognised: its last lines)."""

    kind: str
    text: str


Picked = list[tuple[int, str]]
"""Decisive lines in output order, each with its rank: 0 first, kept before higher ones."""


def decisive_lines(output: str, budget: int = DECISIVE_CHARS) -> Decisive:
    """What an output's failure comes down to, in at most `budget` characters: see the
    module."""
    lines = [line.rstrip() for line in output.splitlines()]
    pickers = (
        ("pytest", _pytest),
        ("traceback", _traceback),
        ("panic", _panic),
        ("compiler", _compiler),
        ("exception", _exception),
    )
    for kind, pick in pickers:
        picked = pick(lines)
        if picked:
            return Decisive(kind, _capped(picked, budget))
    tail = [line for line in lines if line.strip()][-TAIL_LINES:]
    return Decisive("tail", _capped([(0, line) for line in tail], budget))


def _exception(lines: list[str]) -> Picked:
    """Another runtime's uncaught exception (Node's `Error: Cannot find module ...` above its
    stack, a Java or .NET exception): its unindented `SomethingError: message` lines first,
    then the output's last lines, where its stack and exit often end."""
    found = [n for n, line in enumerate(lines) if _EXCEPTION_LINE.match(line)]
    if not found:
        return []
    last = [n for n, line in enumerate(lines) if line.strip()][-TAIL_LINES:]
    return [(0 if n in found else 1, lines[n].strip()) for n in sorted({*found[:2], *last})]


def _pytest(lines: list[str]) -> Picked:
    """`path.py:12: AssertionError` locations, `E   ...` lines, `FAILED ...` summaries and
    the `=== 1 failed ... ===` total: present only when pytest printed its failures. The
    summaries and the total come first, then the first failure's `E` lines.

    The lines are searched as one text (the regex engine walks a 400 KB log in a few
    milliseconds, where a match per line costs ten times that), and only the lines found are
    looked at."""
    text = "\n" + "\n".join(lines)
    if not _PYTEST_E_IN.search(text) and not _PYTEST_SUMMARY_IN.search(text):
        return []
    picked: Picked = []
    first_block: bool | None = None  # None: no E line yet; True: in the first block of them
    last_e = -2
    n, offset = -1, 0
    for found in _PYTEST_LINE_IN.finditer(text):
        n += text.count("\n", offset, found.start() + 1)
        offset = found.start() + 1
        line = lines[n]
        if _PYTEST_E.match(line):
            if first_block and last_e != n - 1:
                first_block = False  # a line that is no E line ended the first block
            first_block = first_block is None or first_block
            picked.append((1 if first_block else 3, line))
            last_e = n
            continue
        if first_block:
            first_block = False
        if _PYTEST_SUMMARY.match(line) or _PYTEST_TOTAL.match(line):
            picked.append((0, line))
        elif _PYTEST_LOCATION.match(line):
            picked.append((2, line))
    return picked


def _traceback(lines: list[str]) -> Picked:
    """The last traceback's last frame (with its source line) and the exception after it
    (Python 3.11's `~~^^` markers left out); the exception first."""
    starts = [n for n, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if not starts:
        return []
    body = lines[starts[-1] + 1 :]
    frames = [n for n, line in enumerate(body) if _FRAME.match(line)]
    if not frames:
        return []
    last = frames[-1]
    picked: Picked = [(1, body[last].strip())]
    rest = body[last + 1 :]
    if rest and rest[0].startswith("    "):  # the frame's source line
        picked.append((2, rest[0].strip()))
        rest = rest[1:]
    exception = [line for line in rest if line.strip() and not _CARETS.match(line)]
    return picked + [(0, line) for line in exception[:TAIL_LINES]] if exception else []


def _panic(lines: list[str]) -> Picked:
    """A Rust test's failures: each `thread '...' panicked at file:line:col:` with the
    message lines under it (the assertion, `left:` and `right:`), first; then cargo's `test
    result: FAILED` line and its `error:` lines."""
    picked: Picked = []
    n = 0
    while n < len(lines):
        line = lines[n]
        if _PANIC.match(line):
            picked.append((0, line.strip()))
            message = 0
            while n + 1 < len(lines) and message < TAIL_LINES - 1:
                following = lines[n + 1].strip()
                if not following or following.startswith("note: "):
                    break
                picked.append((0, following))
                message, n = message + 1, n + 1
        elif _TEST_RESULT.match(line.strip()) or (picked and _COMPILER.match(line.strip())):
            picked.append((1, line.strip()))
        n += 1
    return picked if any(_PANIC.match(line) for _, line in picked) else []


def _compiler(lines: list[str]) -> Picked:
    """Lines that start as a compiler's errors do (`file:line:col: error: ...`, `error[E0308]:
    ...`, tsc's `file(line,col): error TS...`), with rustc's `--> file:line` after; the first
    error and its location first."""
    picked: Picked = []
    for n, line in enumerate(lines):
        if _COMPILER.match(line.strip()):
            rank = 0 if not picked else 1
            picked.append((rank, line.strip()))
            following = lines[n + 1] if n + 1 < len(lines) else ""
            if _RUST_LOCATION.match(following):
                picked.append((rank, following.strip()))
    return picked


def left_out(count: int) -> str:
    return f"(… {count} more line{'' if count == 1 else 's'} left out)"


def _capped(picked: Picked, budget: int) -> str:
    """The picked lines, each once and at most `LINE_CHARS` long, in output order: as many as
    fit in `budget` characters, lowest rank first (then earliest), and a last line saying how
    many were left out."""
    cut = LINE_CHARS - 1
    seen: dict[str, int] = {}
    for rank, line in picked:
        line = line if len(line) <= LINE_CHARS else line[:cut] + "…"
        seen[line] = min(rank, seen.get(line, rank))
    lines = list(seen)
    order = sorted(range(len(lines)), key=lambda n: (seen[lines[n]], n))
    kept: set[int] = set()
    size = 0
    for n in order:
        rest = len(lines) - len(kept) - 1
        marker = len(left_out(rest)) + 1 if rest else 0
        if kept and size + len(lines[n]) + 1 + marker > budget:
            break
        kept.add(n)
        size += len(lines[n]) + 1
    shown = [lines[n] for n in sorted(kept)]
    if len(kept) < len(lines):
        shown.append(left_out(len(lines) - len(kept)))
    return "\n".join(shown)


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
