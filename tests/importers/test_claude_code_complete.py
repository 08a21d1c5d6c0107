"""The Claude Code importer on the shapes real transcripts have and a first importer lost: the
entry tree of parallel tool calls, old files without parents, queued prompts, malformed and
cut-off lines, rewinds, partial compactions, subagent files and the web export. Each imported
session renders valid requests, exports and re-imports with the same hashes, and imports once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore import ImportRefused, SessionStore
from sessionstore.events import (
    ContextCompacted,
    MessageAppended,
    MessagesReverted,
    RecordAppended,
    ToolCallPart,
)
from sessionstore.importers._claude_code import claude_code_transcript
from sessionstore.importers._transcript import Transcript
from sessionstore.projections import Context, LiveToolResult
from tests.providers.fake_anthropic import validate_messages
from tests.providers.request_types import check_anthropic, check_chat

ENCODING = "cl100k_base"
SESSION = "9a8b7c6d-0000-4000-8000-00000000cafe"
T = "2025-10-01T10:{:02d}:00.000Z"


def entry(kind: str, uuid: str, parent: str | None, content: Any, n: int, **extra: Any) -> Json:
    message: dict[str, Any] = {"role": kind, "content": content, **extra.pop("message", {})}
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SESSION,
        "timestamp": T.format(n),
        "message": message,
        **extra,
    }


Json = dict[str, Any]


def said(uuid: str, parent: str | None, api_id: str, block: Json, n: int) -> Json:
    meta = {"id": api_id, "model": "claude-sonnet-4-5", "usage": {"output_tokens": n}}
    return entry("assistant", uuid, parent, [block], n, message=meta)


def use(call_id: str, path: str) -> Json:
    return {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": path}}


def result(call_id: str, text: str) -> list[Json]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": text}]


def parallel_session() -> list[Json]:
    """One response with thinking, text and two parallel calls, written block by block, the
    first call's result written before the second call's block (as Claude Code streams)."""
    thinking = {"type": "thinking", "thinking": "Read both.", "signature": "sig-abc"}
    return [
        entry("user", "u1", None, "Compare a.py and b.py", 0),
        said("a1", "u1", "msg_1", thinking, 1),
        said("a2", "a1", "msg_1", {"type": "text", "text": "Reading both."}, 2),
        said("a3", "a2", "msg_1", use("t1", "/r/a.py"), 3),
        entry("user", "r1", "a3", result("t1", "A = 1"), 4, toolUseResult={"type": "text"}),
        said("a4", "a3", "msg_1", use("t2", "/r/b.py"), 5),
        entry("user", "r2", "a4", result("t2", "B = 2"), 6),
        said("a5", "r2", "msg_2", {"type": "text", "text": "They differ."}, 7),
    ]


def jsonl(entries: list[Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in entries)


def read(entries: list[Any], **kwargs: Any) -> Transcript:
    return claude_code_transcript(jsonl(entries), ENCODING, "s.jsonl", **kwargs)


def conversation(transcript: Transcript) -> list[tuple[str, str]]:
    return [
        (p.message.role, p.message.id)
        for p in transcript.payloads
        if isinstance(p, MessageAppended)
    ]


def live(
    tmp_path: Path, transcript_text: str, name: str = "s.jsonl"
) -> tuple[SessionStore, Context]:
    path = tmp_path / name
    path.write_text(transcript_text)
    store = SessionStore(f"sqlite:///{tmp_path / 'store.db'}")
    result = store.import_session(path)
    return store, store.session(result.session_ids[0]).context()


def test_parallel_calls_and_their_results_are_all_kept_and_paired(tmp_path: Path) -> None:
    transcript = read(parallel_session())
    assert conversation(transcript) == [
        ("user", "u1"),
        ("assistant", "a1"),  # every block of msg_1, in the order the model produced them
        ("tool", "r1"),
        ("tool", "r2"),
        ("assistant", "a5"),
    ]
    merged = next(p.message for p in transcript.payloads if isinstance(p, MessageAppended)
                  and p.message.id == "a1")  # fmt: skip
    assert [part.type for part in merged.parts] == ["reasoning", "text", "tool_call", "tool_call"]
    store, context = live(tmp_path, jsonl(parallel_session()))
    request = context.to_anthropic()
    check_anthropic(request)
    validate_messages(request["messages"])
    turn = request["messages"][1]
    assert turn["content"][0] == {
        "type": "thinking",
        "thinking": "Read both.",
        "signature": "sig-abc",
    }
    assert [b["type"] for b in request["messages"][2]["content"]] == ["tool_result", "tool_result"]
    check_chat(context.to_openai())
    store.close()


def test_old_files_without_parents_import_in_file_order() -> None:
    entries = [{**e, "parentUuid": None} for e in parallel_session()]
    assert conversation(read(entries)) == conversation(read(parallel_session()))


def test_queued_prompts_that_reached_the_model_are_user_messages() -> None:
    entries = [
        *parallel_session()[:4],
        {"type": "queue-operation", "operation": "enqueue", "content": "also check c.py",
         "timestamp": T.format(4), "sessionId": SESSION},
        {"type": "attachment", "uuid": "q1", "parentUuid": "a3", "timestamp": T.format(4),
         "sessionId": SESSION, "attachment": {"type": "queued_command", "prompt": "and d.py",
                                              "commandMode": "prompt"}},
        {"type": "queue-operation", "operation": "remove", "reason": "absorbed_mid_turn",
         "timestamp": T.format(5), "sessionId": SESSION},
        *parallel_session()[4:],
    ]  # fmt: skip
    transcript = read(entries)
    users = [
        p.message.parts[0].text  # type: ignore[union-attr]
        for p in transcript.payloads
        if isinstance(p, MessageAppended) and p.message.role == "user"
    ]
    assert users == ["Compare a.py and b.py", "and d.py", "also check c.py"]
    kinds = [p.record.kind for p in transcript.payloads if isinstance(p, RecordAppended)]
    assert kinds == ["queue-operation", "queue-operation"]  # and the operations themselves


def test_malformed_lines_are_skipped_and_reported_with_their_line(tmp_path: Path) -> None:
    good = parallel_session()
    text = (
        jsonl(good[:2])
        + '"a JSON string"\n42\n[1, 2]\n{"no": "type"}\n'
        + jsonl([entry("user", "u9", "a1", ["a bare string in a list"], 2)])
        + jsonl(good[2:])
        + '{"type": "user", "uuid": "cut'
    )
    transcript = claude_code_transcript(text, ENCODING, "s.jsonl")
    assert [(s.line, s.reason) for s in transcript.skipped] == [
        (3, "a JSON string, not an entry"),
        (4, "a JSON number, not an entry"),
        (5, "a JSON list, not an entry"),
        (6, "an object without a type"),
        (14, "the last line is cut off (the file ends mid-entry)"),
    ]
    assert ("user", "u9") in conversation(transcript)  # a bare string in a list is its text
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    with SessionStore("sqlite://") as store:
        result = store.import_session(path)
        assert len(result.skipped) == 5 and result.skipped[0].file == str(path)
        try:
            store.import_session(path, strict=True)
        except ImportRefused as refused:
            assert (refused.line, refused.reason) == (3, "a JSON string, not an entry")
        else:
            raise AssertionError("strict import accepted a malformed line")


def test_a_rewound_branch_stays_in_the_log_and_leaves_the_context(tmp_path: Path) -> None:
    entries = [
        *parallel_session(),
        entry("user", "u2", "a5", "Now delete b.py", 8),
        said("a6", "u2", "msg_3", {"type": "text", "text": "Deleted."}, 9),
        entry("user", "u3", "a5", "No, rename b.py instead", 10),  # rewound to a5
        said("a7", "u3", "msg_4", {"type": "text", "text": "Renamed."}, 11),
    ]
    transcript = read(entries)
    reverts = [p for p in transcript.payloads if isinstance(p, MessagesReverted)]
    assert reverts == [MessagesReverted(after_message_id="a5", reverted_message_ids=("u2", "a6"))]
    store, context = live(tmp_path, jsonl(entries))
    assert [m.id for m in context.messages][-3:] == ["a5", "u3", "a7"]
    session = store.session(store.sessions()[0].id)
    replay = session.context(at=session.version - 3)  # before the rewind
    assert [m.id for m in replay.messages][-2:] == ["u2", "a6"]
    store.close()


def test_a_partial_compaction_keeps_its_preserved_segment() -> None:
    entries = [
        *parallel_session(),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
         "logicalParentUuid": "a5", "sessionId": SESSION, "timestamp": T.format(8),
         "compactMetadata": {"trigger": "auto", "preTokens": 9000,
                             "preservedSegment": {"headUuid": "r2", "anchorUuid": "b1",
                                                  "tailUuid": "a5"}}},
        entry("user", "s1", "b1", "Summary: compared a.py and b.py", 9, isCompactSummary=True),
    ]  # fmt: skip
    [compaction] = [p for p in read(entries).payloads if isinstance(p, ContextCompacted)]
    assert compaction.replaced_message_ids == ("u1", "a1", "r1")
    assert compaction.first_kept_message_id == "r2"


def test_a_subagent_file_is_its_own_session_linked_to_its_call(tmp_path: Path) -> None:
    task = {"type": "tool_use", "id": "t9", "name": "Task", "input": {"prompt": "find it"}}
    main = [
        entry("user", "u1", None, "Find the bug", 0),
        said("a1", "u1", "msg_1", task, 1),
        entry("user", "r1", "a1", result("t9", "found"), 2, toolUseResult={"agentId": "7f3e"}),
    ]
    side = [
        entry("user", "s1", None, "find it", 1, isSidechain=True, agentId="7f3e"),
        said("s2", "s1", "msg_9", {"type": "text", "text": "found"}, 2),
    ]
    project = tmp_path / "projects" / "-r"
    (project / SESSION / "subagents").mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_text(jsonl(main))
    (project / SESSION / "subagents" / "agent-7f3e.jsonl").write_text(jsonl(side))
    with SessionStore("sqlite://") as store:
        imported = store.import_session(tmp_path / "projects")
        ids = imported.session_ids
        assert ids == [f"claude-code-{SESSION}", f"claude-code-{SESSION}/agent-7f3e"]
        origin = store.session(ids[1]).state()["imported_from"]
        assert origin == {
            "format": "claude-code",
            "source_id": f"{SESSION}/agent-7f3e",
            "parent_session_id": f"claude-code-{SESSION}",
            "call_id": "t9",
        }


def test_the_web_export_imports_like_the_file(tmp_path: Path) -> None:
    web = json.dumps({"loglines": parallel_session()})
    assert conversation(claude_code_transcript(web, ENCODING)) == conversation(
        read(parallel_session())
    )
    store, context = live(tmp_path, web, "web.json")
    assert [m.id for m in context.messages] == ["u1", "a1", "r1", "r2", "a5"]
    store.close()


def inline_sidechains() -> list[Json]:
    """Claude Code 1.0.x: two Task calls run in parallel, their subagents' conversations
    written into the main file (`isSidechain`, no `agentId`), interleaved, each rooted at the
    prompt its Task call gave; the second call's subagent starts first."""
    tasks = [
        {"type": "tool_use", "id": "t1", "name": "Task",
         "input": {"description": "types", "prompt": "Write the types", "subagent_type": "x"}},
        {"type": "tool_use", "id": "t2", "name": "Task",
         "input": {"description": "tests", "prompt": "Write the tests", "subagent_type": "x"}},
    ]  # fmt: skip

    def side(uuid: str, parent: str | None, content: Any, n: int) -> Json:
        if isinstance(content, str) or content[0]["type"] == "tool_result":
            return entry("user", uuid, parent, content, n, isSidechain=True)
        extra = {"message": {"id": f"msg_{uuid}", "model": "claude-sonnet-4"}}
        return entry("assistant", uuid, parent, content, n, isSidechain=True, **extra)

    def text(words: str) -> list[Json]:
        return [{"type": "text", "text": words}]

    return [
        entry("user", "u1", None, "Add types and tests", 0),
        said("a1", "u1", "msg_1", tasks[0], 1),
        said("a2", "a1", "msg_1", tasks[1], 2),
        side("s2a", None, "Write the tests", 3),  # t2's subagent
        side("s1a", None, "Write the types", 4),  # t1's subagent
        side("s2b", "s2a", [use("t9", "/r/test.py")], 5),
        side("s1b", "s1a", text("Types written."), 6),
        side("s2c", "s2b", result("t9", "def test(): ..."), 7),
        side("s2d", "s2c", text("Tests written."), 8),
        entry("user", "r1", "a2", result("t1", "Types written."), 9),
        entry("user", "r2", "r1", result("t2", "Tests written."), 10),
        said("a3", "r2", "msg_2", {"type": "text", "text": "Both done."}, 11),
    ]


def test_inline_sidechains_are_one_session_each_linked_to_their_task_call(
    tmp_path: Path,
) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text(jsonl(inline_sidechains()))
    main = f"claude-code-{SESSION}"
    with SessionStore("sqlite://") as store:
        result = store.import_session(path)
        assert result.session_ids == [main, f"{main}/agent-sidechain", f"{main}/agent-sidechain-2"]
        sides = {}
        for session_id in result.session_ids[1:]:
            session = store.session(session_id)
            origin = session.state()["imported_from"]
            assert isinstance(origin, dict)
            assert origin["parent_session_id"] == main
            sides[origin["call_id"]] = [m.id for m in session.context().messages]
        assert sides == {"t2": ["s2a", "s2b", "s2c", "s2d"], "t1": ["s1a", "s1b"]}
        assert [m.id for m in store.session(main).context().messages] == [
            "u1", "a1", "r1", "r2", "a3",
        ]  # fmt: skip
        again = store.import_session(path)
        assert (again.created, again.events_written) == ([], 0)


def web_export_without_ids() -> str:
    """The web export as it is shared (`{"loglines": [...]}`): entries with a type, a time and
    a message, but no `uuid`, `parentUuid` nor `sessionId`."""
    write = {"type": "tool_use", "id": "t1", "name": "Write", "input": {"path": "add.py"}}
    loglines = [
        {"type": "summary", "summary": "Adding numbers", "leafUuid": None},
        {"type": "user", "timestamp": T.format(0),
         "message": {"role": "user", "content": "Write add.py"}},
        {"type": "assistant", "timestamp": T.format(1),
         "message": {"role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "Writing it."}, write]}},
        {"type": "user", "timestamp": T.format(2),
         "message": {"role": "user", "content": result("t1", "written")}},
        {"type": "assistant", "timestamp": T.format(3),
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}},
    ]  # fmt: skip
    return json.dumps({"loglines": loglines})


def test_a_web_export_without_ids_is_keyed_by_position(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    path.write_text(web_export_without_ids())
    with SessionStore("sqlite://") as store:
        result = store.import_session(path)
        assert result.created == ["claude-code-shared"]
        assert result.skipped == []
        session = store.session("claude-code-shared")
        assert session.header.title == "Adding numbers"
        context = session.context()
        assert [(m.role, m.id) for m in context.messages] == [
            ("user", "line:2"),
            ("assistant", "line:3"),
            ("tool", "line:4"),
            ("assistant", "line:5"),
        ]
        call = context.messages[1].parts[1]
        answer = context.messages[2].parts[0]
        assert isinstance(call, ToolCallPart) and isinstance(answer, LiveToolResult)
        assert (answer.call_id, answer.name, answer.output) == ("t1", "Write", "written")
        assert [e.recorded_at.minute for e in store.read("claude-code-shared")][-4:] == [0, 1, 2, 3]
        again = store.import_session(path)  # the same ids again: nothing written
        assert (again.created, again.events_written) == ([], 0)
        with SessionStore("sqlite://") as elsewhere:
            elsewhere.import_session(path)
            hashes = [e.hash for e in elsewhere.read("claude-code-shared")]
        assert hashes == [e.hash for e in store.read("claude-code-shared")]


def test_an_import_exports_and_reimports_with_the_same_hashes(tmp_path: Path) -> None:
    store, _ = live(tmp_path, jsonl(parallel_session()))
    [info] = store.sessions()
    lines = list(store.export_session(info.id))
    with SessionStore(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        copy.import_session(lines)
        assert [e.hash for e in copy.read(info.id)] == [e.hash for e in store.read(info.id)]
    store.close()


lines_strategy = st.lists(
    st.one_of(
        st.sampled_from([json.dumps(e) for e in parallel_session()]),
        st.text(max_size=40),
        st.sampled_from(['{"type": 3}', "null", '{"type": "user"}', '{"type": "assistant",'
                         ' "uuid": "z", "message": {"content": [{"type": "tool_use"}]}}']),
    ),
    max_size=14,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(lines_strategy)
def test_garbled_lines_never_raise_and_never_lose_good_ones(lines: list[str]) -> None:
    try:
        transcript = claude_code_transcript("\n".join(lines), ENCODING)
    except ImportRefused:
        return
    good = {e["uuid"] for e in parallel_session() if json.dumps(e) in lines}
    kept = {entry.key for entry in transcript.entries}
    response = {"a1", "a2", "a3", "a4"}  # msg_1's lines: one message, keyed by the first
    assert good - response <= kept
    assert not good & response or kept & response
