"""`sessionstore redact ID` deletes what every part said only when asked to with `--all`; on a
terminal it first says how many parts that is and asks (`--yes` does not), and a script, whose
stdin is no terminal, is never left waiting for an answer."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

import pytest

from sessionstore import SessionStore
from tests.builders import conversation
from tests.cli.test_cli_process import BASE_ENV, SCRIPT, sessionstore

PARTS = 6
"""Parts of the two-turn conversation the fixture stores, each holding content."""


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with SessionStore(url) as store:
        store.append("s1", conversation(turns=2), expected_version=0)
        assert len(store.parts_to_purge("s1")) == PARTS
    return url


def stored(url: str) -> list[str]:
    with SessionStore(url) as store:
        return list(store.export_session("s1"))


def on_a_terminal(args: list[str], answer: str | None, cwd: Path) -> tuple[int, str]:
    """Run the command with a pseudo-terminal as its stdin, stdout and stderr; type `answer`
    once it asks. Returns its exit code and all it showed (the answer's echo included)."""
    controller, terminal = os.openpty()
    process = subprocess.Popen(
        [str(SCRIPT), *args],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        cwd=cwd,
        env=BASE_ENV,
        start_new_session=True,
    )
    os.close(terminal)
    shown, answered = b"", False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.1)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the command ended and closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if answer is not None and not answered and b"[y/N]: " in shown:
                os.write(controller, answer.encode() + b"\n")
                answered = True
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    return code, shown.decode().replace("\r\n", "\n")


def test_without_parts_or_all_nothing_is_redacted(db: str, tmp_path: Path) -> None:
    before = stored(db)
    result = sessionstore("--db", db, "redact", "s1", "--reason", "oops", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        "sessionstore: error: name the parts to redact, or --all to redact every part of the "
        "session (see sessionstore redact --help)\n",
    )
    assert stored(db) == before


def test_parts_and_all_together_are_refused(db: str, tmp_path: Path) -> None:
    before = stored(db)
    result = sessionstore("--db", db, "redact", "s1", "p1", "--all", "--reason", "x", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2,
        "sessionstore: error: name parts or --all, not both (see sessionstore redact --help)\n",
    )
    assert stored(db) == before


def test_all_in_a_script_redacts_without_asking(db: str, tmp_path: Path) -> None:
    result = sessionstore("--db", db, "redact", "s1", "--all", "--reason", "gone", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"redacted {PARTS} parts at seq 8\n",
        "",
    )


def test_all_on_a_terminal_says_how_many_parts_and_a_no_keeps_them(db: str, tmp_path: Path) -> None:
    before = stored(db)
    code, shown = on_a_terminal(
        ["--db", db, "redact", "s1", "--all", "--reason", "gone"], "n", tmp_path
    )
    assert (code, shown) == (
        1,
        f"delete what {PARTS} parts of s1 said, for good? [y/N]: n\nnothing redacted\n",
    )
    assert stored(db) == before


def test_all_on_a_terminal_redacts_on_a_yes(db: str, tmp_path: Path) -> None:
    code, shown = on_a_terminal(
        ["--db", db, "redact", "s1", "--all", "--reason", "gone"], "y", tmp_path
    )
    assert (code, shown) == (
        0,
        f"delete what {PARTS} parts of s1 said, for good? [y/N]: y\n"
        f"redacted {PARTS} parts at seq 8\n",
    )


def test_all_with_yes_on_a_terminal_does_not_ask(db: str, tmp_path: Path) -> None:
    code, shown = on_a_terminal(
        ["--db", db, "redact", "s1", "--all", "--yes", "--reason", "gone"], None, tmp_path
    )
    assert (code, shown) == (0, f"redacted {PARTS} parts at seq 8\n")
