"""The Codex rollout reader on hand-written rollouts of both layouts (the wrapped lines of
current Codex, the bare items of mid-2025): what becomes a message, a record, a compaction and
a revert; pairing; skipped lines; idempotent and growing re-imports; renders the providers'
own types accept; export round trips; and a fuzz that garbled lines cost only themselves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import ImportRefused, SessionStore
from sessionstore.events import (
    OPENAI_RESPONSES,
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
from sessionstore.importers._codex import codex_transcript, ignored_lines, looks_like_codex
from sessionstore.importers._import import Header, write_transcript
from sessionstore.importers._transcript import Transcript
from tests.providers.request_types import check_anthropic, check_chat
from tests.providers.responses_api import accepted_input

ENCODING = "cl100k_base"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "codex"
SESSION = "0199a3f2-6c1e-7b40-9d2a-51e8c3b7a604"
LEGACY = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
ROLLOUT = FIXTURES / f"rollout-2025-10-02T09-14-00-{SESSION}.jsonl"
OLD_ROLLOUT = FIXTURES / f"rollout-2025-05-07T17-24-21-{LEGACY}.jsonl"


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def read(lines: list[str], name: str | None = ROLLOUT.name) -> Transcript:
    return codex_transcript(lines, ENCODING, name)


def messages(transcript: Transcript) -> list[Message]:
    return [e.payload.message for e in transcript.entries if isinstance(e.payload, MessageAppended)]


def parts_of(transcript: Transcript, kind: type[Any]) -> list[Any]:
    return [p for m in messages(transcript) for p in m.parts if isinstance(p, kind)]


def kinds(transcript: Transcript) -> list[str]:
    return [
        e.payload.record.kind for e in transcript.entries if isinstance(e.payload, RecordAppended)
    ]


def recorded_items(path: Path) -> list[Any]:
    """Every Responses item a rollout records, as Codex wrote it."""
    found = []
    for line in lines_of(path):
        value = json.loads(line)
        payload = value.get("payload", value)
        if value.get("type") == "response_item" or "payload" not in value:
            found.append(payload)
        if value.get("type") == "compacted":
            found.extend(payload.get("replacement_history", []))
    return found


CODEX_WITHOUT_ID = frozenset({"reasoning", "web_search_call", "local_shell_call"})
"""Codex's items that go back without the `id` Codex never records (`codex-rs` skips it when
it serialises an item, for its requests as for its rollouts): the SDK's types, which
describe the items the API returns, require one; the API takes them without, as every
request of Codex shows."""


def check_responses_render(items: list[Any]) -> None:
    """`items` is a Responses `input` the API takes: each item as the SDK's own types take it,
    but for what Codex sends and the types ask more of (they describe the items the API
    returns): an item of `CODEX_WITHOUT_ID` without an id (and a `local_shell_call`'s action
    with its unset fields written as null), an assistant message with an id but no status.
    Each such item is taken once given just that."""
    for item in items:
        try:
            accepted_input([item])
            continue
        except AssertionError:
            pass
        given = dict(item)
        if item.get("type") == "message":
            assert item.get("role") == "assistant" and "id" in item and "status" not in item
            given["status"] = "completed"
            given["content"] = [{"annotations": [], **part} for part in item["content"]]
        else:
            assert item.get("type") in CODEX_WITHOUT_ID and "id" not in item, item
            given["id"] = "rs_placeholder"
        if item["type"] == "local_shell_call":
            action = {key: value for key, value in item["action"].items() if value is not None}
            given["action"] = {"env": {}, **action}
        accepted_input([given])


def native_values(message: Message) -> list[Any]:
    """The verbatim items a message's parts keep."""
    natives = (getattr(part, "native", None) for part in message.parts)
    return [native.value for native in natives if native is not None]


def text(message: Message) -> str:
    return "".join(getattr(part, "text", "") for part in message.parts)


def imported(store: SessionStore, transcript: Transcript) -> str:
    [written] = write_transcript(store._log, transcript, Header(ENCODING))
    return written.session_id


# what the rollout becomes


def test_the_rollout_is_one_session_with_its_messages_calls_and_results() -> None:
    rollout = read(lines_of(ROLLOUT))
    assert (rollout.format, rollout.source_id) == ("codex", SESSION)
    assert (rollout.model, rollout.title) == ("gpt-5-codex", "Fix the failing test in parser.py")
    assert rollout.skipped == []
    roles = [m.role for m in messages(rollout)]
    assert roles.count("user") == 7  # 4 typed prompts; AGENTS.md, environment, turn aborted
    assert roles.count("system") == 1
    assert roles.count("assistant") == 7
    assert roles.count("tool") == 4
    calls = parts_of(rollout, ToolCallPart)
    results = parts_of(rollout, ToolResultPart)
    assert [c.call_id for c in calls] == ["call_A", "call_B", "call_C", "call_D", "call_E"]
    assert [(r.call_id, r.name) for r in results] == [
        ("call_B", "shell"),
        ("call_A", "shell"),
        ("call_C", "apply_patch"),
        ("call_E", "view_image"),
    ]
    # call_D was interrupted: it stays unanswered, no result is made up
    assert "call_D" not in {r.call_id for r in results}


def test_a_response_s_items_are_one_assistant_message_kept_verbatim() -> None:
    rollout = read(lines_of(ROLLOUT))
    first = next(m for m in messages(rollout) if m.role == "assistant")
    assert first.id == "rs_1"  # keyed by the first item's own id
    assert [p.type for p in first.parts] == ["reasoning", "tool_call", "tool_call"]
    assert [p.id for p in first.parts] == ["rs_1.0", "rs_1.1", "rs_1.2"]
    raw = [json.loads(line)["payload"] for line in lines_of(ROLLOUT)[8:12]]
    items = [raw[0], raw[2], raw[3]]  # line 10 is the agent_reasoning event
    assert native_values(first) == items
    natives = [getattr(p, "native", None) for p in first.parts]
    assert {n.api for n in natives if n is not None} == {OPENAI_RESPONSES}
    assert None not in natives
    # the token_count event that ends the response gives its usage
    assert first.usage == Usage(input=5200 - 4096, output=180, cache_read=4096)


def test_reasoning_keeps_its_encrypted_content_and_shows_only_its_summary() -> None:
    reasoning = parts_of(read(lines_of(ROLLOUT)), ReasoningPart)
    assert [r.text for r in reasoning] == [
        "**Running the tests**\n\nI'll run the suite and read the parser.",
        "",
        "**Running with coverage**",
        "**Writing the test**",
    ]
    assert [r.native.value["encrypted_content"] for r in reasoning] == [
        f"gAAAAABo3nR{n}-enc-{n}" for n in range(1, 5)
    ]


def test_injected_context_is_kept_marked_and_instructions_are_system_messages() -> None:
    rollout = read(lines_of(ROLLOUT))
    by_id = {m.id: m for m in messages(rollout)}
    system = by_id["line-2"]
    assert system.role == "system"
    assert text(system).startswith("<permissions instructions>")
    injected = [m.id for m in messages(rollout) if m.native and m.native.api == "codex.injected"]
    assert injected == ["line-3", "line-4", "line-32"]  # AGENTS.md, environment, turn aborted
    assert by_id["msg_u1"].native is not None
    assert by_id["msg_u1"].native.value == json.loads(lines_of(ROLLOUT)[6])["payload"]


def test_events_repeating_messages_are_records_not_second_messages() -> None:
    rollout = read(lines_of(ROLLOUT))
    typed = [
        text(m)
        for m in messages(rollout)
        if m.role == "user" and m.native is not None and m.native.api == OPENAI_RESPONSES
    ]
    assert typed == [
        "Fix the failing test in parser.py",
        "Now run the whole suite with coverage",
        "Add a test for empty input",
        "Instead, document parse() like this sketch",
    ]
    records = kinds(rollout)
    assert records.count("codex.event_msg.user_message") == 4
    assert records.count("codex.event_msg.agent_message") == 1
    assert records.count("codex.event_msg.agent_reasoning") == 1
    assert records.count("codex.turn_context") == 4
    assert records[0] == "codex.session_meta"
    assert "codex.response_item.ghost_snapshot" in records
    assert ignored_lines(rollout) == 1  # the world_state line, of a type this reader lacks
    [record] = [
        e.payload.record
        for e in rollout.entries
        if e.key == "line-35" and isinstance(e.payload, RecordAppended)
    ]
    assert record.kind == "codex.ignored.world_state"
    assert record.parts[0].native.value == json.loads(lines_of(ROLLOUT)[34])


def test_a_compaction_keeps_what_the_replacement_history_repeats() -> None:
    rollout = read(lines_of(ROLLOUT))
    [compaction] = [e.payload for e in rollout.entries if isinstance(e.payload, ContextCompacted)]
    assert compaction.replaced_message_ids == (
        "line-3",
        "line-4",
        "rs_1",
        "line-14",
        "line-15",
        "rs_2",
        "line-19",
        "msg_a1",
        "rs_3",
        "line-32",
    )
    assert (compaction.summarizer, compaction.first_kept_message_id) == ("codex", "line-33.summary")
    [summary] = compaction.summary.parts
    assert isinstance(summary, TextPart)
    assert summary.text.startswith("Another language model started to solve this problem")
    assert summary.native is not None
    assert (
        summary.native.value
        == json.loads(lines_of(ROLLOUT)[32])["payload"]["replacement_history"][2]
    )
    assert compaction.tokens_before > compaction.tokens_after > 0


def test_the_live_context_is_codex_s_history(store: SessionStore) -> None:
    session = store.session(imported(store, read(lines_of(ROLLOUT))))
    assert [m.id for m in session.context().messages] == [
        "line-2",
        "msg_u1",
        "msg_u2",
        "line-33.summary",
        "msg_u4",
        "fc_4",
        "line-50",
        "msg_a3",
    ]
    # the rolled-back turn is history: replay just before the rollback shows it
    events = store.read(session.id)
    [revert] = [e for e in events if isinstance(e.payload, MessagesReverted)]
    assert isinstance(revert.payload, MessagesReverted)
    assert revert.payload.reverted_message_ids == ("msg_u3", "rs_4")
    before = [m.id for m in session.context(at=revert.seq - 1).messages]
    assert before[-2:] == ["msg_u3", "rs_4"]
    assert store.verify(session.id).ok


def test_a_result_s_content_items_are_its_blocks() -> None:
    rollout = read(lines_of(ROLLOUT))
    [result] = [r for r in parts_of(rollout, ToolResultPart) if r.call_id == "call_E"]
    assert result.output == "docs/layout.png"
    assert [b.type for b in result.blocks or ()] == ["text", "file"]


# renders


def test_the_imported_context_renders_for_every_provider(store: SessionStore) -> None:
    context = store.session(imported(store, read(lines_of(ROLLOUT)))).context()
    responses = context.to_responses()
    check_responses_render(responses)
    check_anthropic(context.to_anthropic())
    check_chat(context.to_openai())
    # the Responses render gives back Codex's own items as they came
    by_id = {item.get("id"): item for item in recorded_items(ROLLOUT)}
    assert by_id["fc_4"] in responses and by_id["msg_a3"] in responses
    assert responses[0] == {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": messages_text(context.messages[0])}],
    }


def messages_text(message: Any) -> str:
    return "".join(p.text for p in message.parts)


def test_the_pending_call_renders_answered_as_interrupted(store: SessionStore) -> None:
    head = lines_of(ROLLOUT)[:30]  # up to the interrupted call, before the compaction
    context = store.session(imported(store, read(head))).context()
    responses = context.to_responses()
    check_responses_render(responses)
    check_anthropic(context.to_anthropic())
    assert responses[-1]["call_id"] == "call_D"
    assert responses[-1]["type"] == "function_call_output"
    # reasoning goes back to the Responses API with its encrypted content, and to no other
    by_id = {item.get("id"): item for item in recorded_items(ROLLOUT)}
    reasoning = {key: value for key, value in by_id["rs_1"].items() if key != "content"}
    assert by_id["rs_1"]["content"] is None  # null, which the API's input type does not take
    assert [reasoning, by_id["fc_1"], by_id["fc_2"]] == responses[4:7]
    others = json.dumps([context.to_anthropic(), context.to_openai()])
    assert "enc-" not in others and "Running the tests" not in others


# the layout before mid-2025


def test_the_old_layout_is_read_the_same_way() -> None:
    rollout = read(lines_of(OLD_ROLLOUT), OLD_ROLLOUT.name)
    assert rollout.source_id == LEGACY and rollout.skipped == []
    assert kinds(rollout) == ["codex.session_meta", "codex.state", "codex.state", "codex.state"]
    assert [m.role for m in messages(rollout)] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    [denied, listed] = parts_of(rollout, ToolResultPart)
    assert (denied.call_id, denied.is_error) == ("call_1", True)
    assert denied.output.startswith("ls: cannot open directory")
    assert (listed.call_id, listed.name, listed.output) == (
        "call_2",
        "local_shell",
        "README.md\nsrc/main.rs\n",
    )
    [shell] = [c for c in parts_of(rollout, ToolCallPart) if c.call_id == "call_2"]
    assert json.loads(shell.arguments)["command"] == ["git", "ls-files"]
    assert [e.time for e in rollout.entries][1:] == [None] * 9  # bare items have no time


def test_the_old_layout_renders_as_codex_sent_it(store: SessionStore) -> None:
    context = store.session(
        imported(store, read(lines_of(OLD_ROLLOUT), OLD_ROLLOUT.name))
    ).context()
    check_anthropic(context.to_anthropic())
    check_chat(context.to_openai())
    check_responses_render(context.to_responses())
    raw = [json.loads(line) for line in lines_of(OLD_ROLLOUT)]
    assert raw[8]["type"] == "message" and "id" not in raw[8]
    assert context.to_responses()[-1] == {  # the input message it is: text and role
        "type": "message",
        "role": "assistant",
        "content": raw[8]["content"][0]["text"],
    }
    assert raw[6] in context.to_responses()  # the local_shell_call, as Codex sent it


def rollout_line(second: int, kind: str, payload: dict[str, Any]) -> str:
    stamp = f"2026-05-11T10:{second // 60:02d}:{second % 60:02d}.000Z"
    return json.dumps({"timestamp": stamp, "type": kind, "payload": payload})


def typed(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "user_message", "message": text, "images": [], **extra}


def user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def answer(text: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text}]
    return {"type": "message", "role": "assistant", "content": content}


def desktop_rollout() -> list[str]:
    """A rollout as Codex Desktop writes it: the prompts only as `event_msg` `user_message`
    lines, no `response_item` user message repeating them; then a turn with both, the event
    first (older CLIs), and one with both, the item first (the CLI now)."""
    call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}
    png = "data:image/png;base64,iVBORw0KGgo="
    return [
        rollout_line(0, "session_meta", {"id": "s-desktop", "originator": "Codex Desktop"}),
        rollout_line(1, "event_msg", typed("Summarise the notes", images=[png])),
        rollout_line(2, "turn_context", {"model": "gpt-5.3-codex"}),
        rollout_line(3, "response_item", {"type": "reasoning", "summary": [],
                                          "encrypted_content": "gAAA-1"}),
        rollout_line(4, "response_item", call),
        rollout_line(5, "response_item", {"type": "function_call_output", "call_id": "c1",
                                          "output": "notes"}),
        rollout_line(6, "response_item", answer("Here is the summary.")),
        rollout_line(7, "event_msg", typed("Shorter, please")),
        rollout_line(8, "response_item", answer("Shorter.")),
        rollout_line(9, "event_msg", typed("Thanks")),
        rollout_line(10, "response_item", user_item("Thanks")),
        rollout_line(11, "response_item", answer("You're welcome.")),
        rollout_line(12, "response_item", user_item("Bye")),
        rollout_line(13, "event_msg", typed("Bye")),
        rollout_line(14, "response_item", answer("Bye.")),
    ]  # fmt: skip


def test_prompts_recorded_only_as_events_are_the_user_messages(store: SessionStore) -> None:
    rollout = read(desktop_rollout(), None)
    said = [(m.role, m.id, text(m)) for m in messages(rollout) if m.role == "user"]
    assert said == [
        ("user", "line-2.prompt", "Summarise the notes"),
        ("user", "line-8.prompt", "Shorter, please"),
        ("user", "line-11", "Thanks"),  # the event went first: the item is the message
        ("user", "line-13", "Bye"),  # the item went first: the event repeats it
    ]
    first = messages(rollout)[0]
    assert [p.type for p in first.parts] == ["text", "file"]
    assert first.native is not None and first.native.api == "codex.event_msg.user_message"
    assert rollout.title == "Summarise the notes"
    assert kinds(rollout).count("codex.event_msg.user_message") == 4  # each event kept
    order = [e.key for e in rollout.entries]
    assert order[:4] == ["line-1", "line-2", "line-2.prompt", "line-3"]  # at its event's line
    context = store.session(imported(store, rollout)).context()
    assert [m.role for m in context.messages] == [
        "user", "assistant", "tool", "assistant", "user", "assistant",
        "user", "assistant", "user", "assistant",
    ]  # fmt: skip
    request = context.to_anthropic()
    check_anthropic(request)
    assert "continues from here" not in json.dumps(request)


def test_each_item_of_a_response_keeps_its_own_time(store: SessionStore) -> None:
    lines = desktop_rollout()
    rollout = read(lines, None)
    [response, *_] = [m for m in messages(rollout) if m.role == "assistant"]
    assert [p.type for p in response.parts] == ["reasoning", "tool_call"]
    assert response.native is not None
    assert response.native.value == {
        "timestamps": ["2026-05-11T10:00:03.000Z", "2026-05-11T10:00:04.000Z"]
    }
    events = store.read(imported(store, rollout))
    at = {e.payload.message.id: e.recorded_at.second for e in events
          if isinstance(e.payload, MessageAppended)}  # fmt: skip
    assert at == {"line-2.prompt": 1, "line-4": 3, "line-6": 5, "line-7": 6,
                  "line-8.prompt": 7, "line-9": 8, "line-11": 10, "line-12": 11,
                  "line-13": 12, "line-15": 14}  # fmt: skip
    times = [e.recorded_at for e in events]
    assert times == sorted(times)


def test_codex_s_own_items_go_back_as_the_api_takes_them(store: SessionStore) -> None:
    """The items as Codex writes them now (no ids: it never sends them back), sent back as
    the API takes them: what the SDK's input types take where a form both accept exists."""
    reasoning: dict[str, Any] = {
        "type": "reasoning",
        "summary": [],
        "content": None,
        "encrypted_content": "gA-1",
    }
    search = {
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "q", "queries": ["q", "q2"]},
    }
    commentary = {**answer("Searching first."), "phase": "commentary"}
    call = {
        "type": "function_call",
        "name": "js",
        "namespace": "mcp__node__",
        "arguments": "{}",
        "call_id": "c1",
    }
    patch = {
        "type": "custom_tool_call",
        "status": "completed",
        "call_id": "c2",
        "name": "apply_patch",
        "input": "*** Begin Patch",
    }
    final = {**answer("Done."), "phase": "final_answer"}
    outputs = [
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
    ]
    said: list[dict[str, Any]] = [reasoning, search, commentary, call, patch, *outputs, final]
    lines = [
        rollout_line(0, "session_meta", {"id": "s-items"}),
        rollout_line(1, "response_item", user_item("Look it up")),
        *(rollout_line(2 + n, "response_item", item) for n, item in enumerate(said)),
    ]
    items = store.session(imported(store, read(lines, None))).context().to_responses()
    assert items == [
        user_item("Look it up"),
        {k: v for k, v in reasoning.items() if k != "content"},  # null: the same as absent
        search,  # as Codex sends it, without an id
        {"type": "message", "role": "assistant", "content": "Searching first.",
         "phase": "commentary"},
        call,
        {k: v for k, v in patch.items() if k != "status"},  # in no type of the SDK
        *outputs,
        {"type": "message", "role": "assistant", "content": "Done.", "phase": "final_answer"},
    ]  # fmt: skip
    check_responses_render(items)


def test_a_wrapped_rollout_without_item_ids_is_keyed_by_line() -> None:
    meta = {
        "timestamp": "2025-08-01T10:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": "s-1"},
    }
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": "gAAA-x"}
    said = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "hi"}],
    }
    lines = [json.dumps(meta)] + [
        json.dumps({"timestamp": "2025-08-01T10:00:01Z", "type": "response_item", "payload": p})
        for p in (reasoning, said)
    ]
    rollout = read(lines, None)
    [message] = messages(rollout)
    assert (rollout.source_id, message.id) == ("s-1", "line-2")
    assert native_values(message) == [reasoning, said]


# malformed input


GOOD = [
    {"timestamp": "2025-08-01T10:00:00Z", "type": "session_meta", "payload": {"id": "s-2"}},
    {
        "timestamp": "2025-08-01T10:00:01Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hello"}],
        },
    },
    {
        "timestamp": "2025-08-01T10:00:02Z",
        "type": "response_item",
        "payload": {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
    },
    {
        "timestamp": "2025-08-01T10:00:03Z",
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    },
]


def test_malformed_lines_are_skipped_and_reported() -> None:
    good = [json.dumps(line) for line in GOOD]
    bad = [
        "{not json",
        '"a string"',
        "42",
        "[1, 2]",
        '{"no": "type"}',
        '{"type": "response_item", "payload": "text"}',
        '{"type": "response_item", "payload": {"type": "function_call", "name": "x"}}',
        '{"type": "response_item", "payload": {"type": "message", "role": "user"}}',
        '{"type": "compacted", "payload": {"replacement_history": []}}',
    ]
    lines = [good[0], *bad, *good[1:], good[1][:25]]  # and a last line cut short
    rollout = read(lines, None)
    assert [s.line for s in rollout.skipped] == [2, 3, 4, 5, 6, 7, 8, 9, 10, 14]
    assert [s.reason for s in rollout.skipped] == [
        "not JSON: Expecting property name enclosed in double quotes (column 2)",
        "not a JSON object",
        "not a JSON object",
        "not a JSON object",
        "not a rollout line: no 'type' with a 'payload', nor an item",
        "a response_item line's payload is not an object",
        "a function_call has no string 'call_id'",
        "a message item has no list of content objects",
        "a compacted line has no string 'message'",
        "not JSON: Unterminated string starting at (column 15)",
    ]
    assert [m.role for m in messages(rollout)] == ["user", "assistant", "tool"]


def test_strict_refuses_a_rollout_with_skipped_lines(store: SessionStore) -> None:
    rollout = read([json.dumps(line) for line in GOOD] + ["{cut"], None)
    with pytest.raises(ImportRefused, match="line 5: not JSON"):
        write_transcript(store._log, rollout, Header(ENCODING), strict=True)


def test_what_is_not_a_rollout_is_refused() -> None:
    with pytest.raises(ImportRefused, match="no line is a Codex rollout's"):
        read(["{bad", "[]"], None)
    with pytest.raises(ImportRefused, match="no line is a Codex rollout's"):
        read([], None)
    with pytest.raises(ImportRefused, match="names no session id"):
        read([json.dumps(GOOD[1])], None)


# re-imports


def test_a_second_import_writes_nothing_and_a_grown_rollout_adds_its_new_entries(
    store: SessionStore,
) -> None:
    lines = lines_of(ROLLOUT)
    log = store._log
    [first] = write_transcript(log, read(lines[:24]), Header(ENCODING))
    [again] = write_transcript(log, read(lines[:24]), Header(ENCODING))
    assert (first.created, again.created, again.events_written) == (True, False, 0)
    [grown] = write_transcript(log, read(lines), Header(ENCODING))
    whole = read(lines)
    assert grown.events_written == len(whole.entries) - len(read(lines[:24]).entries)
    ids = [e.event_id for e in store.read(first.session_id)]
    assert len(ids) == len(set(ids)) == 2 + len(whole.entries)
    session = store.session(first.session_id)
    assert session.context().messages[-1].id == "msg_a3"
    assert store.verify(first.session_id).ok


def test_an_import_exports_and_imports_with_identical_hashes(
    store: SessionStore, tmp_path: Path
) -> None:
    session_id = imported(store, read(lines_of(ROLLOUT)))
    lines = list(store.export_session(session_id))
    with SessionStore(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        again = copy.import_session(lines)
        assert [e.hash for e in copy.read(again.id)] == [e.hash for e in store.read(session_id)]
        assert copy.verify(again.id).ok


# detection and links


def test_detection_knows_both_layouts_and_nothing_else() -> None:
    assert looks_like_codex(lines_of(ROLLOUT)[:3])
    assert looks_like_codex(lines_of(OLD_ROLLOUT)[:3])
    claude = (Path(__file__).parent.parent / "fixtures" / "claude_code_session.jsonl").read_text()
    assert not looks_like_codex(claude.splitlines()[:3])
    assert not looks_like_codex(['{"type": "session", "id": "x", "timestamp": "t"}'])
    assert not looks_like_codex(["not json"])
    assert not looks_like_codex([])


def test_a_subagent_rollout_names_its_parent_thread() -> None:
    source = {"subagent": {"thread_spawn": {"parent_thread_id": SESSION, "depth": 1}}}
    meta = {
        "timestamp": "2025-10-02T10:00:00Z",
        "type": "session_meta",
        "payload": {"id": "child-1", "source": source},
    }
    rollout = read([json.dumps(meta), json.dumps(GOOD[1])], None)
    assert rollout.parent is not None and rollout.parent.parent_source_id == SESSION


# fuzz


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    garbage=st.lists(
        st.one_of(
            st.text(max_size=40),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(
                        st.sampled_from(
                            [
                                "type",
                                "payload",
                                "role",
                                "content",
                                "id",
                                "call_id",
                                "output",
                                "summary",
                                "message",
                                "replacement_history",
                                "record_type",
                                "timestamp",
                                "x",
                            ]
                        ),
                        inner,
                        max_size=4,
                    )
                ),
                max_leaves=10,
            ).map(json.dumps),
        ),
        max_size=6,
    ),
    where=st.integers(min_value=0, max_value=4),
)
def test_garbled_lines_cost_only_themselves(garbage: list[str], where: int) -> None:
    good = [json.dumps(line) for line in GOOD]
    lines = good[:where] + garbage + good[where:]
    try:
        rollout = read(lines, None)
    except ImportRefused:
        return
    texts = [p.text for m in messages(rollout) for p in m.parts if isinstance(p, TextPart)]
    assert "hello" in texts
    assert "c1" in {c.call_id for c in parts_of(rollout, ToolCallPart)}
    assert any(r.call_id == "c1" and r.output == "ok" for r in parts_of(rollout, ToolResultPart))
