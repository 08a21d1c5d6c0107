"""The pytest picker of decisive lines searches the joined output for the lines it reads; it
picks exactly what reading the output line by line picks (that reading, kept here as the
oracle), whatever the lines."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from sessionstore.projections._outcomes import _pytest

E_LINE = re.compile(r"^E\s+\S")
SUMMARY = re.compile(r"^(?:FAILED|ERROR) \S")
LOCATION = re.compile(r"^[\w./\\-]+\.py:\d+: \S")
TOTAL = re.compile(r"^=+ .*\b(?:failed|error|errors)\b.* =+$")


def line_by_line(lines: list[str]) -> list[tuple[int, str]]:
    if not any(E_LINE.match(line) or SUMMARY.match(line) for line in lines):
        return []
    picked: list[tuple[int, str]] = []
    first_block: bool | None = None
    for line in lines:
        if E_LINE.match(line):
            first_block = first_block is None or first_block
            picked.append((1 if first_block else 3, line))
            continue
        if first_block:
            first_block = False
        if SUMMARY.match(line) or TOTAL.match(line):
            picked.append((0, line))
        elif LOCATION.match(line):
            picked.append((2, line))
    return picked


LINES = st.lists(
    st.sampled_from(
        [
            "E   assert 1 == 2",
            "E",
            "E\tx",
            "E\u00a0y",
            "FAILED tests/a.py::t - x",
            "ERROR x",
            "ERRORx",
            "tests/a.py:12: AssertionError",
            "a.py:3: e",
            "==== 1 failed in 2s ====",
            "=== 2 passed ===",
            "= x errors =",
            "",
            "plain",
            " E   indented",
        ]
    )
    | st.text(alphabet="E =FAILD.py:1 \t", max_size=12).map(str.rstrip),
    max_size=14,
)


@given(LINES)
def test_the_picks_are_those_of_reading_line_by_line(lines: list[str]) -> None:
    assert _pytest(lines) == line_by_line(lines)


def test_a_failure_block_then_its_summary() -> None:
    lines = [
        "tests/test_a.py:3: in test_a",
        "E   assert 3 == 4",
        "E    +  where 3 = f()",
        "tests/test_a.py:7: AssertionError",
        "E   later",
        "FAILED tests/test_a.py::test_a - assert 3 == 4",
        "==== 1 failed, 2 passed in 0.1s ====",
    ]
    assert _pytest(lines) == [
        (2, "tests/test_a.py:3: in test_a"),
        (1, "E   assert 3 == 4"),
        (1, "E    +  where 3 = f()"),
        (2, "tests/test_a.py:7: AssertionError"),
        (3, "E   later"),
        (0, "FAILED tests/test_a.py::test_a - assert 3 == 4"),
        (0, "==== 1 failed, 2 passed in 0.1s ===="),
    ]
