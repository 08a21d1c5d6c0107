"""A small session with fixed ids and times, and a way to run the real entry point."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sessionstore import Session, SessionStore
from sessionstore.cli import main
from sessionstore.events import Message, TextPart, ToolCallPart, ToolResultPart

START = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
READ_OUTPUT = "def parse(text):\n    return text.split()[0]\n" + "".join(
    f"\n\ndef rule_{n}(tokens):\n    return tokens[{n}:] or None\n" for n in range(20)
)


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


@dataclass(frozen=True)
class Cli:
    url: str
    capsys: pytest.CaptureFixture[str]

    def __call__(self, *args: str) -> Run:
        code = main(["--db", self.url, *args])
        captured = self.capsys.readouterr()
        return Run(code, captured.out, captured.err)


def fixed_clock() -> Callable[[], datetime]:
    """One second per call from START, so recorded times are known in advance."""
    ticks = itertools.count()
    return lambda: START + timedelta(seconds=next(ticks))


def text(message_id: str, role: str, words: str) -> Message:
    part = TextPart(id=f"{message_id}.t", text=words)
    return Message(id=message_id, role=role, parts=(part,))


def call(message_id: str, call_id: str, tool: str, arguments: str) -> Message:
    part = ToolCallPart(id=f"{message_id}.c", call_id=call_id, name=tool, arguments=arguments)
    return Message(id=message_id, role="assistant", parts=(part,))


def result(message_id: str, call_id: str, tool: str, output: str) -> Message:
    part = ToolResultPart(id=f"{message_id}.r", call_id=call_id, name=tool, output=output)
    return Message(id=message_id, role="tool", parts=(part,))


def build_session(store: SessionStore) -> Session:
    """Two turns: read the parser, then fix it. Pruning needs only 1 token to be worth it."""
    s = store.create_session(
        model="gpt-4o", context_window=10_000, title="fix the parser", session_id="s1"
    )
    s.configure(protect_turns=1, protect_tokens=0, minimum_prune=1, keep_recent_tokens=0)
    for message in (
        text("u1", "user", "The parser fails on empty input."),
        call("a1", "c1", "read", '{"path":"parser.py"}'),
        result("t1", "c1", "read", READ_OUTPUT),
        text("a2", "assistant", "The first token is read without a check."),
        text("u2", "user", "Fix it."),
        call("a3", "c2", "edit", '{"path":"parser.py"}'),
        result("t2", "c2", "edit", "Edited parser.py"),
        text("a4", "assistant", "Fixed: empty input returns None."),
    ):
        s.append_message(message)
    return s


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with SessionStore(url, clock=fixed_clock()) as store:
        build_session(store)
    return Cli(url, capsys)
