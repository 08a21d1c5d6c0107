"""Importing files and folders: each file's format recognised, every transcript under a folder
imported, a file in no format skipped and reported, the same files again writing nothing, and a
transcript that grew adding only its new entries to the same session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessionstore import ImportRefused, InvalidArgument, SessionStore
from tests.cli.conftest import Cli

FIXTURE = Path(__file__).parent.parent / "fixtures" / "claude_code_session.jsonl"
SOURCE_ID = "3c9e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10"


def projects(tmp_path: Path) -> Path:
    """A folder laid out as ~/.claude/projects, with a second session, an export and a stray
    file beside the transcript."""
    root = tmp_path / "projects"
    (root / "-home-dev-dateparse").mkdir(parents=True)
    shutil.copy(FIXTURE, root / "-home-dev-dateparse" / f"{SOURCE_ID}.jsonl")
    other = FIXTURE.read_text().replace(SOURCE_ID, "5b1d9e20-0000-4000-8000-000000000002")
    (root / "-home-dev-dateparse" / "second.jsonl").write_text(other)
    (root / "notes.jsonl").write_text('{"hello": "world"}\n')
    with SessionStore("sqlite://") as elsewhere:
        s = elsewhere.create_session(model="m", session_id="exported")
        s.append_user("hi")
        (root / "exported.jsonl").write_text("\n".join(elsewhere.export_session(s.id)) + "\n")
    return root


def test_a_folder_imports_every_transcript_once(store: SessionStore, tmp_path: Path) -> None:
    root = projects(tmp_path)
    seen: list[tuple[int, int]] = []
    result = store.import_session(root, progress=lambda done, total, _: seen.append((done, total)))
    second = "claude-code-5b1d9e20-0000-4000-8000-000000000002"
    assert sorted(result.created) == [  # each with the subagent its sidechain lines ran
        f"claude-code-{SOURCE_ID}",
        f"claude-code-{SOURCE_ID}/agent-sidechain",
        second,
        f"{second}/agent-sidechain",
        "exported",
    ]
    stray = (str(root / "notes.jsonl"), None)
    assert [(skip.file, skip.line) for skip in result.skipped] == [stray]
    assert "none of the formats" in result.skipped[0].reason
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    s = store.session(f"claude-code-{SOURCE_ID}")
    assert s.state()["imported_from"] == {"format": "claude-code", "source_id": SOURCE_ID}
    assert s.header.app == "claude-code"

    again = store.import_session(root)
    assert again.created == [] and again.events_written == 0
    assert len(again.sessions) == 5


def test_a_grown_transcript_adds_only_its_new_entries(store: SessionStore, tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(lines[:10]))
    first = store.import_session(path).sessions[0]  # then its sidechain's session
    s = store.session(first.session_id)
    before = s.version
    path.write_text("".join(lines))
    grown = store.import_session(path).sessions[0]
    assert (grown.created, grown.session_id) == (False, first.session_id)
    assert grown.events_written > 0
    s.refresh()
    assert s.version == before + grown.events_written
    whole = SessionStore("sqlite://").import_session(FIXTURE).session_ids[0]
    assert whole == first.session_id  # the same id wherever it is imported
    assert store.verify(s.id).ok


def test_strict_refuses_a_folder_with_a_stray_file(store: SessionStore, tmp_path: Path) -> None:
    with pytest.raises(ImportRefused, match="none of the formats"):
        store.import_session(projects(tmp_path), strict=True)


def test_a_file_name_passed_as_text_gets_a_clear_error(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURE, tmp_path / "t.jsonl")
    with pytest.raises(InvalidArgument, match=r"pass Path\('t.jsonl'\)"):
        store.import_session("t.jsonl", format="claude-code")
    with pytest.raises(InvalidArgument, match="no file or folder"):
        store.import_session(tmp_path / "missing")


def test_the_command_imports_a_folder_and_reports_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = projects(tmp_path)
    cli = Cli(f"sqlite:///{tmp_path / 'cli.db'}", capsys)
    run = cli("import", str(root))
    assert run.code == 0, run.err
    assert run.out.count("imported ") == 5
    assert run.err.splitlines() == [
        f"skipped {root / 'notes.jsonl'}: notes.jsonl is in none of the formats sessionstore "
        "imports",
        "5 sessions (5 new), 46 events written, 1 skipped",
    ]
    again = cli("import", str(root), "--json")
    report = json.loads(again.out)
    assert report["events_written"] == 0
    assert [s["created"] for s in report["sessions"]] == [False] * 5


def test_every_format_under_one_folder(store: SessionStore) -> None:
    """The fixtures folder holds a Claude Code transcript, two Codex rollouts, two pi sessions,
    an OpenCode export and an OpenCode storage folder, two Gemini CLI sessions (one with a
    subagent) and a checkpoint: each is found and recognised, the storage folder's files are
    read per session, and a subagent's file with its parent's, not as files of their own."""
    fixtures = Path(__file__).parent.parent / "fixtures"
    result = store.import_session(fixtures)
    assert result.skipped == []
    assert sorted(s.session_id for s in result.sessions) == [
        f"claude-code-{SOURCE_ID}",
        f"claude-code-{SOURCE_ID}/agent-sidechain",
        "codex-0199a3f2-6c1e-7b40-9d2a-51e8c3b7a604",
        "codex-5973b6c0-94b8-487b-a530-2aeb6098ae0e",
        "gemini-cli-1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b",
        "gemini-cli-7a6b5c4d-3e2f-4101-8f9e-8d7c6b5a4f3e",
        "gemini-cli-9e8d7c6b-5a49-4387-9a1b-2c3d4e5f6a7b",  # its subagent
        "gemini-cli-checkpoint-before-fix",
        "opencode-ses_6a1f0e2affe0Kq7TnB2xVwYzLp",  # the export
        "opencode-ses_6a1f0e2affe0Kq7TnB2xVwYzLp",  # and the same session in storage: complete
        "opencode-ses_6a1f0e2c4410Hr5MdW8uPq3sTn",  # the storage's subagent
        "pi-0b6f5d3e-7a41-4c8e-9f12-3d5e8a7c1b20",
        "pi-4f3c2b1a-9d8e-4a7b-8c6d-5e4f3a2b1c0d",
    ]
    assert {s.format for s in result.sessions} == {
        "claude-code",
        "codex",
        "opencode",
        "pi",
        "gemini-cli",
    }
    assert all(store.verify(s.session_id).ok for s in result.sessions)
    again = store.import_session(fixtures)
    assert (again.events_written, again.created) == (0, [])
    with SessionStore("sqlite://") as elsewhere:  # the same files give the same events
        elsewhere.import_session(fixtures)
        for session_id in result.session_ids:
            # a checkpoint records no time: its events are at the import's, hashes and all
            timeless = session_id == "gemini-cli-checkpoint-before-fix"
            assert [e.payload if timeless else e.hash for e in elsewhere.read(session_id)] == [
                e.payload if timeless else e.hash for e in store.read(session_id)
            ]
    only = SessionStore("sqlite://").import_session(fixtures, format="codex")
    assert {s.format for s in only.sessions} == {"codex"} and len(only.sessions) == 2


def test_an_agent_format_imports_from_text_too(store: SessionStore) -> None:
    rollout = next((Path(__file__).parent.parent / "fixtures" / "codex").glob("rollout-2025-10*"))
    s = store.import_session(rollout.read_text(), format="codex")
    assert s.id == "codex-0199a3f2-6c1e-7b40-9d2a-51e8c3b7a604"
    assert s.header.app == "codex" and s.context().messages


def test_a_response_read_while_it_was_written_gets_its_later_blocks(
    store: SessionStore, tmp_path: Path
) -> None:
    """A response read while Claude Code was still writing it: the blocks it gained come as a
    message right after it, which renders merge into the same turn; a re-import adds nothing
    more, and an entry that changed otherwise is reported, the stored one kept."""
    from tests.importers.test_claude_code_complete import jsonl, parallel_session

    path = tmp_path / "live.jsonl"
    path.write_text(jsonl(parallel_session()[:3]))  # msg_1 cut after its text block
    first = store.import_session(path).sessions[0]
    path.write_text(jsonl(parallel_session()))
    grown = store.import_session(path).sessions[0]
    assert grown.skipped == ()
    s = store.session(first.session_id)
    assert [m.id for m in s.context().messages] == ["u1", "a1", "a1+2", "r1", "r2", "a5"]
    turn = s.context().to_anthropic()["messages"][1]["content"]
    assert [b["type"] for b in turn] == ["thinking", "text", "tool_use", "tool_use"]
    assert store.import_session(path).events_written == 0
    edited = parallel_session()
    edited[0]["message"]["content"] = "Compare a.py and c.py"  # rewritten in place
    path.write_text(jsonl(edited))
    [changed] = store.import_session(path).sessions[0].skipped
    assert changed.reason == "u1 changed since it was imported: kept as it was"
    assert changed.file == str(path)


CODEX = Path(__file__).parent.parent / "fixtures" / "codex"
ROLLOUT = next(CODEX.glob("rollout-2025-10*"))
OLD_ROLLOUT = next(CODEX.glob("rollout-2025-05*"))


def copies_of_a_growing_rollout(tmp_path: Path, first: str, second: str) -> Path:
    """A folder holding the same rollout twice (copied as it grew: `first` holds its first 24
    lines, `second` all of it) and another session's rollout."""
    root = tmp_path / "copies"
    lines = ROLLOUT.read_text().splitlines(keepends=True)
    for name, kept in ((first, lines[:24]), (second, lines)):
        (root / name).mkdir(parents=True)
        (root / name / ROLLOUT.name).write_text("".join(kept))
    shutil.copy(OLD_ROLLOUT, root / OLD_ROLLOUT.name)
    return root


def one_step(*paths: Path) -> dict[str, tuple[int, int, int, int]]:
    """(events written, events, live messages, live tokens) of each session when each file is
    imported once, alone."""
    found = {}
    with SessionStore("sqlite://") as once:
        for path in paths:
            [imported] = once.import_session(path).sessions
            context = once.session(imported.session_id).context()
            found[imported.session_id] = (
                imported.events_written,
                context.seq,
                len(context.messages),
                context.tokens,
            )
    return found


def test_a_folder_report_names_each_session_once_with_exact_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copies_of_a_growing_rollout(tmp_path, "early", "late")
    expected = one_step(ROLLOUT, OLD_ROLLOUT)
    cli = Cli(f"sqlite:///{tmp_path / 'cli.db'}", capsys)
    run = cli("import", str(root))
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        f"imported {session}: {events:,} events, {messages:,} live messages, {tokens:,} tokens"
        for session, (_, events, messages, tokens) in expected.items()
    ]
    written = sum(each[0] for each in expected.values())
    assert run.err.splitlines() == [f"2 sessions (2 new), {written:,} events written, 0 skipped"]


def test_a_shorter_copy_read_last_reports_the_session_not_its_own_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copies_of_a_growing_rollout(tmp_path, "b-early", "a-late")  # the longer one first
    [(written, events, _, tokens)] = one_step(ROLLOUT).values()
    with SessionStore(f"sqlite:///{tmp_path / 'api.db'}") as store:
        result = store.import_session(root)
        late, early = [row for row in result.sessions if row.source_id in ROLLOUT.name]
        assert (late.created, late.events_written) == (True, written)
        assert (early.events_written, early.events) == (0, events)
        assert (early.live_messages, early.live_tokens) == (None, None)  # not the session's
        [merged, _] = result.per_session
        assert (merged.created, merged.events_written) == (True, written)
    cli = Cli(f"sqlite:///{tmp_path / 'cli.db'}", capsys)
    report = json.loads(cli("import", str(root), "--json").out)
    [row] = [s for s in report["sessions"] if s["source"] in ROLLOUT.name]
    assert (row["created"], row["events_written"], row["events"], row["tokens"]) == (
        True,
        written,
        events,
        tokens,
    )
    assert len(report["sessions"]) == 2
