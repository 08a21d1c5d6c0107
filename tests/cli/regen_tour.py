"""The tour of docs/cli.md, from a real run: `sessionstore demo` in an empty folder, then the
commands a reader would try on the session it made, each in its own process.

`python -m tests.cli.regen_tour` runs it and writes the result into docs/cli.md, between the
tour's markers; `tests/cli/test_tour.py` runs it again and checks the page shows what the
commands print today. Rerun it when a change to context management (or to what the commands
print) changes the demo's figures: the demo is seeded, so a run prints the same figures
every time, and only the times differ from one run to the next.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from sessionstore.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"
BEGIN = (
    "<!-- The tour below is pasted from a real run by `python -m tests.cli.regen_tour`; "
    "tests/cli/test_tour.py checks it. -->"
)
END = "<!-- End of the tour. -->"
TOUR_BLOCK = re.compile(re.escape(BEGIN) + r"\n```\n(.*?)```\n" + re.escape(END), re.S)


def run_tour(folder: Path) -> str:
    """The tour as the page shows it: each command after `$ `, then what it printed; a blank
    line before each command but those that go on from the one before."""
    demo = _run(folder, "demo")
    session = _found(r"into session (\S+),", demo)
    seq = int(_found(r"Replay: the context at seq (\d+),", demo))
    diff = f"diff {session} --from {seq} --to {seq + 1}"
    steps = [
        ("demo", demo, True),
        ("ls", _run(folder, "ls"), True),
        (f"timeline {session} | head -4", _head(_run(folder, "timeline", session), 4), True),
        (f"{diff} | head -5", _head(_run(folder, *diff.split()), 5), True),
        ("stats", _run(folder, "stats"), True),
        (
            f"export {session} -o demo.jsonl",
            _run(folder, "export", session, "-o", "demo.jsonl"),
            True,
        ),
    ]
    for command in ["import demo.jsonl", "verify --all"]:
        steps.append(
            (f"--db {COPY} {command}", _run(folder, "--db", COPY, *command.split()), False)
        )
    return "".join(
        ("\n" if gap and n else "") + f"$ sessionstore {command}\n{output}"
        for n, (command, output, gap) in enumerate(steps)
    )


COPY = "sqlite:///copy.db"


def normalized(tour: str) -> str:
    """The tour with what differs from one run to the next masked: the dates and times, and
    the database file's size (it holds as much of the write-ahead log as SQLite has not yet
    checkpointed, which depends on timing)."""
    tour = re.sub(r"(?m)^(file +)[\d,]+ bytes", r"\1N bytes", tour)
    tour = re.sub(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)", "YYYY-MM-DD", tour)
    return re.sub(r"(?<!\d)\d{2}:\d{2}:\d{2}(?!\d)", "hh:mm:ss", tour)


def shown_tour(page: str) -> str:
    """The tour the page shows, between its markers."""
    match = TOUR_BLOCK.search(page)
    if match is None:
        raise ValueError(f"no tour between {BEGIN!r} and {END!r} in {PAGE}")
    return match.group(1)


def _run(folder: Path, *args: str) -> str:
    """What `sessionstore ARGS` prints in `folder` (its standard output and error, as a
    terminal shows them), on the default database there. Through the entry point the
    `sessionstore` script calls, in this process: one start instead of one per command."""
    printed = io.StringIO()
    with contextlib.chdir(folder), redirect_stdout(printed), redirect_stderr(printed):
        code = main(list(args))
    if code != 0:
        raise RuntimeError(f"sessionstore {' '.join(args)} exited {code}:\n{printed.getvalue()}")
    return printed.getvalue()


def _head(text: str, lines: int) -> str:
    return "".join(text.splitlines(keepends=True)[:lines])


def _found(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    if match is None:
        raise ValueError(f"{pattern!r} not in the demo's output:\n{text}")
    return match.group(1)


def regenerate() -> None:
    """Run the tour in an empty folder and paste it into the page."""
    os.environ.pop("SESSIONSTORE_URL", None)  # the tour runs on the default database
    with tempfile.TemporaryDirectory() as folder:
        tour = run_tour(Path(folder))
    page = PAGE.read_text(encoding="utf-8")
    shown_tour(page)  # the markers must be there
    PAGE.write_text(
        TOUR_BLOCK.sub(lambda _: f"{BEGIN}\n```\n{tour}```\n{END}", page), encoding="utf-8"
    )
    print(f"wrote the tour into {PAGE.relative_to(ROOT)} ({tour.count(chr(10))} lines)")


if __name__ == "__main__":
    regenerate()
