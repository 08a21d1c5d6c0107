"""The OpenCode importer on a hand-written session (tests/fixtures/opencode: an `opencode export`
and the same session, with its reviewing subagent, as a storage folder): exact messages, calls
paired with results, the pruned output kept, the compaction's boundary, records of what is no
message, skipped input reported, idempotent and growing re-imports, valid renders, and an
export round trip with identical hashes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessionstore import ImportRefused, SessionStore
from sessionstore.events import (
    ANTHROPIC,
    OPENAI_RESPONSES,
    ContextCompacted,
    FilePart,
    Message,
    MessageAppended,
    MessagesReverted,
    OutputsPruned,
    ReasoningPart,
    RecordAppended,
    SessionCleared,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionstore.importers._import import Header, write_transcript
from sessionstore.importers._opencode import (
    COMPACTION_REQUEST,
    PRUNED,
    looks_like_opencode,
    opencode_transcript,
)
from sessionstore.importers._opencode_storage import (
    is_opencode_storage,
    opencode_session_ids,
    opencode_storage_transcript,
    read_opencode_session,
)
from sessionstore.importers._transcript import Transcript
from tests.providers.request_types import check_anthropic, check_chat, check_responses

FIXTURES = Path(__file__).parent.parent / "fixtures" / "opencode"
ENCODING = "cl100k_base"
SESSION = "ses_6a1f0e2affe0Kq7TnB2xVwYzLp"
CHILD = "ses_6a1f0e2c4410Hr5MdW8uPq3sTn"


def export() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / "export.json").read_text())
    return document


def ids(document: dict[str, Any]) -> list[str]:
    return [m["info"]["id"] for m in document["messages"]]


def read(document: dict[str, Any]) -> Transcript:
    return opencode_transcript(json.dumps(document), ENCODING)


def messages(transcript: Transcript) -> list[Message]:
    return [e.payload.message for e in transcript.entries if isinstance(e.payload, MessageAppended)]


def raw(message: Message) -> Any:
    """The OpenCode JSON a message keeps in its native."""
    assert message.native is not None and message.native.api == "opencode"
    return message.native.value


def of_type(transcript: Transcript, kind: type) -> list[Any]:
    return [e.payload for e in transcript.entries if isinstance(e.payload, kind)]


@pytest.fixture(scope="module")
def imported() -> Transcript:
    return read(export())


def test_the_export_is_detected_and_named_by_its_session(imported: Transcript) -> None:
    text = (FIXTURES / "export.json").read_text()
    assert looks_like_opencode(text) and looks_like_opencode(json.loads(text))
    assert not looks_like_opencode('{"type": "summary"}') and not looks_like_opencode("{")
    assert (imported.format, imported.source_id) == ("opencode", SESSION)
    assert (imported.title, imported.model) == (
        "Add a --utc flag to tzcli",
        "claude-sonnet-4-20250514",
    )
    assert imported.skipped == [] and imported.parent is None


def test_each_step_is_an_assistant_message_followed_by_its_results(imported: Transcript) -> None:
    doc = export()
    u1, a2, u3, a4, u5, _, u7, a8, _ = ids(doc)
    parts = [p["id"] for p in doc["messages"][1]["parts"]]
    shape = [(m.role, m.id, [type(p).__name__ for p in m.parts]) for m in messages(imported)]
    assert shape == [
        ("user", u1, ["TextPart", "FilePart", "TextPart"]),
        ("assistant", a2, ["ReasoningPart", "TextPart", "ToolCallPart", "ToolCallPart"]),
        ("tool", f"{parts[3]}.result", ["ToolResultPart"]),
        ("tool", f"{parts[4]}.result", ["ToolResultPart"]),
        ("assistant", parts[6], ["ToolCallPart"]),  # the second step, named by its step-start
        ("tool", f"{parts[7]}.result", ["ToolResultPart"]),
        ("assistant", parts[10], ["TextPart"]),
        ("user", u3, ["TextPart"]),
        ("assistant", a4, ["ToolCallPart", "ToolCallPart"]),
        ("tool", f"{doc['messages'][3]['parts'][1]['id']}.result", ["ToolResultPart"]),
        ("tool", f"{doc['messages'][3]['parts'][2]['id']}.result", ["ToolResultPart"]),
        ("user", u5, ["TextPart"]),
        ("user", u7, ["TextPart"]),
        ("assistant", a8, ["ReasoningPart", "ReasoningPart", "TextPart", "ToolCallPart"]),
    ]
    kinds = [type(e.payload).__name__ for e in imported.entries]
    assert kinds.count("ContextCompacted") == 1 and kinds.count("OutputsPruned") == 1
    assert [r.record.kind for r in of_type(imported, RecordAppended)] == [
        "opencode.session",
        "opencode.unsent",  # the rate-limited message OpenCode never sent again
        "opencode.todos",
    ]
    assert all(p.tokens is not None for m in messages(imported) for p in m.parts)


def test_what_the_user_attached_is_shown_as_opencode_shows_it(imported: Transcript) -> None:
    request = messages(imported)[0]
    text, image, synthetic = request.parts
    assert isinstance(text, TextPart) and text.text.startswith("Add a --utc flag")
    assert isinstance(image, FilePart) and (image.media_type, image.filename) == (
        "image/png",
        "bug.png",
    )
    assert image.data is not None and image.url is None
    assert isinstance(synthetic, TextPart) and synthetic.text.startswith("Called the Read tool")
    # the text/plain file and the @agent mention are not sent; they stay in the native JSON
    kept = raw(request)
    assert [p["type"] for p in kept["parts"]] == [
        "text",
        "file",
        "file",
        "text",
        "agent",
    ]
    assert "text" not in kept["parts"][0] and "url" not in kept["parts"][1]  # held by our parts
    assert kept["parts"][2]["url"] == "file:///home/dev/tzcli/cli.py"


def test_calls_are_paired_with_their_results_and_a_running_call_stays_unanswered(
    imported: Transcript,
) -> None:
    calls = {
        p.call_id: p for m in messages(imported) for p in m.parts if isinstance(p, ToolCallPart)
    }
    results = {
        p.call_id: p for m in messages(imported) for p in m.parts if isinstance(p, ToolResultPart)
    }
    assert list(calls) == [
        "toolu_01ReadCli",
        "toolu_01GrepFmt",
        "toolu_01EditCli",
        "toolu_02Pytest",
        "toolu_02Review",
        "call_Kx81PytestOne",
    ]
    assert list(results) == list(calls)[:5]  # the running bash call has no result
    assert json.loads(calls["toolu_01ReadCli"].arguments) == {"filePath": "/home/dev/tzcli/cli.py"}
    assert results["toolu_02Pytest"].is_error and results["toolu_02Pytest"].output.startswith(
        "Error: exit code 1"
    )
    assert results["toolu_01EditCli"].output == "" and not results["toolu_01EditCli"].is_error
    assert {r.name for r in results.values()} == {"read", "grep", "edit", "bash", "task"}


def test_step_usage_comes_from_step_finish(imported: Transcript) -> None:
    assistants = [m for m in messages(imported) if m.role == "assistant"]
    usages = [
        (u.input, u.output, u.cache_read, u.cache_write) if (u := m.usage) else None
        for m in assistants
    ]
    assert usages == [
        (3120, 220, 0, 2900),
        (40, 95, 6020, 120),
        (30, 40, 6200, 0),
        (210, 160, 6400, 300),
        (2400, 420, 1800, 0),
    ]


def test_reasoning_keeps_its_provider_block_and_is_never_text(imported: Transcript) -> None:
    reasoning = [p for m in messages(imported) for p in m.parts if isinstance(p, ReasoningPart)]
    claude, first, second = reasoning
    assert claude.native is not None and claude.native.api == ANTHROPIC
    assert claude.native.value == {
        "type": "thinking",
        "thinking": claude.text,
        "signature": "EqQBCkgIARABGAIiQL1Yk0sig==",
    }
    # the AI SDK's two parts of one OpenAI reasoning item become that item, once
    assert first.native is not None and first.native.api == OPENAI_RESPONSES
    assert first.native.value == {
        "type": "reasoning",
        "id": "rs_68a1c0ffee01",
        "summary": [
            {"type": "summary_text", "text": first.text},
            {"type": "summary_text", "text": second.text},
        ],
        "encrypted_content": "gAAAAABo_encrypted_blob==",
    }
    assert second.native is None
    # the OpenCode metadata itself stays verbatim in the message's native
    parts = raw(messages(imported)[-1])["parts"]
    metadata = [p["metadata"] for p in parts if p["type"] == "reasoning"]
    assert metadata[1] == {
        "openai": {
            "itemId": "rs_68a1c0ffee01",
            "reasoningEncryptedContent": "gAAAAABo_encrypted_blob==",
        }
    }


def test_every_part_opencode_wrote_is_kept_in_order(imported: Transcript) -> None:
    doc = export()
    a2 = doc["messages"][1]
    kept = [
        part for m in messages(imported)[1:7] if m.role == "assistant" for part in raw(m)["parts"]
    ]
    assert [p["id"] for p in kept] == [p["id"] for p in a2["parts"]]
    assert raw(messages(imported)[1])["info"] == a2["info"]
    read_tool = next(p for p in kept if p.get("tool") == "read")
    assert "output" not in read_tool["state"]  # the result holds it
    assert read_tool["state"]["time"]["compacted"] == 1746093695000


def test_a_pruned_output_is_kept_whole_and_pruned_at_its_time(imported: Transcript) -> None:
    [pruned] = of_type(imported, OutputsPruned)
    read_part = export()["messages"][1]["parts"][3]
    assert pruned.part_ids == (f"{read_part['id']}.output",)
    assert pruned.placeholder == PRUNED and pruned.reason == "opencode prune"
    result = next(p for m in messages(imported) for p in m.parts if p.id == pruned.part_ids[0])
    assert isinstance(result, ToolResultPart) and result.output == read_part["state"]["output"]
    keys = [e.key for e in imported.entries]
    at = keys.index(f"{read_part['id']}.pruned")
    assert keys[at - 1].endswith(".result") and keys[at + 1] == ids(export())[4]  # before u5
    assert pruned.tokens_freed == (result.tokens or 0) - (pruned.placeholder_tokens or 0)


def test_the_summary_replaces_what_came_before_its_request(imported: Transcript) -> None:
    *_, u5, a6, _, _, _ = ids(export())
    [compaction] = of_type(imported, ContextCompacted)
    before = [m.id for m in messages(imported)[:11]]
    assert compaction.replaced_message_ids == tuple(before)
    assert compaction.first_kept_message_id == a6 == compaction.summary.id
    assert compaction.summary.role == "assistant" and compaction.reason == "before_llm_call"
    assert compaction.summarizer == "opencode"
    summary = compaction.summary.parts[0]
    assert isinstance(summary, TextPart) and summary.text.startswith("## Goal")
    request = messages(imported)[11]
    assert request.id == u5 and request.parts[0].text == COMPACTION_REQUEST  # type: ignore[union-attr]


def write(store: SessionStore, transcript: Transcript) -> list[Any]:
    return write_transcript(store._log, transcript, Header(ENCODING))


def test_the_live_context_is_what_opencode_sends_after_its_compaction(store: SessionStore) -> None:
    [written] = write(store, read(export()))
    _, _, _, _, u5, a6, u7, a8, _ = ids(export())
    session = store.session(written.session_id)
    live = session.context().messages
    assert [m.id for m in live] == [u5, a6, u7, a8]
    assert store.verify(written.session_id).ok
    # replay before the compaction shows the pruned output as OpenCode did, and restores it
    at = next(e.seq for e in store.read(written.session_id) if e.type == "ContextCompacted") - 1
    before = session.context(at=at)
    shown = [p for m in before.messages for p in m.parts if p.id.endswith(".output")]
    assert shown[0].output == PRUNED  # type: ignore[union-attr]
    restored = session.context(at=at, restore_pruned=True)
    first = next(p for m in restored.messages for p in m.parts if p.id.endswith(".output"))
    assert first.output.startswith("<file>")  # type: ignore[union-attr]


def test_renders_of_the_imported_context_are_valid(store: SessionStore) -> None:
    head = export()
    head["messages"], head["info"]["id"] = head["messages"][:4], "ses_head"
    for document in (export(), head):  # after the compaction, and the whole head before it
        [written] = write(store, read(document))
        context = store.session(written.session_id).context()
        check_chat(context.to_openai())
        check_anthropic(context.to_anthropic())
        check_responses(context.to_responses())


def test_anthropic_gets_its_thinking_back_with_the_signature(store: SessionStore) -> None:
    doc = {**export(), "messages": export()["messages"][:2]}
    [written] = write(store, read(doc))
    request = store.session(written.session_id).context().to_anthropic()
    blocks = request["messages"][1]["content"]
    assert blocks[0] == {
        "type": "thinking",
        "thinking": "The user wants a UTC flag. First read cli.py and look for datetime usage.",
        "signature": "EqQBCkgIARABGAIiQL1Yk0sig==",
    }
    chat = store.session(written.session_id).context().to_openai()
    assert "UTC flag. First read" not in json.dumps(chat)  # reasoning is never text


def test_a_kept_tail_stays_after_the_summary() -> None:
    doc = export()
    _, _, u3, _, u5, *_ = ids(doc)
    doc["messages"][4]["parts"][0]["tail_start_id"] = u3
    doc["messages"][4]["parts"][0]["auto"] = False
    transcript = read(doc)
    [compaction] = of_type(transcript, ContextCompacted)
    head = [m.id for m in messages(transcript)[:7]]
    assert compaction.replaced_message_ids == (*head, u5)
    assert compaction.first_kept_message_id == u3 and compaction.reason == "manual"


def test_an_older_summary_without_a_request_replaces_everything_before_it() -> None:
    doc = export()
    doc["messages"][4]["parts"][0] = {
        **doc["messages"][4]["parts"][0],
        "type": "text",
        "text": "/summarize",
    }
    transcript = read(doc)
    [compaction] = of_type(transcript, ContextCompacted)
    assert compaction.replaced_message_ids == tuple(m.id for m in messages(transcript)[:12])
    assert compaction.first_kept_message_id == compaction.summary.id == ids(doc)[5]


def test_a_pending_revert_takes_the_messages_from_it_on_out_of_the_context() -> None:
    doc = export()
    *_, u7, a8, _ = ids(doc)
    doc["info"]["revert"] = {"messageID": u7}
    transcript = read(doc)
    [revert] = of_type(transcript, MessagesReverted)
    assert revert.reverted_message_ids == (u7, a8)
    assert revert.after_message_id == ids(doc)[5]
    doc["info"]["revert"] = {"messageID": ids(doc)[0]}
    doc["messages"] = doc["messages"][:3]
    [cleared] = of_type(read(doc), SessionCleared)
    assert len(cleared.cleared_message_ids) == 8


def test_malformed_messages_and_parts_are_skipped_and_reported() -> None:
    doc = export()
    doc["messages"][2]["parts"].append("not a part")
    doc["messages"][2]["parts"].append({"id": "prt_x", "type": "text", "text": 7})
    doc["messages"][3]["parts"][1]["state"] = {"status": "completed", "input": {}}  # no output
    doc["messages"].insert(3, 42)
    doc["messages"].insert(3, {"info": {"id": "msg_bad", "role": "system"}, "parts": []})
    transcript = read(doc)
    assert [(s.file, s.reason) for s in transcript.skipped] == [
        ("messages[2].parts[1]", "a part that is not an object"),
        ("messages[3]", "a message with role 'system'"),
        ("messages[4]", "a message without an 'info' object"),
        ("messages[2].parts[2]", "a text part without a string 'text'"),
        ("messages[5].parts[1]", "completed tool call 'toolu_02Pytest' has no string 'output'"),
    ]
    assert len(messages(transcript)) == len(messages(read(export()))) - 1  # one result fewer


@pytest.mark.parametrize(
    "text",
    ["", "[]", '"x"', '{"info": {}, "messages": []}', '{"info": {"id": "ses_1"}}', '{"info'],
)
def test_what_is_not_an_export_is_refused(text: str) -> None:
    with pytest.raises(ImportRefused):
        opencode_transcript(text, ENCODING)


def test_a_session_with_no_messages_is_refused() -> None:
    with pytest.raises(ImportRefused, match="holds no messages"):
        read({**export(), "messages": [7]})


def test_reimport_writes_nothing_and_a_grown_session_adds_only_its_new_entries(
    store: SessionStore,
) -> None:
    doc = export()
    head = {**doc, "messages": doc["messages"][:4], "todos": []}
    [first] = write(store, read(head))
    assert first.created
    [again] = write(store, read(head))
    assert (again.created, again.events_written) == (False, 0)
    [grown] = write(store, read(doc))
    full = read(doc)
    new_keys = {e.key for e in full.entries} - {e.key for e in read(head).entries}
    assert grown.events_written == len(new_keys)
    assert store.verify(first.session_id).ok


def test_an_export_round_trip_keeps_every_hash(store: SessionStore, tmp_path: Path) -> None:
    [written] = write(store, read(export()))
    lines = list(store.export_session(written.session_id))
    other = SessionStore(f"sqlite:///{tmp_path / 'other.db'}")
    copy_ = other.import_session(lines)
    assert [e.hash for e in other.read(copy_.id)] == [
        e.hash for e in store.read(written.session_id)
    ]


# the storage folder


def test_a_storage_folder_reads_as_the_export_does_with_its_subagent() -> None:
    root = FIXTURES / "storage"
    assert is_opencode_storage(root) and not is_opencode_storage(FIXTURES)
    assert opencode_session_ids(root) == [SESSION]  # the subagent comes with its parent
    files = read_opencode_session(root, SESSION)
    transcript = opencode_storage_transcript(files, SESSION, ENCODING)
    exported = read(export())
    assert [e.key for e in transcript.entries] == [e.key for e in exported.entries]
    assert [e.payload for e in transcript.entries] == [e.payload for e in exported.entries]
    [child] = transcript.children
    assert child.source_id == CHILD and child.parent is not None
    assert (child.parent.parent_source_id, child.parent.call_id) == (SESSION, "toolu_02Review")
    assert [m.role for m in messages(child)] == ["user", "assistant"]


def test_storage_files_that_are_not_json_are_skipped_and_reported() -> None:
    files = read_opencode_session(FIXTURES / "storage", SESSION)
    broken = sorted(k for k in files if k.startswith("part/"))[0]
    files[broken] = '{"id": "prt_'
    transcript = opencode_storage_transcript(files, SESSION, ENCODING)
    assert [(s.file, s.reason) for s in transcript.skipped] == [(broken, "not JSON")]
    with pytest.raises(ImportRefused, match="no session file"):
        opencode_storage_transcript(files, "ses_missing", ENCODING)


def test_a_subagent_is_written_as_its_own_session_linked_to_the_task_call(
    store: SessionStore,
) -> None:
    files = read_opencode_session(FIXTURES / "storage", SESSION)
    written = write(store, opencode_storage_transcript(files, SESSION, ENCODING))
    assert [w.session_id for w in written] == [f"opencode-{SESSION}", f"opencode-{CHILD}"]
    origin: Any = store.session(f"opencode-{CHILD}").state()["imported_from"]
    assert (
        origin["parent_session_id"] == f"opencode-{SESSION}"
        and origin["call_id"] == "toolu_02Review"
    )


# fuzz: garbage among the messages never breaks the good ones

GARBAGE = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(
        st.sampled_from(["info", "parts", "id", "role"]),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=4),
            lambda inner: (
                st.lists(inner, max_size=2)
                | st.dictionaries(
                    st.sampled_from(["id", "role", "type", "text", "state"]), inner, max_size=3
                )
            ),
            max_leaves=6,
        ),
        max_size=3,
    ),
)

PART = st.one_of(
    GARBAGE,
    st.fixed_dictionaries(
        {
            "id": st.text(min_size=1, max_size=4),
            "type": st.sampled_from(["text", "tool", "file", "reasoning", "step-finish", "new"]),
        },
        optional={
            "text": st.text(max_size=4) | st.integers(),
            "state": st.dictionaries(
                st.sampled_from(["status", "input", "output", "error", "time"]),
                st.sampled_from(["completed", "error", "running", "x", 3, None, {}]),
            ),
            "callID": st.text(max_size=3),
            "tool": st.text(max_size=3),
            "mime": st.sampled_from(["image/png", "", 5]),
            "url": st.sampled_from(["data:image/png;base64,AAAA", "file:///x", "data:,", 1]),
            "tokens": st.dictionaries(st.sampled_from(["input", "output"]), st.integers()),
        },
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    garbage=st.lists(st.tuples(st.integers(0, 9), GARBAGE), max_size=4),
    parts=st.lists(st.tuples(st.integers(0, 5), PART), max_size=4),
)
# a part whose id the store cannot keep (a NUL) once sank the whole message it was in
@example(garbage=[], parts=[(0, {"id": "\x00", "type": "text"})])
def test_garbled_messages_and_parts_are_skipped_and_the_good_ones_kept(
    garbage: list[tuple[int, Any]], parts: list[tuple[int, Any]]
) -> None:
    doc = copy.deepcopy(_DOC)
    for at, junk in parts:
        doc["messages"][-1 - at % 3]["parts"].insert(at, junk)
    for at, junk in garbage:
        doc["messages"].insert(at, junk)
    try:
        transcript = read(doc)
    except ImportRefused:
        return
    good = {e.key for e in _GOOD.entries if not e.key.startswith(("session@", "revert@"))}
    assert good <= {e.key for e in transcript.entries} | _maybe_shadowed(garbage)


_DOC = export()
_GOOD = read(_DOC)


def _maybe_shadowed(garbage: list[tuple[int, Any]]) -> set[str]:
    """Keys a garbage message may legitimately take: one with a real message's id comes first
    and the real one is then a duplicate (reported)."""
    taken = set()
    for _, junk in garbage:
        info = junk.get("info") if isinstance(junk, dict) else None
        if isinstance(info, dict) and isinstance(info.get("id"), str):
            taken.add(info["id"])
    return {e.key for e in _GOOD.entries} if taken & set(ids(_DOC)) else set()
