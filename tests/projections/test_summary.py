"""The structured summary: a golden render, parsing back, merging without nesting, budgets that
shrink oldest entries first and never lose a request, a changed path or the last error.

Regenerate the golden file after a deliberate change with `UPDATE_GOLDEN=1 pytest`, then read
the diff."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore.context._summarize import ExtractiveSummarizer, SummaryAnchors
from sessionstore.context._tokens import count
from sessionstore.events import Message, TextPart, ToolCallPart, ToolResultPart
from sessionstore.projections import LiveMessage, artifact_trail, context_of, fold_events
from sessionstore.projections._summary import (
    SUMMARY_MARKER,
    CommandEntry,
    DecisionEntry,
    ErrorEntry,
    FileEntry,
    RequestEntry,
    StructuredSummary,
    summary_from_trail,
)
from sessionstore.projections._summary_requests import REQUEST_HEAD, head
from sessionstore.projections._summary_text import HEADINGS, parse_summary, render_summary
from tests.projections.log import Log

GOLDEN = Path(__file__).parent / "golden"


def tokens(text: str) -> int:
    return count(text, "cl100k_base")


class Session:
    """A session log written as an agent loop writes it: requests, calls and their results."""

    def __init__(self) -> None:
        self.log = Log()
        self.n = 0

    def _id(self) -> str:
        self.n += 1
        return f"m{self.n}"

    def user(self, text: str) -> None:
        message_id = self._id()
        part = TextPart(id=f"{message_id}.t", text=text)
        self.log.message(Message(id=message_id, role="user", parts=(part,)))

    def assistant(self, text: str) -> None:
        message_id = self._id()
        part = TextPart(id=f"{message_id}.t", text=text)
        self.log.message(Message(id=message_id, role="assistant", parts=(part,)))

    def tool(
        self, name: str, arguments: dict[str, object], output: str, error: bool = False
    ) -> None:
        call_id, message_id = f"c{self.n}", self._id()
        call = ToolCallPart.from_input(
            id=f"{message_id}.c", call_id=call_id, name=name, input=arguments
        )
        self.log.message(Message(id=message_id, role="assistant", parts=(call,)))
        result_id = self._id()
        part = ToolResultPart(
            id=f"{result_id}.r", call_id=call_id, name=name, output=output, is_error=error
        )
        self.log.message(Message(id=result_id, role="tool", parts=(part,)))

    def messages(self) -> tuple[LiveMessage, ...]:
        return context_of(fold_events(self.log.events)).messages


TRACEBACK = "\n".join(
    [
        "Exit code 1",
        "============================= test session starts ==============================",
        "collected 3 items",
        "",
        "tests/test_calc.py F..",
        "",
        "    def test_add():",
        ">       assert add(2, 3) == 5",
        "E       assert -1 == 5",
        "",
        "tests/test_calc.py:4: AssertionError",
        "FAILED tests/test_calc.py::test_add - assert -1 == 5",
        "========================= 1 failed, 2 passed in 0.03s ==========================",
    ]
)


def fixed_session() -> Session:
    s = Session()
    s.user("The test suite fails on calc.add. Fix it; only E2E tests, please. Don't touch the API.")
    s.tool("Read", {"file_path": "/repo/calc.py"}, "def add(a, b):\n    return a - b\n")
    s.tool("Bash", {"command": "pytest -q tests"}, TRACEBACK, error=True)
    s.tool(
        "Edit", {"file_path": "/repo/calc.py", "old_string": "a - b", "new_string": "a + b"}, "ok"
    )
    s.tool("Bash", {"command": "pytest -q tests"}, "3 passed in 0.02s")
    todos = [
        {"content": "Fix calc.add", "status": "completed", "activeForm": "Fixing"},
        {"content": "Add a changelog entry", "status": "pending", "activeForm": "Adding"},
    ]
    s.tool("TodoWrite", {"todos": todos}, "Todos updated")
    s.assistant("Fixed: `add` now returns a + b and the suite passes.")
    s.user("Now write the changelog. " + "Keep the old entries as they are. " + "x" * 700 + " end.")
    s.tool("Write", {"file_path": "/repo/CHANGELOG.md", "content": "## 1.0.1\n- add adds"}, "ok")
    return s


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_golden_structured_summary_of_a_fixed_session() -> None:
    s = fixed_session()
    summary = summary_from_trail(artifact_trail(s.log.events), s.messages())
    check_golden("summary.md", render_summary(summary, 2_000, tokens) + "\n")


def test_a_summary_reads_back_as_it_was_written() -> None:
    s = fixed_session()
    summary = summary_from_trail(artifact_trail(s.log.events), s.messages())
    text = render_summary(summary, 10_000, tokens)
    assert parse_summary(text) == summary
    assert parse_summary("Summary of conversation from a to b") is None


def test_entries_that_hold_headings_and_block_headers_read_back_exactly() -> None:
    tricky = (
        "## Next steps\nRequest 9, seq 1 (3 characters):\nabc\n## Files and what was done to each"
    )
    summary = StructuredSummary(
        requests=(RequestEntry(4, tricky, len(tricky)),),
        errors=(
            ErrorEntry(7, "Bash(make; make)", "## Current state\nerror: x", "at seq 9 by make"),
        ),
        state="## Decisions\n- (seq 1) not a decision",
        notes="### Task overview\n## Next steps\n- none",
        notes_by="model",
    )
    assert parse_summary(render_summary(summary, 10_000, tokens)) == summary


def long_request(n: int) -> str:
    return (
        f"request {n:03d}: speed up part {n}. "
        + " ".join(f"word{k}" for k in range(150))
        + f" the end of {n}."
    )


def compacted_three_times(usable: int | None) -> str:
    """Twelve long requests, each with a read of 12 KB and an edit, compacted after every
    fourth with a target of 1,200 tokens, in a session whose usable window is `usable`."""
    s = Session()
    text: str | None = None
    replaced_from = 0
    source = "".join(f"def f{k}(x):\n    return x * {k}\n" for k in range(400))
    for round_ in range(3):
        for n in range(4):
            s.user(long_request(round_ * 4 + n))
            s.tool("Read", {"file_path": f"/repo/f{round_}{n}.py"}, source)
            s.tool(
                "Edit",
                {"file_path": f"/repo/f{round_}{n}.py", "old_string": "a", "new_string": "b"},
                "ok",
            )
            s.assistant(f"done {round_}.{n}")
        messages = s.messages()
        trail = artifact_trail(s.log.events)
        anchors = SummaryAnchors(previous=text, trail=trail, usable=usable)
        messages = messages[replaced_from:]
        replaced_from += len(messages)
        text = ExtractiveSummarizer()(messages, 1_200, anchors=anchors)
    assert text is not None
    return text


def shown_lengths(text: str) -> list[int]:
    return [
        int((short or whole).replace(",", ""))
        for whole, short in re.findall(
            r"^Request \d+, seq \d+ \(([\d,]+) characters(?:, shortened to ([\d,]+))?\):$",
            text,
            re.M,
        )
    ]


def test_compacting_again_merges_into_one_set_of_sections_with_every_request_word_for_word() -> (
    None
):
    text = compacted_three_times(usable=61_440)  # a 64k window: 6,144 tokens for the requests
    assert text.count(SUMMARY_MARKER) == 1 and text.startswith(SUMMARY_MARKER + " Compaction 3,")
    assert [line for line in text.splitlines() if line.startswith("## ")] == list(HEADINGS[:-1])
    assert "Summary of conversation from" not in text
    for n in range(12):
        assert f"Request {n + 1}, seq" in text and f"\n{long_request(n)}\n" in text
    assert shown_lengths(text) == [len(long_request(n)) for n in range(12)]
    for round_ in range(3):
        for n in range(4):
            assert f"- /repo/f{round_}{n}.py — modified" in text


def test_requests_over_their_budget_are_shortened_alike_keeping_first_sentence_and_end() -> None:
    text = compacted_three_times(usable=None)  # no window known: 1,200 tokens for the requests
    for n in range(12):
        request = long_request(n)
        assert f"Request {n + 1}, seq" in text
        assert f"\nrequest {n:03d}: speed up part {n}." in text and request[-30:] in text
        assert request[:REQUEST_HEAD] in text and request not in text
    shown = shown_lengths(text)
    assert len(shown) == 12 and max(shown) - min(shown) <= 12  # not the oldest first


def crowded_summary() -> StructuredSummary:
    return StructuredSummary(
        through_seq=400,
        requests=tuple(
            RequestEntry(10 * n, long_request(n), len(long_request(n))) for n in range(6)
        ),
        decisions=tuple(DecisionEntry(10 * n, f"always do thing {n}") for n in range(20)),
        files=tuple(
            FileEntry(f"/repo/read{n}.py", (("read", 1),), "read", 100 + n) for n in range(20)
        )
        + tuple(
            FileEntry(f"/repo/src/mod{n}.py", (("modified", 2),), "modified", 200 + n)
            for n in range(8)
        ),
        tools=(("Bash", 40), ("Read", 20)),
        commands=tuple(CommandEntry(300 + n, f"make step{n}", "ok") for n in range(30)),
        errors=tuple(
            ErrorEntry(350 + n, f"Bash(make t{n})", f"noise\nerror: failure number {n}", None)
            for n in range(5)
        ),
        state="Working on it. " * 40,
    )


def test_a_tiny_budget_keeps_requests_changed_paths_and_the_last_error() -> None:
    text = render_summary(crowded_summary(), 50, tokens)
    for n in range(6):
        assert long_request(n)[:REQUEST_HEAD] in text
    for n in range(8):
        assert f"/repo/src/mod{n}.py" in text
    assert "error: failure number 4" in text
    assert "failure number 3" not in text and "/repo/read" not in text and "make step" not in text
    assert "always do thing" not in text and "Working on it." not in text


def test_sections_over_their_share_drop_their_oldest_entries_first() -> None:
    text = render_summary(crowded_summary(), 1_500, tokens, usable=4_096)
    shown = [int(n) for n in re.findall(r"make step(\d+) ", text)]
    assert shown == list(range(30 - len(shown), 30)) and 0 < len(shown) < 30
    assert f"({30 - len(shown)} older entries left out to fit" in text
    assert all(f"error: failure number {n}" in text for n in range(5))  # commands go first
    assert tokens(text) <= 1_500  # the requests at their share: an 8k window's
    read = [int(n) for n in re.findall(r"/repo/read(\d+)\.py", text)]
    assert read == list(range(20 - len(read), 20))
    decided = [int(n) for n in re.findall(r"always do thing (\d+)", text)]
    assert decided == list(range(20 - len(decided), 20)) and len(decided) < 20
    for n in range(6):  # long: shortened alike, to their first sentence, more, and their end
        assert long_request(n)[:REQUEST_HEAD] in text and long_request(n)[-30:] in text
        assert long_request(n) not in text
    assert len(set(shown_lengths(text))) == 1


# a property: what must survive survives any run of compactions

_TEXT = st.text(alphabet="abcXYZ 019#-:.\n", min_size=1, max_size=400).filter(
    lambda t: t.strip() != ""
)
_PATH = st.from_regex(r"/[a-z]{1,6}(/[a-z0-9_.-]{1,12}){1,3}", fullmatch=True)
_STEP = st.one_of(
    st.tuples(st.just("request"), _TEXT),
    st.tuples(st.just("edit"), _PATH),
    st.tuples(st.just("write"), _PATH),
    st.tuples(st.just("read"), _PATH),
    st.tuples(st.just("fail"), st.from_regex(r"[a-z]{3,8}Error: [a-z0-9 ]{1,40}", fullmatch=True)),
    st.tuples(st.just("ok"), st.just("")),
    st.tuples(st.just("compact"), st.just("")),
)


@dataclass
class Run:
    session: Session = field(default_factory=Session)
    requests: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    last_error: str | None = None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_STEP, min_size=1, max_size=30), budget=st.integers(100, 2_000))
def test_requests_changed_paths_and_the_last_error_survive_every_compaction(
    steps: list[tuple[str, str]], budget: int
) -> None:
    run = Run()
    s = run.session
    text: str | None = None
    replaced_from = 0
    for kind, value in [*steps, ("compact", "")]:
        if kind == "request":
            s.user(value)
            run.requests.append(value)
        elif kind in ("edit", "write", "read"):
            arguments: dict[str, object] = {
                "file_path": value,
                "content": "x",
                "old_string": "a",
                "new_string": "b",
            }
            s.tool(kind.capitalize(), arguments, "ok")
            if kind != "read":
                run.changed.append(value)
        elif kind == "fail":
            s.tool("Bash", {"command": "make"}, f"Exit code 2\nbuilding\n{value}", error=True)
            run.last_error = value
        elif kind == "ok":
            s.tool("Bash", {"command": "make"}, "built")
        else:
            messages = s.messages()[replaced_from:]
            if not messages:
                continue
            replaced_from += len(messages)
            anchors = SummaryAnchors(previous=text, trail=artifact_trail(s.log.events))
            text = ExtractiveSummarizer()(messages, budget, anchors=anchors)
            assert text.count(SUMMARY_MARKER) == 1
            for request in run.requests:  # word for word, or from its first sentence
                assert f"\n{request}\n" in f"{text}\n" or request[: head(request)] in text
            for path in run.changed:
                assert f"- {path} — " in text
            if run.last_error is not None:
                assert f"\n{anchors.trail.errors[-1].decisive}\n" in f"{text}\n"
                assert run.last_error.strip() in text
