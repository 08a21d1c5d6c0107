"""A scripted coding agent: turns of reads, greps, edits and test runs with realistic
output sizes, and a driver that plays it through a `Session` the way an agent loop does.

Deterministic for a given seed, so tests can assert on it and benchmarks can repeat it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from sessionstore.events import Usage
from sessionstore.session import ContextCheck, Session, ToolCall


@dataclass(frozen=True)
class Step:
    """One tool call the scripted model makes, and what the tool returns."""

    tool: str
    input: dict[str, str]
    output: str
    is_error: bool = False


@dataclass(frozen=True)
class Turn:
    request: str
    steps: tuple[tuple[Step, ...], ...]  # each inner tuple: the parallel calls of one reply
    answer: str


def _python_file(rng: random.Random, path: str, size: int) -> str:
    lines = [f"# {path}", "from __future__ import annotations", ""]
    written = sum(len(line) + 1 for line in lines)
    while written < size:
        name = f"f_{rng.randrange(10_000)}"
        block = [
            f"def {name}(value: int) -> int:",
            f'    """Return {name} of value."""',
            f"    return value * {rng.randrange(2, 99)} + {rng.randrange(100)}",
            "",
        ]
        lines += block
        written += sum(len(line) + 1 for line in block)
    return "\n".join(lines)


def _grep(rng: random.Random, pattern: str) -> str:
    hits = rng.randrange(3, 80)
    return "\n".join(
        f"src/m{rng.randrange(60)}.py:{rng.randrange(1, 900)}:    {pattern}(value)"
        for _ in range(hits)
    )


def _test_run(rng: random.Random, failing: int, size: int) -> str:
    lines = ["============================= test session starts =============================="]
    written = len(lines[0]) + 1
    while written < size:
        line = f"tests/test_m{rng.randrange(60)}.py::test_{rng.randrange(999)} PASSED"
        lines.append(line)
        written += len(line) + 1
    for n in range(failing):
        lines += [f"FAILED tests/test_m{n}.py::test_case - AssertionError: assert 3 == 4"]
    lines.append(f"==== {failing} failed, {len(lines)} passed in {rng.uniform(1, 9):.2f}s ====")
    return "\n".join(lines)


def coding_session(turns: int = 300, seed: int = 7) -> Iterator[Turn]:
    """`turns` user requests, each answered by 2 to 5 replies of 1 or 2 tool calls; every 50th
    turn's first test run prints a 400 KB log."""
    rng = random.Random(seed)
    for n in range(turns):
        module = f"src/m{rng.randrange(60)}.py"
        replies: list[tuple[Step, ...]] = []
        huge = False
        for _ in range(rng.randrange(2, 6)):
            calls = []
            for _ in range(rng.choice((1, 1, 2))):
                kind = rng.random()
                if kind < 0.35:
                    size = rng.choice((800, 2_000, 6_000, 12_000))
                    calls.append(Step("read", {"path": module}, _python_file(rng, module, size)))
                elif kind < 0.55:
                    pattern = f"f_{rng.randrange(10_000)}"
                    calls.append(Step("grep", {"pattern": pattern}, _grep(rng, pattern)))
                elif kind < 0.75:
                    failed = rng.random() < 0.08
                    output = "error: old text not found in file" if failed else f"Edited {module}"
                    calls.append(Step("edit", {"path": module}, output, is_error=failed))
                else:
                    size = rng.choice((1_500, 4_000, 15_000, 30_000))
                    if n % 50 == 49 and not huge:
                        size = 400_000  # one huge output: a whole log, truncated on append
                        huge = True
                    output = _test_run(rng, rng.randrange(0, 4), size)
                    calls.append(Step("bash", {"command": "pytest -q"}, output))
            replies.append(tuple(calls))
        yield Turn(
            request=f"Turn {n}: fix the failing tests in {module} without breaking the others.",
            steps=tuple(replies),
            answer=f"Fixed {module}; the tests pass now.",
        )


@dataclass
class DriveReport:
    """What the policies did over a whole session, and how long their calls took."""

    llm_calls: int = 0
    peak_tokens: int = 0
    peak_ratio: float = 0.0
    checks: list[ContextCheck] = field(default_factory=list)
    check_seconds: list[float] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # part id -> original output


def drive(session: Session, turns: Iterator[Turn]) -> DriveReport:
    """Play `turns` as an agent loop: append, check before every model call and after every
    batch of tool results, and record what the model would have been sent."""
    report = DriveReport()
    usable = (session.header.context_window or 0) - session.header.output_reserve
    calls = 0

    def check(point: str) -> None:
        began = time.perf_counter()
        result = session.before_llm_call() if point == "llm" else session.after_tool_result()
        report.check_seconds.append(time.perf_counter() - began)
        report.checks.append(result)

    def model_call() -> int:
        check("llm")
        sent = session.context().tokens
        report.llm_calls += 1
        report.peak_tokens = max(report.peak_tokens, sent)
        report.peak_ratio = max(report.peak_ratio, sent / usable if usable else 0.0)
        return sent

    for turn in turns:
        session.append_user(turn.request)
        for reply in turn.steps:
            sent = model_call()
            tool_calls = []
            for step in reply:
                calls += 1
                tool_calls.append(ToolCall(id=f"call_{calls}", name=step.tool, input=step.input))
            session.append_assistant(
                "Working on it.", tool_calls=tool_calls, usage=Usage(input=sent, output=40)
            )
            for tool_call, step in zip(tool_calls, reply, strict=True):
                message = session.append_tool_result(
                    tool_call.id, output=step.output, is_error=step.is_error
                )
                report.outputs[message.parts[0].id] = step.output
            check("tool")
        sent = model_call()
        session.append_assistant(turn.answer, usage=Usage(input=sent, output=12))
    return report
