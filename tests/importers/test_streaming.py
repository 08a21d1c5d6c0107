"""Files are imported a line at a time: a line that is not UTF-8 (a file cut inside a
multi-byte character) is one malformed line, skipped and reported with its number; no file is
ever read whole, so memory follows the longest line, not the file; and a file too large to
import is reported while the rest of its folder imports."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

import sessionstore.importers._import as batches
from sessionstore import ImportRefused, SessionStore
from sessionstore.context._tokens import count
from sessionstore.events import DEFAULT_ENCODING
from sessionstore.importers._claude_code import claude_code_transcript
from sessionstore.importers._codex import codex_transcript
from sessionstore.importers._lines import FileLines
from sessionstore.importers._pi import pi_transcript
from sessionstore.importers._transcript import Transcript
from tests.importers.test_pi import header, said

FIXTURES = Path(__file__).parent.parent / "fixtures"
CLAUDE = FIXTURES / "claude_code_session.jsonl"
CLAUDE_ID = "claude-code-3c9e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10"
CODEX = next((FIXTURES / "codex").glob("rollout-2025-10*"))
PI = FIXTURES / "pi" / "tree_v3.jsonl"
GEMINI = FIXTURES / "gemini_cli" / "chats" / "session-2026-05-11T10-00-1f2e3d4c.jsonl"
ENCODING = "cl100k_base"
CUT = "not UTF-8 text: the file ends inside a character (the last line is cut off)"


def alone(fixture: Path, tmp_path: Path) -> Path:
    """A copy of `fixture` without the files beside it (a Gemini CLI session's subagents)."""
    copy = tmp_path / "alone" / fixture.name
    copy.parent.mkdir(exist_ok=True)
    copy.write_bytes(fixture.read_bytes())
    return copy


def cut_inside_a_character(text: bytes) -> bytes:
    """`text` with a last line that stops after the first byte of a two-byte character."""
    return text + b'{"type":"summary","summary":"caf' + "é".encode()[:1]


@pytest.mark.parametrize(
    "fixture", [CLAUDE, CODEX, PI, GEMINI], ids=["claude-code", "codex", "pi", "gemini-cli"]
)
def test_a_file_cut_inside_a_character_loses_only_its_last_line(
    store: SessionStore, tmp_path: Path, fixture: Path
) -> None:
    whole = fixture.read_bytes()
    cut = tmp_path / fixture.name
    cut.write_bytes(cut_inside_a_character(whole))
    last = whole.count(b"\n") + 1

    result = store.import_session(cut)

    assert [(s.line, s.reason) for s in result.skipped] == [(last, CUT)]
    with SessionStore("sqlite://") as elsewhere:  # the same events as the file before the cut
        expected = elsewhere.import_session(alone(fixture, tmp_path))
        assert result.session_ids == expected.session_ids
        for session_id in result.session_ids:
            assert [e.payload for e in store.read(session_id)] == [
                e.payload for e in elsewhere.read(session_id)
            ]


def test_a_line_that_is_not_utf8_is_skipped_with_its_number(
    store: SessionStore, tmp_path: Path
) -> None:
    lines = CLAUDE.read_bytes().split(b"\n")
    snapshot = lines[2]  # line 3, a file-history-snapshot record
    assert b'"file-history-snapshot"' in snapshot
    bad = lines.copy()
    bad[2] = snapshot.replace(b'"messageId"', b'"message\xffId"')
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"\n".join(bad))
    where = bad[2].index(b"\xff") + 1
    blank = lines.copy()
    blank[2] = b""
    (tmp_path / "clean").mkdir()
    clean = tmp_path / "clean" / "broken.jsonl"
    clean.write_bytes(b"\n".join(blank))

    result = store.import_session(broken)

    reason = f"not UTF-8 text: invalid start byte at byte {where} of the line"
    assert [(s.file, s.line, s.reason) for s in result.skipped] == [(str(broken), 3, reason)]
    with SessionStore("sqlite://") as elsewhere:
        elsewhere.import_session(clean)
        assert [e.payload for e in store.read(CLAUDE_ID)][2:] == [
            e.payload for e in elsewhere.read(CLAUDE_ID)
        ][2:]


def test_strict_refuses_a_line_that_is_not_utf8_at_its_number(
    store: SessionStore, tmp_path: Path
) -> None:
    cut = tmp_path / CLAUDE.name
    cut.write_bytes(cut_inside_a_character(CLAUDE.read_bytes()))
    last = CLAUDE.read_bytes().count(b"\n") + 1
    with pytest.raises(ImportRefused) as refused:
        store.import_session(cut, strict=True)
    assert (refused.value.line, refused.value.reason) == (last, CUT)


def test_a_transcript_that_grows_while_it_is_read_gives_what_its_first_reading_held(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's lines are read twice (an index, then the entries): a file an agent is
    still writing gains lines in between, and its cut last line is finished."""
    lines = CLAUDE.read_bytes().split(b"\n")[:-1]
    done = b"\n".join(lines[:-1]) + b"\n" * 51  # blank lines: the first 50 are not all of it
    growing = tmp_path / CLAUDE.name
    growing.write_bytes(done + lines[-1][:40])  # the last line, half written
    cut = len(lines) + 50
    real_numbered = FileLines.numbered
    grown: list[Path] = []

    def numbered(self: FileLines) -> Iterator[tuple[int, int, str]]:
        yield from real_numbered(self)
        if self.path == growing and not grown:  # read to its end once: the agent writes on
            growing.write_bytes(done + lines[-1] + b"\n" + lines[3] + b"\n")
            grown.append(growing)

    monkeypatch.setattr(FileLines, "numbered", numbered)
    result = store.import_session(growing)

    reason = "the last line is cut off (the file ends mid-entry)"
    assert [(s.line, s.reason) for s in result.skipped] == [(cut, reason)]
    with SessionStore("sqlite://") as elsewhere:
        shorter = tmp_path / "shorter" / CLAUDE.name
        shorter.parent.mkdir()
        shorter.write_bytes(done)
        elsewhere.import_session(shorter)
        for session_id in result.session_ids:
            assert [e.payload for e in store.read(session_id)] == [
                e.payload for e in elsewhere.read(session_id)
            ]


def read_codex(text: str, spool: bool) -> Transcript:
    return codex_transcript(text.splitlines(), ENCODING, spool=spool)


def read_pi(text: str, spool: bool) -> Transcript:
    return pi_transcript(text.splitlines(), ENCODING, spool=spool)


def read_claude_code(text: str, spool: bool) -> Transcript:
    return claude_code_transcript(text, ENCODING, spool=spool)


BACK_ON_A = "\n".join(  # a pi session that switches back to an abandoned branch
    [
        header(),
        said("u1", None, "user", "one"),
        said("a1", "u1", "assistant", "two"),
        said("u2", "a1", "user", "branch A"),
        said("a2", "u2", "assistant", "A answered"),
        said("u3", "a1", "user", "branch B"),
        said("a3", "u3", "assistant", "B answered"),
        said("u4", "a2", "user", "back on A"),
    ]
)


@pytest.mark.parametrize(
    ("text", "read"),
    [
        (CODEX.read_text(), read_codex),
        (PI.read_text(), read_pi),
        (BACK_ON_A, read_pi),
        (CLAUDE.read_text(), read_claude_code),
    ],
    ids=["codex", "pi", "pi-back-on-a-branch", "claude-code"],
)
def test_a_spooled_transcript_holds_the_entries_a_transcript_in_memory_does(
    text: str, read: Callable[[str, bool], Transcript]
) -> None:
    """Spooled entries read back as they were added; pi reads the messages of a branch it
    switches back to again from the spool."""
    in_memory, spooled = read(text, False), read(text, True)
    assert spooled.spool is not None and spooled.entries == []
    assert list(spooled.each()) == in_memory.entries != []
    assert [list(c.each()) for c in spooled.children] == [c.entries for c in in_memory.children]
    assert spooled.first_time == in_memory.first_time
    spooled.close()


def test_a_spool_keeps_plain_values_not_models() -> None:
    """A spool pickles each payload as the values it dumps to, which the spool validates
    back: unpickling a tree of models (pydantic's `__setstate__` per part) cost an import
    more than a tenth of its time. Nothing of ours is named in what it wrote."""
    spooled = read_claude_code(CLAUDE.read_text(), True)
    assert spooled.spool is not None
    modules: set[str] = set()

    class Watching(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            modules.add(module)
            return super().find_class(module, name)

    handle = spooled.spool._file
    handle.seek(0)
    for _ in range(spooled.size):
        Watching(handle).load()
    assert modules == {"datetime"}  # each entry's time
    spooled.close()


class WatchedFile:
    """A file object that notes how it is read: each line's size, or `whole` for a read of
    everything that is left."""

    def __init__(self, raw: IO[Any], reads: list[int | str]) -> None:
        self._raw = raw
        self._reads = reads

    def read(self, size: int = -1) -> Any:
        if size < 0:
            self._reads.append("whole")
        return self._raw.read(size)

    def readline(self, size: int = -1) -> Any:
        line = self._raw.readline(size)
        self._reads.append(len(line))
        return line

    def __iter__(self) -> Iterator[Any]:
        for line in self._raw:
            self._reads.append(len(line))
            yield line

    def __enter__(self) -> WatchedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._raw.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@pytest.mark.parametrize(
    "fixture", [CLAUDE, CODEX, PI, GEMINI], ids=["claude-code", "codex", "pi", "gemini-cli"]
)
def test_a_transcript_is_read_a_line_at_a_time_never_whole(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixture: Path
) -> None:
    transcript = tmp_path / fixture.name
    transcript.write_bytes(fixture.read_bytes())
    reads: list[int | str] = []
    real_open = Path.open

    def watched_open(path: Path, *args: Any, **kwargs: Any) -> Any:
        opened = real_open(path, *args, **kwargs)
        return WatchedFile(opened, reads) if path == transcript else opened

    monkeypatch.setattr(Path, "open", watched_open)
    result = store.import_session(transcript)

    with SessionStore("sqlite://") as elsewhere:
        assert result.created == elsewhere.import_session(alone(fixture, tmp_path)).created != []
    assert "whole" not in reads
    longest = max(len(line) for line in fixture.read_bytes().splitlines(keepends=True))
    assert max(n for n in reads if isinstance(n, int)) == longest


def conversation(turns: int) -> Iterator[str]:
    """A Claude Code session of `turns` prompts, each answered: two lines a turn."""
    parent = None
    for n in range(1, 2 * turns + 1):
        uuid = f"00000000-0000-4000-8000-{n:012d}"
        if n % 2:
            message: dict[str, Any] = {"role": "user", "content": f"prompt {n}"}
        else:
            content = [{"type": "text", "text": f"answer {n}"}]
            message = {"id": f"msg_{n}", "role": "assistant", "content": content}
        kind = "user" if n % 2 else "assistant"
        entry = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s-1"}
        yield json.dumps({**entry, "message": message}) + "\n"
        parent = uuid


def test_an_import_cut_short_resumes_where_it_stopped(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batches, "_BATCH_EVENTS", 100)  # a batch of a thousand, a tenth as long
    transcript = tmp_path / "long.jsonl"
    transcript.write_text("".join(conversation(125)))
    recorder = store._log.recorder
    writes: list[int] = []
    real_write = recorder.write

    def crash_at_the_second_batch(session_id: str, *args: Any, **kwargs: Any) -> list[int]:
        writes.append(len(args[1]))
        if len(writes) == 2:
            raise RuntimeError("the process died")
        return real_write(session_id, *args, **kwargs)

    monkeypatch.setattr(recorder, "write", crash_at_the_second_batch)
    with pytest.raises(RuntimeError):
        store.import_session(transcript)
    assert writes == [2 + 100, 100]  # the opening events and the first hundred, then crash
    assert store.session("claude-code-s-1").version == 102
    monkeypatch.undo()

    resumed = store.import_session(transcript)

    assert (resumed.created, resumed.events_written) == ([], 150)
    with SessionStore("sqlite://") as elsewhere:
        elsewhere.import_session(transcript)
        assert [(e.event_id, e.payload) for e in store.read("claude-code-s-1")] == [
            (e.event_id, e.payload) for e in elsewhere.read("claude-code-s-1")
        ]
    assert store.verify("claude-code-s-1").ok
    assert store.import_session(transcript).events_written == 0


# Memory: an import in a child process whose address space is capped at what importing a
# small transcript takes plus HEADROOM. A file larger than the headroom, of lines far
# smaller, imports; a file whose one line is larger than the headroom cannot, and is
# reported while the rest of its folder imports. What the reader remembers of each line, and
# what the command reports of each session, take no memory that grows with the file: a file
# of many short lines imports under a cap far below what its lines take as objects.
# Each needs a file larger than the headroom, so all of them are in the slow set.

HEADROOM = 256 << 20
LINE = 1 << 20
CAPPED = """
import resource, sys
cap = int(sys.argv.pop(1))
if cap:
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
"""
IMPORT_UNDER_A_CAP = """
import json
from pathlib import Path
from sessionstore import SessionStore
with SessionStore(sys.argv[2]) as store:
    result = store.import_session(Path(sys.argv[1]))
    peak = next(
        int(line.split()[1]) * 1024
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmPeak:")
    )
    print(json.dumps({
        "created": sorted(result.created),
        "events": {s.session_id: s.events_written for s in result.sessions},
        "skipped": [[s.file, s.line, s.reason] for s in result.skipped],
        "peak": peak,
    }))
"""


def run_under_a_cap(script: str, cap: int, *args: str) -> str:
    """What `script` prints, run with `args` in a child process whose address space is capped
    at `cap` bytes (none when 0)."""
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), *sys.path])
    done = subprocess.run(
        [sys.executable, "-c", CAPPED + script, str(cap), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def import_under_a_cap(folder: Path, db: Path, cap: int) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(
        run_under_a_cap(IMPORT_UNDER_A_CAP, cap, str(folder), f"sqlite:///{db}")
    )
    return value


def small_import_peak(tmp_path: Path) -> int:
    """The address space importing the small fixture takes."""
    if not Path("/proc/self/status").exists():
        pytest.skip("measures the address space in /proc")
    small = tmp_path / "small"
    small.mkdir()
    (small / CLAUDE.name).write_bytes(CLAUDE.read_bytes())
    peak: int = import_under_a_cap(small, tmp_path / "small.db", 0)["peak"]
    return peak


@pytest.fixture
def cap(tmp_path: Path) -> int:
    """What importing the small fixture takes, plus the headroom."""
    return small_import_peak(tmp_path) + HEADROOM


def big_records(lines: int) -> Iterator[bytes]:
    """A Claude Code session: a prompt, then `lines` records of a megabyte each."""
    session = "0b9e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10"
    prompt = {
        "type": "user",
        "uuid": "u-1",
        "parentUuid": None,
        "sessionId": session,
        "message": {"role": "user", "content": "hello"},
    }
    yield json.dumps(prompt).encode() + b"\n"
    for n in range(lines):
        snapshot = {"messageId": f"m-{n}", "trackedFileBackups": {"big": f"{n}" + "x" * LINE}}
        record = {"type": "file-history-snapshot", "messageId": f"m-{n}", "snapshot": snapshot}
        yield json.dumps(record).encode() + b"\n"


@pytest.mark.slow
def test_a_file_larger_than_memory_allows_imports_a_line_at_a_time(
    tmp_path: Path, cap: int
) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    lines = HEADROOM // LINE + 16  # the file alone is over the headroom
    with (folder / "big.jsonl").open("wb") as file:
        file.writelines(big_records(lines))

    result = import_under_a_cap(folder, tmp_path / "big.db", cap)

    session = "claude-code-0b9e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10"
    assert (result["created"], result["skipped"]) == ([session], [])
    assert result["events"] == {session: 2 + 1 + lines}


@pytest.mark.slow
def test_a_file_too_large_to_import_is_reported_and_its_folder_imports(
    tmp_path: Path, cap: int
) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / CLAUDE.name).write_bytes(CLAUDE.read_bytes())
    huge = folder / "huge.jsonl"
    with huge.open("wb") as file:  # one line larger than the headroom
        file.write(b'{"type":"summary","summary":"')
        for _ in range(HEADROOM // LINE + 16):
            file.write(b"x" * LINE)
        file.write(b'"}\n')

    result = import_under_a_cap(folder, tmp_path / "projects.db", cap)

    assert result["created"] == [CLAUDE_ID, f"{CLAUDE_ID}/agent-sidechain"]
    why = "out of memory importing it (a line, or one entry, larger than memory allows)"
    assert result["skipped"] == [[str(huge), None, why]]


SHORT_LINES = 100_000
"""Lines of a few dozen bytes each: indexed in dicts (uuids, parents, children, the entries
read), they take some 55 MB more than the small fixture's import; off the heap, a few."""
SHORT_HEADROOM = 24 << 20


def progress_records(lines: int) -> Iterator[str]:
    """A Claude Code session: a prompt, then progress records, each the child of the last."""
    session = "5d1e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10"
    parent = "u-0"
    prompt = {"role": "user", "content": "hello"}
    entry = {"type": "user", "uuid": parent, "parentUuid": None, "sessionId": session}
    yield json.dumps({**entry, "message": prompt}) + "\n"
    for n in range(1, lines):
        uuid = f"{n:08x}-0000-4000-8000-000000000000"
        yield json.dumps({"type": "progress", "uuid": uuid, "parentUuid": parent}) + "\n"
        parent = uuid


@pytest.mark.slow
def test_what_a_reader_remembers_of_each_line_does_not_grow_with_the_file(
    tmp_path: Path,
) -> None:
    cap = small_import_peak(tmp_path) + SHORT_HEADROOM
    folder = tmp_path / "short"
    folder.mkdir()
    (folder / "short.jsonl").write_text("".join(progress_records(SHORT_LINES)))

    result = import_under_a_cap(folder, tmp_path / "short.db", cap)

    session = "claude-code-5d1e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10"
    assert (result["created"], result["skipped"]) == ([session], [])
    assert result["events"] == {session: 2 + SHORT_LINES}


REPORT_UNDER_A_CAP = """
from sessionstore.cli import main
sys.exit(main(sys.argv[1:]))
"""
LIVE_TURNS = 5_000
"""Two live messages a turn: the whole live context, built to report its figures, takes some
60 MB more than the small fixture's import."""


@pytest.mark.slow
def test_the_import_report_does_not_build_the_live_context_it_reports_on(
    tmp_path: Path,
) -> None:
    cap = small_import_peak(tmp_path) + SHORT_HEADROOM
    transcript = tmp_path / "long.jsonl"
    transcript.write_text("".join(conversation(LIVE_TURNS)))
    said = (f"prompt {n}" if n % 2 else f"answer {n}" for n in range(1, 2 * LIVE_TURNS + 1))
    tokens = sum(count(text, DEFAULT_ENCODING) for text in said)

    out = run_under_a_cap(
        REPORT_UNDER_A_CAP,
        cap,
        "--db",
        f"sqlite:///{tmp_path / 'long.db'}",
        "import",
        str(transcript),
    )

    events, messages = 2 + 2 * LIVE_TURNS, 2 * LIVE_TURNS
    assert out == (
        f"imported claude-code-s-1: {events:,} events, {messages:,} live messages, "
        f"{tokens:,} tokens\n"
    )


@pytest.mark.parametrize(
    "fixture", [CLAUDE, CODEX, PI, GEMINI], ids=["claude-code", "codex", "pi", "gemini-cli"]
)
def test_an_import_says_the_figures_its_sessions_fold_to(
    store: SessionStore, tmp_path: Path, fixture: Path
) -> None:
    """What the reader followed is what the fold gives: events, live messages, live tokens,
    on the first import and on one that finds the session complete."""
    first = store.import_session(fixture)
    again = store.import_session(fixture)

    for imported in [*first.sessions, *again.sessions]:
        session = store.session(imported.session_id)
        figures = (imported.events, imported.live_messages, imported.live_tokens)
        assert figures == (session.version, len(session.context().messages), session.tokens)
    assert len(first.sessions) == len(again.sessions) >= 1


CODEX_MESSAGES = 40_000
CODEX_ID = 1_000
CODEX_HEADROOM = 32 << 20
"""Messages with long item ids: kept as the keys taken and the live messages' ids in a set and
a dict, they take some 45 MB more than the small fixture's import; off the heap, some 20 (what
the store's side of an import takes above the small fixture's, whatever the length)."""


def codex_messages(lines: int) -> Iterator[str]:
    """A Codex rollout: its meta, then user messages, each with its own long item id."""
    meta = {"id": "0199a3f2-6c1e-7b40-9d2a-51e8c3b7a699", "timestamp": "2025-10-02T09:14:00Z"}
    yield json.dumps({"type": "session_meta", "payload": meta}) + "\n"
    for n in range(1, lines):
        content = [{"type": "input_text", "text": "hi"}]
        item = {"type": "message", "role": "user", "id": f"{n:0{CODEX_ID}d}", "content": content}
        yield json.dumps({"type": "response_item", "payload": item}) + "\n"


@pytest.mark.slow
def test_what_the_codex_reader_remembers_of_each_line_does_not_grow_with_the_file(
    tmp_path: Path,
) -> None:
    cap = small_import_peak(tmp_path) + CODEX_HEADROOM
    folder = tmp_path / "short"
    folder.mkdir()
    (folder / "rollout.jsonl").write_text("".join(codex_messages(CODEX_MESSAGES)))

    result = import_under_a_cap(folder, tmp_path / "short.db", cap)

    session = "codex-0199a3f2-6c1e-7b40-9d2a-51e8c3b7a699"
    assert (result["created"], result["skipped"]) == ([session], [])
    assert result["events"] == {session: 2 + CODEX_MESSAGES}


PI_ENTRIES = 30_000
PI_ID = 1_000
PI_HEADROOM = 32 << 20
"""Entries with long ids: kept as the tree, the path, the keys taken and the live messages in
dicts, sets and lists, they take some 70 MB more than the small fixture's import; off the
heap, some 20 (what the store's side of an import takes above the small fixture's)."""


def pi_entries(entries: int) -> Iterator[str]:
    """A pi session: its header, then user messages, each the child of the last and with its
    own long id."""
    yield header("6a0e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10") + "\n"
    parent = None
    for n in range(1, entries):
        entry = f"{n:0{PI_ID}d}"
        yield said(entry, parent, "user", "hi") + "\n"
        parent = entry


@pytest.mark.slow
def test_what_the_pi_reader_remembers_of_each_line_does_not_grow_with_the_file(
    tmp_path: Path,
) -> None:
    cap = small_import_peak(tmp_path) + PI_HEADROOM
    folder = tmp_path / "short"
    folder.mkdir()
    (folder / "session.jsonl").write_text("".join(pi_entries(PI_ENTRIES)))

    result = import_under_a_cap(folder, tmp_path / "short.db", cap)

    session = "pi-6a0e4f1a-6b2d-4e8f-a1c7-92d05b7e4f10"
    assert (result["created"], result["skipped"]) == ([session], [])
    assert result["events"] == {session: 2 + PI_ENTRIES}
