"""The Markdown transcript (`Session.to_markdown`): golden files of a fixed session and of an
imported Claude Code transcript, the same bytes on SQLite and PostgreSQL, the live context by
default and the whole history on request.

Regenerate the golden files after a deliberate change with `UPDATE_GOLDEN=1 pytest`, then read
the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessionstore import Session, SessionStore
from sessionstore.events import (
    ContextCompacted,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Truncation,
    Usage,
)
from tests.cli.conftest import READ_OUTPUT, build_session, call, fixed_clock, result, text
from tests.conftest import Backend, create_schema

GOLDEN = Path(__file__).parent / "golden"
FIXTURES = Path(__file__).parent.parent / "fixtures"
CLAUDE_CODE = FIXTURES / "claude_code_session.jsonl"
OTHER_AGENTS = {
    "codex": FIXTURES
    / "codex"
    / "rollout-2025-10-02T09-14-00-0199a3f2-6c1e-7b40-9d2a-51e8c3b7a604.jsonl",
    "pi": FIXTURES / "pi" / "tree_v3.jsonl",
    "opencode": FIXTURES / "opencode" / "export.json",
}
both_backends = pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def transcript_session(store: SessionStore) -> Session:
    """`build_session`'s two turns, then everything a transcript must show: the first turn
    compacted into a summary, a third turn's long read pruned, thinking with usage, an output
    truncated at append, a call and an error output holding backtick fences, a redaction."""
    s = build_session(store)
    told = TextPart(id="sum1.t", text="The user asked to fix the parser; `parser.py` was read.")
    summary = Message(id="sum1", role="user", parts=(told,))
    s.append_events(
        [
            ContextCompacted(
                summary=summary,
                first_kept_message_id="u2",
                replaced_message_ids=("u1", "a1", "t1", "a2"),
                tokens_before=400,
                tokens_after=120,
                reason="manual",
                summarizer="handwritten",
            )
        ]
    )
    s.append_message(text("u3", "user", "Read the tests. My token is sk-123."))
    s.append_message(call("a5", "c3", "read", '{"path":"test_parser.py"}'))
    s.append_message(result("t3", "c3", "read", READ_OUTPUT))
    s.append_message(text("u4", "user", "Now run them."))
    assert s.prune() is not None
    thinking = ReasoningPart(id="a6.r", text="Run the **whole** suite, not one file.")
    s.append_message(
        Message(
            id="a6",
            role="assistant",
            parts=(
                thinking,
                TextPart(id="a6.t", text="Running the tests."),
                ToolCallPart(id="a6.c", call_id="c4", name="bash", arguments='{"cmd":"pytest"}'),
            ),
            usage=Usage(input=900, output=40, cache_read=300),
        )
    )
    output = "".join(f"test_{n} PASSED\n" for n in range(40))
    shown = "test_0 PASSED\ntest_1 PASSED\ntest_2 PASSED\n\n[37 lines truncated]"
    cut = Truncation(
        shown=shown, direction="head", max_lines=3, max_bytes=51_200, omitted_lines=37,
        omitted_bytes=548,
    )  # fmt: skip
    part = ToolResultPart(id="t4.r", call_id="c4", name="bash", output=output, truncation=cut)
    s.append_message(Message(id="t4", role="tool", parts=(part,)))
    s.append_message(call("a7", "c5", "bash", '{"cmd":"cat ```notes```"}'))
    fenced = ToolResultPart(
        id="t5.r", call_id="c5", name="bash", output="````\n```\nnested\n```\n````", is_error=True
    )
    s.append_message(Message(id="t5", role="tool", parts=(fenced,)))
    s.redact(["u3.t"], reason="a leaked key")
    return s


def fixed_store(backend: Backend) -> SessionStore:
    create_schema(backend)
    return SessionStore(backend.url, clock=fixed_clock())


@both_backends
def test_the_live_context_of_a_fixed_session_reads_as_its_golden_file(backend: Backend) -> None:
    with fixed_store(backend) as store:
        s = transcript_session(store)
        check_golden("transcript_live.md", s.to_markdown())


@both_backends
def test_the_whole_history_of_a_fixed_session_reads_as_its_golden_file(backend: Backend) -> None:
    with fixed_store(backend) as store:
        s = transcript_session(store)
        check_golden("transcript_history.md", s.to_markdown(history=True))


@both_backends
def test_an_imported_claude_code_transcript_reads_as_its_golden_files(backend: Backend) -> None:
    with fixed_store(backend) as store:
        imported = store.import_session(CLAUDE_CODE)
        s = store.session(imported.sessions[0].session_id)
        check_golden("claude_code_live.md", s.to_markdown())
        check_golden("claude_code_history.md", s.to_markdown(history=True))


@pytest.mark.parametrize("agent", list(OTHER_AGENTS))
def test_imported_codex_pi_and_opencode_transcripts_read_as_their_golden_files(
    sqlite_backend: Backend, agent: str
) -> None:
    with fixed_store(sqlite_backend) as store:
        imported = store.import_session(OTHER_AGENTS[agent])
        s = store.session(imported.sessions[0].session_id)
        check_golden(f"{agent}_live.md", s.to_markdown())


def test_a_transcript_at_a_point_is_the_context_then(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'at.db'}", clock=fixed_clock()) as store:
        s = transcript_session(store)
        before_prune = s.to_markdown(at=14)
        assert before_prune.splitlines()[5] == (
            "- shown: the live context after event 14 (2026-11-23 12:00:14 UTC): 8 messages, "
            "364 tokens"
        )
        assert "def rule_19(tokens)" in before_prune  # the read, whole, before its prune
        assert "[Output pruned" not in before_prune
        assert "[Output pruned" in s.to_markdown()
        history = s.to_markdown(at=14, history=True)
        assert history.splitlines()[5] == (
            "- shown: the whole history, events 1 to 14: 11 messages appended, with the events "
            "that changed the context where they happened"
        )


def test_a_forks_history_begins_with_its_parents_context_at_the_fork(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'fork.db'}", clock=fixed_clock()) as store:
        build_session(store)
        fork = store.fork("s1", at=5, title="try another fix")
        fork.append_message(text("f1", "assistant", "Another way: guard the split."))
        history = fork.to_markdown(history=True)
    assert "- forked from: `s1` at event 5" in history
    assert "> **event 1**: forked from `s1` at event 5; its context then:" in history
    body = history.split("its context then:", 1)[1]
    assert [line for line in body.splitlines() if line.startswith("## ")] == [
        "## User",
        "## Assistant",
        "## Tool",
        "## Assistant · event 2",
    ]
