"""`append_anthropic`: every content block the SDK defines, kept verbatim and sent back by
`to_anthropic()` as the API accepts it, with the SDK's own types as the oracle.

Each response is built with `anthropic.types.Message.model_validate` (so it is one the SDK can
return), appended, answered with a tool result where it calls a tool, and the request
`to_anthropic()` renders is validated as `list[MessageParam]` down to every block and compared
with the exact blocks that came in.
"""

from __future__ import annotations

import json
import warnings
from typing import Any, get_args

import pytest
from anthropic._models import construct_type
from anthropic.types import ContentBlock
from anthropic.types import Message as AnthropicMessage

from sessionstore import Session, SessionStore
from sessionstore.events import (
    ANTHROPIC,
    InvalidArgument,
    NativePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from tests.conftest import Backend
from tests.providers.fake_anthropic import validate_messages

SIGNATURE = "EqQBCkYIBRgCKkBz1c0Zk0mJ3x9nq8Yt+/a=="
THINKING = 'The test checks the UTC offset.  \nRead it first; keep "quotes" and é.  '

TEXT_WITH_CITATIONS = {
    "type": "text",
    "text": "The docs say offsets are kept.",
    "citations": [
        {
            "type": "char_location",
            "cited_text": "Offsets are kept.",
            "document_index": 0,
            "document_title": "README",
            "start_char_index": 10,
            "end_char_index": 27,
            "file_id": None,
        },
        {
            "type": "web_search_result_location",
            "cited_text": "parse() keeps tzinfo",
            "encrypted_index": "Eo8BCioIAhgB",
            "title": "dateparse",
            "url": "https://example.org/dateparse",
        },
    ],
}
TOOL_USE = {
    "type": "tool_use",
    "id": "toolu_01Read",
    "name": "read",
    "input": {"path": "tests/test_parser.py", "limit": 200, "offset": 0},
}
SERVER_BLOCKS: list[dict[str, Any]] = [
    {
        "type": "server_tool_use",
        "id": "srvtoolu_01Search",
        "name": "web_search",
        "input": {"query": "dateparse utc offset"},
    },
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_01Search",
        "content": [
            {
                "type": "web_search_result",
                "title": "dateparse docs",
                "url": "https://example.org/dateparse",
                "encrypted_content": "EqgfCioIARgBIiQ3",
                "page_age": "2 days ago",
            }
        ],
    },
    {
        "type": "server_tool_use",
        "id": "srvtoolu_02Fetch",
        "name": "web_fetch",
        "input": {"url": "https://example.org/dateparse"},
    },
    {
        "type": "web_fetch_tool_result",
        "tool_use_id": "srvtoolu_02Fetch",
        "content": {
            "type": "web_fetch_result",
            "url": "https://example.org/dateparse",
            "retrieved_at": "2026-11-23T09:00:00Z",
            "content": {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "Offsets."},
                "title": "dateparse",
                "citations": {"enabled": True},
            },
        },
    },
    {
        "type": "server_tool_use",
        "id": "srvtoolu_03Code",
        "name": "code_execution",
        "input": {"code": "print(1)"},
    },
    {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_03Code",
        "content": {
            "type": "code_execution_result",
            "stdout": "1\n",
            "stderr": "",
            "return_code": 0,
            "content": [{"type": "code_execution_output", "file_id": "file_01"}],
        },
    },
    {
        "type": "server_tool_use",
        "id": "srvtoolu_04Bash",
        "name": "bash_code_execution",
        "input": {"command": "ls"},
    },
    {
        "type": "bash_code_execution_tool_result",
        "tool_use_id": "srvtoolu_04Bash",
        "content": {
            "type": "bash_code_execution_result",
            "stdout": "a.py\n",
            "stderr": "",
            "return_code": 0,
            "content": [],
        },
    },
    {
        "type": "server_tool_use",
        "id": "srvtoolu_05Edit",
        "name": "text_editor_code_execution",
        "input": {"command": "view", "path": "a.py"},
    },
    {
        "type": "text_editor_code_execution_tool_result",
        "tool_use_id": "srvtoolu_05Edit",
        "content": {
            "type": "text_editor_code_execution_view_result",
            "content": "print(1)\n",
            "file_type": "text",
            "num_lines": 1,
            "start_line": 1,
            "total_lines": 1,
        },
    },
    {
        "type": "server_tool_use",
        "id": "srvtoolu_06Tools",
        "name": "tool_search_tool_regex",
        "input": {"pattern": "read.*"},
    },
    {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_06Tools",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "read"}],
        },
    },
    {"type": "container_upload", "file_id": "file_02"},
]
ENVELOPE = {
    "id": "msg_01HkT9dQv3wz",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 4,
        "output_tokens": 412,
        "cache_read_input_tokens": 14872,
        "cache_creation_input_tokens": 2310,
        "service_tier": "standard",
    },
}


def response(*blocks: object, **envelope: Any) -> dict[str, Any]:
    return {**ENVELOPE, **envelope, "content": list(blocks)}


def native(part: Part) -> object:
    """The block a part keeps."""
    assert not isinstance(part, ToolResultPart) and part.native is not None
    return part.native.value


def thinking(text: str = THINKING, signature: str = SIGNATURE) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


def every_block() -> list[dict[str, Any]]:
    """One of each block type `anthropic.types.ContentBlock` names, in a response's order."""
    return [
        thinking(),
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
        *SERVER_BLOCKS,
        TEXT_WITH_CITATIONS,
        TOOL_USE,
    ]


def test_the_blocks_here_are_every_type_the_sdk_defines() -> None:
    members = get_args(get_args(ContentBlock)[0])
    defined = {get_args(member.model_fields["type"].annotation)[0] for member in members}
    assert {block["type"] for block in every_block()} == defined


def session(store: SessionStore) -> Session:
    s = store.create_session(model="claude-sonnet-4-6", title="fix the offset")
    s.append_system("You are a careful coding agent.")
    s.append_user("test_parse_offset fails, please fix it")
    return s


def test_every_sdk_block_comes_back_verbatim_in_its_place(store: SessionStore) -> None:
    s = session(store)
    sdk_message = AnthropicMessage.model_validate(response(*every_block()))
    appended = s.append_anthropic(sdk_message)
    s.append_tool_result("toolu_01Read", output="def test_parse_offset(): ...")

    request = s.context().to_anthropic()

    validate_messages(request["messages"])
    assert request == {
        "system": "You are a careful coding agent.",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "test_parse_offset fails, please fix it"}],
            },
            {"role": "assistant", "content": every_block()},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01Read",
                        "content": "def test_parse_offset(): ...",
                    }
                ],
            },
        ],
    }
    sent = request["messages"][1]["content"][0]
    assert (sent["thinking"], sent["signature"]) == (THINKING, SIGNATURE)
    assert [type(p).__name__ for p in appended.parts] == [
        "ReasoningPart",
        "ReasoningPart",
        *["NativePart"] * len(SERVER_BLOCKS),
        "TextPart",
        "ToolCallPart",
    ]


def test_each_part_keeps_its_block_and_our_view_of_it(store: SessionStore) -> None:
    s = session(store)
    appended = s.append_anthropic(AnthropicMessage.model_validate(response(*every_block())))
    reasoning, redacted = appended.parts[:2]
    text, call = appended.parts[-2:]
    assert isinstance(reasoning, ReasoningPart) and reasoning.text == THINKING
    assert isinstance(redacted, ReasoningPart) and redacted.text == ""
    assert isinstance(text, TextPart) and text.text == "The docs say offsets are kept."
    assert isinstance(call, ToolCallPart)
    assert (call.call_id, call.name, call.input) == (
        "toolu_01Read",
        "read",
        {"path": "tests/test_parser.py", "limit": 200, "offset": 0},
    )
    assert call.arguments == '{"path":"tests/test_parser.py","limit":200,"offset":0}'
    natives = [p for p in appended.parts if isinstance(p, NativePart)]
    assert [p.text for p in natives[:2]] == [
        '[web_search {"query":"dateparse utc offset"}]',
        "[web search results: dateparse docs <https://example.org/dateparse>]",
    ]
    for part, block in zip(appended.parts, every_block(), strict=True):
        assert not isinstance(part, ToolResultPart) and part.native is not None
        assert (part.native.api, part.native.value) == (ANTHROPIC, block)


def test_usage_and_model_are_kept(store: SessionStore) -> None:
    s = session(store)
    appended = s.append_anthropic(AnthropicMessage.model_validate(response(TOOL_USE)))
    assert appended.usage == Usage(input=4, output=412, cache_read=14872, cache_write=2310)
    assert appended.native is not None and appended.native.api == ANTHROPIC
    assert appended.native.value == {key: value for key, value in ENVELOPE.items()}
    stored = s.context().messages[-1]
    assert stored.usage == appended.usage
    assert stored.native == appended.native


def test_the_dict_form_appends_the_same_message(store: SessionStore) -> None:
    from_sdk = session(store).append_anthropic(
        AnthropicMessage.model_validate(response(*every_block()))
    )
    from_dict = session(store).append_anthropic(response(*every_block()))

    def shape(message: Any) -> list[Any]:
        # a block's token count follows its key order, which the SDK's dump sets
        return [part.model_dump(exclude={"id", "tokens"}) for part in message.parts]

    assert shape(from_dict) == shape(from_sdk)
    assert (from_dict.usage, from_dict.native) == (from_sdk.usage, from_sdk.native)


def test_an_unknown_block_type_is_kept_and_sent_back_verbatim(store: SessionStore) -> None:
    future = {"type": "future_block", "payload": {"z": 1, "a": [True, None, 2.5]}, "note": "é"}
    s = session(store)
    appended = s.append_anthropic(response(thinking(), future, TOOL_USE))
    s.append_tool_result("toolu_01Read", output="ok")
    part = appended.parts[1]
    assert isinstance(part, NativePart)
    assert (part.native.api, part.native.value, part.text) == (ANTHROPIC, future, "[future_block]")
    assert s.context().to_anthropic()["messages"][1] == {
        "role": "assistant",
        "content": [thinking(), future, TOOL_USE],
    }


def test_an_unknown_block_the_client_parsed_is_dumped_as_sent_without_warnings(
    store: SessionStore,
) -> None:
    """The SDK's client builds responses with `construct_type`, which turns a block type it
    does not know into a `TextBlock` holding the unknown fields; dumping it must give back
    what the API sent, quietly."""
    future = {"type": "future_block", "payload": {"z": 1}}
    parsed = construct_type(type_=AnthropicMessage, value=response(thinking(), future, TOOL_USE))
    s = session(store)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        appended = s.append_anthropic(parsed)
    assert [native(p) for p in appended.parts] == [
        thinking(),
        future,
        TOOL_USE,
    ]


def test_thinking_without_text_keeps_its_signature(store: SessionStore) -> None:
    """Newer models may omit the thinking text (`display: omitted`): the block is still the
    one to send back."""
    omitted = thinking(text="")
    s = session(store)
    appended = s.append_anthropic(AnthropicMessage.model_validate(response(omitted, TOOL_USE)))
    s.append_tool_result("toolu_01Read", output="ok")
    assert isinstance(appended.parts[0], ReasoningPart) and appended.parts[0].text == ""
    assert s.context().to_anthropic()["messages"][1]["content"] == [omitted, TOOL_USE]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        pytest.param(
            "msg_01", "an Anthropic message must be the SDK's object or its dict", id="not-a-dict"
        ),
        pytest.param(
            response(TOOL_USE) | {"content": "hi"},
            "an Anthropic message: 'content' is missing or not a list",
            id="content-not-a-list",
        ),
        pytest.param(
            {key: value for key, value in response(TOOL_USE).items() if key != "content"},
            "an Anthropic message: 'content' is missing or not a list",
            id="no-content",
        ),
        pytest.param(
            response({"text": "no type"}),
            "an Anthropic message: a content block is not an object with a type",
            id="block-without-type",
        ),
        pytest.param(
            response("just text"),
            "an Anthropic message: a content block is not an object with a type",
            id="block-not-an-object",
        ),
        pytest.param(
            response({**TOOL_USE, "id": ""}),
            "an Anthropic message: a tool_use block needs an id and a name",
            id="tool-use-without-id",
        ),
        pytest.param(
            response({**TOOL_USE, "input": {"x": float("nan")}}),
            "an Anthropic message is not JSON",
            id="not-json",
        ),
        pytest.param(
            response(TOOL_USE) | {"role": "user"},
            "an Anthropic message has role 'user', not 'assistant'",
            id="not-the-assistant",
        ),
    ],
)
def test_a_malformed_message_raises_invalid_argument_and_writes_nothing(
    backend: Backend, store: SessionStore, message: object, reason: str
) -> None:
    s = session(store)
    before = backend.table_rows()
    with pytest.raises(InvalidArgument) as caught:
        s.append_anthropic(message)
    assert str(caught.value).startswith(reason)
    assert backend.table_rows() == before


def test_an_empty_response_is_kept_and_renders_nothing(store: SessionStore) -> None:
    """A response with no content (the API sends one at times after a tool result) is
    recorded, but an empty turn is not something the API accepts back."""
    s = session(store)
    appended = s.append_anthropic(response(stop_reason="end_turn"))
    assert appended.parts[0].model_dump(exclude={"id"}) == {
        "type": "text",
        "text": "",
        "tokens": 0,
    }
    assert [m["role"] for m in s.context().to_anthropic()["messages"]] == ["user"]


def test_the_stored_blocks_survive_the_database(backend: Backend, store: SessionStore) -> None:
    """What a new store reads back renders the same request (JSONB may reorder keys; the
    strings, signature first, are the same bytes)."""
    s = session(store)
    s.append_anthropic(AnthropicMessage.model_validate(response(*every_block())))
    s.append_tool_result("toolu_01Read", output="ok")
    again = SessionStore(backend.url)
    try:
        resumed = again.session(s.id).context().to_anthropic()
    finally:
        again.close()
    assert resumed == s.context().to_anthropic()
    assert json.dumps(resumed, sort_keys=True) == json.dumps(
        s.context().to_anthropic(), sort_keys=True
    )
    assert resumed["messages"][1]["content"][0]["signature"] == SIGNATURE
