"""The Gemini CLI importer on hand-written sessions (tests/fixtures/gemini_cli: a JSONL session
with its subagent's, an older session written as one JSON document, a `/chat save`
checkpoint): each message at its first place as its last version, calls paired with their
results, what Gemini CLI does not send again kept as records, a rewind, a compaction, every
line kept, skipped lines reported, recognised among the other formats, idempotent and
growing re-imports equal to one import, valid renders, and an export round trip with
identical hashes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePath
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import ImportRefused, SessionStore
from sessionstore.events import (
    ContextCompacted,
    Message,
    MessageAppended,
    MessagesReverted,
    ReasoningPart,
    RecordAppended,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from sessionstore.importers._formats import FORMATS, file_head, recognise
from sessionstore.importers._gemini_cli import GENAI, RECORDED, gemini_cli_transcript
from sessionstore.importers._import import Header, write_transcript
from sessionstore.importers._lines import TextLines
from sessionstore.importers._transcript import Transcript
from tests.providers.request_types import check_anthropic, check_chat, check_responses

ENCODING = "cl100k_base"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "gemini_cli"
SESSION = "1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b"
SUBAGENT = "9e8d7c6b-5a49-4387-9a1b-2c3d4e5f6a7b"
JSONL = FIXTURES / "chats" / f"session-2026-05-11T10-00-{SESSION[:8]}.jsonl"
LEGACY = FIXTURES / "chats" / "session-2025-09-01T08-00-7a6b5c4d.json"
CHECKPOINT = FIXTURES / "checkpoint-before-fix.json"
M = "b2c0f6de-0001-4a8e-9e55-7d6e0000000"  # the main session's message ids, less their last digit


def read(text: str, companions: dict[str, str] | None = None) -> Transcript:
    lines = {name: TextLines(companion) for name, companion in (companions or {}).items()}
    return gemini_cli_transcript(TextLines(text), ENCODING, JSONL.name, lines)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def messages(transcript: Transcript) -> list[Message]:
    return [e.payload.message for e in transcript.entries if isinstance(e.payload, MessageAppended)]


def by_id(transcript: Transcript) -> dict[str, Message]:
    return {m.id: m for m in messages(transcript)}


def kinds(transcript: Transcript) -> list[tuple[str, str]]:
    return [
        (e.key, e.payload.record.kind)
        for e in transcript.entries
        if isinstance(e.payload, RecordAppended)
    ]


@pytest.fixture(scope="module")
def session() -> Transcript:
    subagent = JSONL.parent / SESSION / f"{SUBAGENT}.jsonl"
    return read(JSONL.read_text(), {subagent.name: subagent.read_text()})


# what the session becomes


def test_the_session_is_named_by_its_id_titled_by_its_summary(session: Transcript) -> None:
    assert (session.format, session.source_id) == ("gemini-cli", SESSION)
    assert (session.title, session.model) == ("Fix add() so test_add passes", "gemini-2.5-pro")
    assert session.skipped == []


def test_messages_are_where_they_first_appear_as_their_last_version(session: Transcript) -> None:
    assert [(m.role, m.id.removeprefix(M)) for m in messages(session)] == [
        ("user", "1"),
        ("assistant", "2"),  # line 4, as line 7 left it: with its tokens and its call
        ("tool", "2.results"),
        ("assistant", "4"),
        ("tool", "4.results"),
        ("assistant", "5"),
        ("user", "8"),  # rewound, below
        ("assistant", "9"),
        ("tool", "9.results"),
        ("user", "a"),
        ("assistant", "b"),
    ]
    first = by_id(session)[f"{M}2"]
    thinking, said, call = first.parts
    assert isinstance(thinking, ReasoningPart)
    assert thinking.text == "**Reading the test** The failing test is in test_calc.py."
    assert isinstance(said, TextPart) and said.text == "I'll read the test first."
    assert isinstance(call, ToolCallPart)
    assert (call.call_id, call.name) == ("read_file-1747000000000-0", "read_file")
    assert json.loads(call.arguments) == {"absolute_path": "/home/dev/calc/test_calc.py"}
    assert first.usage == Usage(input=8200 - 4096, output=60 + 120, cache_read=4096)
    last = records(JSONL)[6]  # its last version, without the content the parts hold
    assert first.native is not None and first.native.api == RECORDED
    assert first.native.value == {k: v for k, v in last.items() if k != "content"}


def test_calls_are_paired_with_their_results(session: Transcript) -> None:
    found = by_id(session)
    [read_result] = found[f"{M}2.results"].parts
    assert isinstance(read_result, ToolResultPart)
    assert (read_result.call_id, read_result.name, read_result.is_error) == (
        "read_file-1747000000000-0",
        "read_file",
        False,
    )
    assert read_result.output == "def test_add():\n    assert add(2, 2) == 4\n"
    # a call in the content without an id takes its tool call's, as Gemini CLI pairs them
    thought, call = found[f"{M}4"].parts
    assert isinstance(thought, ReasoningPart) and thought.native is not None
    assert thought.native.value == records(JSONL)[8]["content"][0]  # its signature kept
    assert (
        isinstance(call, ToolCallPart) and call.call_id == "codebase_investigator-1747000000100-0"
    )
    assert call.native is not None and call.native.api == GENAI
    [failed] = found[f"{M}9.results"].parts
    assert isinstance(failed, ToolResultPart) and failed.is_error
    assert failed.output == "Command exited with code 1: 1 failed"


def test_what_gemini_cli_does_not_send_again_is_a_record(session: Transcript) -> None:
    assert kinds(session) == [
        ("line:1", "gemini-cli.metadata"),
        ("line:3", "gemini-cli.set"),
        ("line:4", "gemini-cli.gemini.version"),  # the versions its last one replaced
        ("line:5", "gemini-cli.set"),
        ("line:6", "gemini-cli.gemini.version"),
        (f"{M}3", "gemini-cli.user"),  # the results, again, as a message: answered already
        (f"{M}6", "gemini-cli.info"),
        (f"{M}7", "gemini-cli.user"),  # /stats
        ("line:15", "gemini-cli.rewind"),
        ("line:18", "gemini-cli.set"),
    ]


def test_every_line_is_kept(session: Transcript) -> None:
    """Each line is a record, verbatim, or the last version of a message, whose native keeps
    it less its content (which its parts hold)."""
    kept = [
        e.payload.record.parts[0].native.value
        for e in session.entries
        if isinstance(e.payload, RecordAppended)
    ]
    natives = [m.native.value for m in messages(session) if m.native is not None]
    for number, line in enumerate(records(JSONL), start=1):
        content_less = {k: v for k, v in line.items() if k != "content"}
        assert line in kept or content_less in natives, number


def test_a_rewind_takes_its_messages_out_of_the_context(
    session: Transcript, store: SessionStore
) -> None:
    [revert] = [e.payload for e in session.entries if isinstance(e.payload, MessagesReverted)]
    assert revert == MessagesReverted(
        after_message_id=f"{M}5",
        reverted_message_ids=(f"{M}8", f"{M}9", f"{M}9.results"),
    )
    context = store.session(write(store, session)[0].session_id).context()
    assert [m.id.removeprefix(M) for m in context.messages] == [
        "1", "2", "2.results", "4", "4.results", "5", "a", "b",
    ]  # fmt: skip


def test_the_imported_context_renders_for_every_api(
    session: Transcript, store: SessionStore
) -> None:
    context = store.session(write(store, session)[0].session_id).context()
    request = context.to_anthropic()
    check_anthropic(request)
    assert request["messages"][0]["content"][0]["text"] == "test_add fails, please fix it"
    check_chat(context.to_openai())
    check_responses(context.to_responses())


def test_the_subagent_is_its_own_session_linked_to_its_call(
    session: Transcript, store: SessionStore
) -> None:
    [child] = session.children
    assert child.source_id == SUBAGENT and child.parent is not None
    assert (child.parent.parent_source_id, child.parent.call_id) == (
        SESSION,
        "codebase_investigator-1747000000100-0",
    )
    assert [m.role for m in messages(child)] == ["user", "assistant"]
    written = write(store, session)
    assert [w.session_id for w in written] == [f"gemini-cli-{SESSION}", f"gemini-cli-{SUBAGENT}"]
    origin = store.session(f"gemini-cli-{SUBAGENT}").state()["imported_from"]
    assert isinstance(origin, dict) and origin["parent_session_id"] == f"gemini-cli-{SESSION}"


def test_a_history_of_only_new_messages_is_a_compaction() -> None:
    """Gemini CLI's compression writes the new history as a `$set` list: its first message,
    the summary, replaces every live message; the rest follow it."""
    lines = records(JSONL)[:10]
    summary = {
        "id": "s-1",
        "timestamp": "2026-05-11T10:05:00.000Z",
        "type": "user",
        "content": [{"text": "<state_snapshot>fixing add()</state_snapshot>"}],
    }
    ack = {
        "id": "s-2",
        "timestamp": "2026-05-11T10:05:00.000Z",
        "type": "gemini",
        "content": [{"text": "Got it. Thanks for the additional context!"}],
    }
    lines.append({"$set": {"messages": [summary, ack], "lastUpdated": "2026-05-11T10:05:00Z"}})
    transcript = read("".join(json.dumps(line) + "\n" for line in lines))  # fmt: skip
    [compaction] = [
        e.payload for e in transcript.entries if isinstance(e.payload, ContextCompacted)
    ]
    assert compaction.summary.id == "s-1" and compaction.summary.role == "user"
    assert compaction.replaced_message_ids == (
        f"{M}1", f"{M}2", f"{M}2.results", f"{M}4", f"{M}4.results", f"{M}5",
    )  # fmt: skip
    assert [m.id for m in messages(transcript)][-1] == "s-2"
    assert transcript.live_messages == 2


# the other shapes


def test_a_session_written_as_one_document_reads_as_its_lines_would() -> None:
    transcript = gemini_cli_transcript(TextLines(LEGACY.read_text()), ENCODING, LEGACY.name)
    assert transcript.source_id == "7a6b5c4d-3e2f-4101-8f9e-8d7c6b5a4f3e"
    assert transcript.title == "What does calc.py do?"
    assert [m.role for m in messages(transcript)] == ["user", "assistant", "tool", "assistant"]
    assert kinds(transcript) == [("metadata@2025-09-01T08:01:10.000Z", "gemini-cli.metadata")]
    document = json.loads(LEGACY.read_text())
    lines = [{k: v for k, v in document.items() if k != "messages"}, *document["messages"]]
    as_lines = read("".join(json.dumps(line) + "\n" for line in lines))
    assert [e.payload for e in as_lines.entries][1:] == [e.payload for e in transcript.entries][1:]


def test_a_checkpoint_is_the_history_it_saved() -> None:
    transcript = gemini_cli_transcript(TextLines(CHECKPOINT.read_text()), ENCODING, CHECKPOINT.name)
    assert (transcript.source_id, transcript.title) == ("checkpoint-before-fix", "before-fix")
    assert [(m.role, m.id) for m in messages(transcript)] == [
        ("user", "content:0"),
        ("assistant", "content:1"),
        ("user", "content:2"),
        ("assistant", "content:3"),
        ("tool", "content:4.results"),
        ("assistant", "content:5"),
    ]
    [call] = messages(transcript)[3].parts
    [answer] = messages(transcript)[4].parts
    assert isinstance(call, ToolCallPart) and isinstance(answer, ToolResultPart)
    assert (answer.call_id, answer.name, answer.output) == (
        call.call_id,
        "list_directory",
        "calc.py\ntest_calc.py",
    )


def test_each_file_is_recognised_as_gemini_cli_and_nothing_else() -> None:
    for path in (JSONL, LEGACY, CHECKPOINT, JSONL.parent / SESSION / f"{SUBAGENT}.jsonl"):
        head, value = file_head(path)
        found = recognise(head, PurePath(path.name), value)
        assert found is not None and found.name == "gemini-cli", path
    others = Path(__file__).parent.parent / "fixtures"
    for path in (others / "claude_code_session.jsonl", *(others / "codex").glob("*.jsonl")):
        head, value = file_head(path)
        assert not FORMATS["gemini-cli"].recognises(value, [head]), path


# malformed input, strictness


def test_malformed_lines_are_skipped_and_reported() -> None:
    lines = JSONL.read_text().splitlines()
    text = "\n".join([*lines[:2], "{oops", "[1, 2]", '{"no": "record"}', *lines[2:]])
    transcript = read(text)
    assert [(s.line, s.reason) for s in transcript.skipped] == [
        (3, "not JSON: Expecting property name enclosed in double quotes (column 2)"),
        (4, "not a Gemini CLI record (metadata, message, $set, $rewindTo)"),
        (5, "not a Gemini CLI record (metadata, message, $set, $rewindTo)"),
    ]
    assert [m.id for m in messages(transcript)] == [m.id for m in messages(read(JSONL.read_text()))]


def test_strict_refuses_a_file_with_a_skipped_line(store: SessionStore, tmp_path: Path) -> None:
    path = tmp_path / JSONL.name
    path.write_text(JSONL.read_text() + "{oops\n")
    with pytest.raises(ImportRefused, match="not JSON"):
        store.import_session(path, strict=True)
    assert store.sessions() == []


def test_what_is_no_gemini_cli_session_is_refused() -> None:
    with pytest.raises(ImportRefused, match="not a Gemini CLI session"):
        read('{"hello": "world"}')


# re-imports


def write(store: SessionStore, transcript: Transcript) -> list[Any]:
    return write_transcript(store._log, transcript, Header(ENCODING))


def test_a_folder_import_finds_every_session_and_writes_nothing_again(
    store: SessionStore, tmp_path: Path
) -> None:
    root = tmp_path / "tmp" / "2c26b46b"
    shutil.copytree(FIXTURES, root)
    result = store.import_session(tmp_path / "tmp")
    assert result.skipped == []
    assert sorted(result.created) == [
        f"gemini-cli-{SESSION}",
        "gemini-cli-7a6b5c4d-3e2f-4101-8f9e-8d7c6b5a4f3e",
        f"gemini-cli-{SUBAGENT}",
        "gemini-cli-checkpoint-before-fix",
    ]
    assert all(store.verify(session_id).ok for session_id in result.created)
    again = store.import_session(tmp_path / "tmp")
    assert (again.created, again.events_written) == ([], 0)


def test_a_session_imported_as_it_grew_equals_one_imported_once(
    store: SessionStore, tmp_path: Path
) -> None:
    """The same events at the same times; only the title differs, the summary that names the
    session being its last line (the first import took the first prompt as the title)."""
    path = tmp_path / JSONL.name
    lines = JSONL.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:10]))  # up to the second model turn
    store.import_session(path)
    path.write_text("".join(lines))
    grown = store.import_session(path)
    assert grown.events_written > 0 and grown.skipped == []
    with SessionStore("sqlite://") as once:
        once.import_session(path)
        whole = [(e.event_id, e.recorded_at, e.payload) for e in once.read(f"gemini-cli-{SESSION}")]
    steps = [(e.event_id, e.recorded_at, e.payload) for e in store.read(f"gemini-cli-{SESSION}")]
    assert steps[1:] == whole[1:]
    assert steps[0][2].title == "test_add fails, please fix it"  # type: ignore[attr-defined]


def test_an_import_exports_and_imports_with_identical_hashes(
    session: Transcript, store: SessionStore, tmp_path: Path
) -> None:
    [written, _] = write(store, session)
    lines = list(store.export_session(written.session_id))
    with SessionStore(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        again = copy.import_session(lines)
        assert [e.hash for e in copy.read(again.id)] == [
            e.hash for e in store.read(written.session_id)
        ]


def test_an_agent_format_imports_from_text_too(store: SessionStore) -> None:
    s = store.import_session(JSONL.read_text(), format="gemini-cli")
    assert s.id == f"gemini-cli-{SESSION}" and s.header.app == "gemini-cli"


GOOD = JSONL.read_text().splitlines()
GARBAGE = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["null", "[]", '{"id": 3}', '{"$rewindTo": 1}', '{"$set": []}',
                     '{"id": "x", "type": "gemini", "content": 7}',
                     '{"id": "y", "type": "user", "content": [{"functionCall": {}}]}']),
)  # fmt: skip


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage=st.lists(st.tuples(st.integers(1, len(GOOD)), GARBAGE), max_size=4))
def test_garbled_lines_cost_only_themselves(garbage: list[tuple[int, str]]) -> None:
    lines = list(GOOD)
    for at, junk in sorted(garbage, reverse=True):
        lines.insert(at, junk.replace("\n", " "))
    try:
        transcript = read("\n".join(lines))
    except ImportRefused:
        return
    kept = {m.id for m in messages(transcript)}
    assert {m.id for m in messages(read("\n".join(GOOD)))} - kept <= {f"{M}8", f"{M}9"} | {
        f"{M}9.results"
    } or any("$rewindTo" in junk or "$set" in junk for _, junk in garbage)
